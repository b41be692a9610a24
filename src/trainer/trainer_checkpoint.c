/* A training run's checkpoints: what it saves after each epoch, and what
 * `--resume` and `ctower eval` restore. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "core/json.h"
#include "ctower/checkpoint.h"
#include "trainer/run_inputs.h"
#include "trainer/trainer_checkpoint.h"

/* The dataset's class names as a JSON array, or NULL when it has none (or
 * one is not UTF-8). The caller frees it. */
static char *classes_json(const ct_dataset *ds) {
  if (ct_dataset_class_name(ds, 0) == NULL) return NULL;
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (f == NULL) return NULL;
  int ok = 1;
  fputc('[', f);
  for (int k = 0; ok && k < ct_dataset_num_classes(ds); ++k) {
    const char *name = ct_dataset_class_name(ds, k);
    char *literal = NULL;
    size_t need = ct_json_utf8_valid(name, strlen(name)) ? ct_json_escape(name, NULL, 0) + 1 : 0;
    ok = need > 0 && (literal = malloc(need)) != NULL;
    if (ok) {
      ct_json_escape(name, literal, need);
      fprintf(f, "%s%s", k ? "," : "", literal);
    }
    free(literal);
  }
  fputc(']', f);
  fclose(f);
  if (!ok) {
    free(text);
    return NULL;
  }
  return text;
}

/* What a checkpoint records of the data its model learned from. Restored
 * on data where one of these differs, the model would read its labels as
 * other classes (or its images in another shape), and `ctower eval` would
 * report a wrong accuracy and `--resume` train on wrong labels: both
 * refuse such data, naming both values. A fact the checkpoint does not
 * record (it was written before the fact was) or the data does not have
 * (class names outside image folders, fine or coarse outside CIFAR-100) is
 * not compared. In the order they are checked: the first names the cause. */
enum { FACT_DATASET, FACT_IMAGE_SHAPE, FACT_CLASSES, FACT_LABEL, FACT_NUM_CLASSES, N_FACTS };

static const struct data_fact {
  const char *key;            /* its metadata key */
  const char *before, *after; /* around a value, in words: "", " images" */
  const char *fix;            /* what makes the data match; the saved value follows... */
  const char *fix_after;      /* ...and this, unless it is NULL (the fix names no value) */
} k_facts[N_FACTS] = {
    [FACT_DATASET] = {"dataset", "dataset '", "'", "set dataset.name: ", ""},
    [FACT_IMAGE_SHAPE] = {"image_shape", "", " images", "give it images of ",
                          " (dataset.path, dataset.image_shape, dataset.augment.crop)"},
    [FACT_CLASSES] = {"classes", "the classes ", "",
                      "give the class folders of dataset.path the names they had", NULL},
    [FACT_LABEL] = {"label", "", " labels", "set dataset.label: ", ""},
    [FACT_NUM_CLASSES] = {"num_classes", "", " classes", "set dataset.num_classes: ", ""},
};

typedef struct data_facts {
  const char *value[N_FACTS]; /* NULL where the data has none */
  char num_classes[24];
  char *classes; /* owned: the class names as a JSON array, or NULL */
} data_facts;

/* The facts of ds (the run's training set, or eval's test set, which
 * numbers its classes as the training set does) under the options. */
static void data_facts_init(data_facts *f, const ct_trainer_options *o, const ct_dataset *ds,
                            const ct_training_graph *tg) {
  memset(f, 0, sizeof *f);
  f->classes = classes_json(ds);
  snprintf(f->num_classes, sizeof f->num_classes, "%d", ct_dataset_num_classes(ds));
  f->value[FACT_DATASET] = o->dataset.name;
  f->value[FACT_IMAGE_SHAPE] = tg->image_shape;
  f->value[FACT_CLASSES] = f->classes;
  f->value[FACT_NUM_CLASSES] = f->num_classes;
  if (strcmp(o->dataset.name, "cifar100") == 0)
    f->value[FACT_LABEL] = o->dataset.coarse_labels ? "coarse" : "fine";
}

static void data_facts_free(data_facts *f) { free(f->classes); }

/* INVALID_ARGUMENT naming the first fact the checkpoint records that the
 * data does not match, both values (long ones shortened) and what to do.
 * Returns 0 when all agree. */
static int check_data(const ct_checkpoint *ck, const char *path, const data_facts *f,
                      ct_status *status) {
  enum { SHOWN = 300 }; /* characters of a value in the message */
  for (int i = 0; i < N_FACTS; ++i) {
    const struct data_fact *d = &k_facts[i];
    const char *saved = ct_checkpoint_metadata(ck, d->key), *here = f->value[i];
    if (saved == NULL || here == NULL || strcmp(saved, here) == 0) continue;
    const char *cut_saved = strlen(saved) > SHOWN ? "..." : "";
    const char *cut_here = strlen(here) > SHOWN ? "..." : "";
    const int fix_shown = d->fix_after ? SHOWN : 0;
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "checkpoint '%s' was trained on %s%.*s%s%s, not on %s%.*s%s%s as here; "
                  "%s%.*s%s to evaluate or resume it, or train a new checkpoint",
                  path, d->before, SHOWN, saved, cut_saved, d->after, d->before, SHOWN, here,
                  cut_here, d->after, d->fix, fix_shown, saved, d->fix_after ? d->fix_after : "");
    return 1;
  }
  return 0;
}

/* The optimizer whose state the checkpoint holds: its metadata's, or, in a
 * checkpoint written before that was recorded, the one its slots' names
 * tell ("<variable>/Momentum", "<variable>/Adam"; none: sgd). */
static const char *saved_optimizer(const ct_checkpoint *ck) {
  const char *recorded = ct_checkpoint_metadata(ck, "optimizer");
  if (recorded) return recorded;
  for (int i = 0; i < ct_checkpoint_count(ck); ++i) {
    const char *slot = strrchr(ct_checkpoint_name(ck, i), '/');
    if (slot && strcmp(slot, "/Momentum") == 0) return "momentum";
    if (slot && strcmp(slot, "/Adam") == 0) return "adam";
  }
  return "sgd";
}

/* The optimizer state a checkpoint of that optimizer holds, in words. */
static const char *optimizer_state(const char *optimizer) {
  if (strcmp(optimizer, "momentum") == 0) return "momentum slots (an accumulator per variable)";
  if (strcmp(optimizer, "adam") == 0) return "Adam slots (the moments m and v per variable)";
  return "no optimizer slots";
}

/* --resume goes on with the optimizer state the checkpoint holds: another
 * optimizer would start from none, or not find its own. INVALID_ARGUMENT
 * naming both optimizers when the config asks for another; 0 when not. */
static int check_optimizer(const ct_checkpoint *ck, const char *path, const ct_trainer_options *o,
                           ct_status *status) {
  const char *saved = saved_optimizer(ck), *wanted = ct_optimizer_name(o->train.optimizer.kind);
  if (strcmp(saved, wanted) == 0) return 0;
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "checkpoint '%s' was trained with optimizer %s and holds %s, but the config asks "
                "for %s; set train.optimizer.name: %s to resume it, or start afresh without "
                "--resume (or with another train.checkpoint)",
                path, saved, optimizer_state(saved), wanted, saved);
  return 1;
}

/* "replica_<rank>/<name>": where the checkpoint keeps rank `rank`'s own
 * value of variable `name`. */
static void replica_name(int rank, const char *name, char *buf, size_t size) {
  snprintf(buf, size, "replica_%d/%s", rank, name);
}

/* "learner_<k>/<name>": where a checkpoint written inside a block of block
 * momentum keeps learner k's copy of variable `name` (its tower-free name).
 * The learner, a tower of the job counted in rank order, is the unit: any
 * layout of as many learners over processes and towers finds its own. */
static void learner_name(int learner, const char *name, char *buf, size_t size) {
  snprintf(buf, size, "learner_%d/%s", learner, name);
}

/* The learner variable i of rank `rank` belongs to (every rank has the same
 * towers). */
static int learner_of(const ct_training_graph *tg, int rank, int i) {
  return rank * tg->train.towers.n_towers + ct_variable_tower(tg->graph, i);
}

/* Whether each rank saves its own value of graph variable i: the
 * variables whose value is a rank's own (compression's residuals), and
 * every variable while the strategy's replicas differ (`every`: inside a
 * block of block momentum). */
static int saved_per_rank(const ct_training_graph *tg, int every, int i) {
  return every || ct_towers_is_local(&tg->train.towers, i);
}

/* The job's learners: every rank's towers. */
static int learners_here(const ct_training_graph *tg) {
  return ct_cluster_size() * tg->train.towers.n_towers;
}

/* Whether the strategy's replicas differ now. */
static int replicas_differ(const ct_strategy *strategy, const void *state) {
  return strategy && strategy->replicas_differ && strategy->replicas_differ(state);
}

/* Every rank's own variables (saved_per_rank), their bytes one after the
 * other, gathered into *all on rank 0 (NULL elsewhere, and without any).
 * Every rank calls it. Returns 0 or fills status. */
static int gather_own(ct_session *s, const ct_training_graph *tg, int every, char **all,
                      size_t *all_bytes, ct_status *status) {
  *all = NULL, *all_bytes = 0;
  const int n = ct_graph_variable_count(tg->graph);
  size_t bytes = 0;
  for (int i = 0; i < n; ++i)
    if (saved_per_rank(tg, every, i)) {
      const ct_shape shape = ct_graph_variable_shape(tg->graph, i);
      size_t one = 0; /* counted when the variable was made */
      ct_shape_bytes(&shape, CT_F32, &one);
      bytes += one;
    }
  if (bytes == 0) return 0;
  char *mine = malloc(bytes);
  ct_status read = CT_STATUS_INIT;
  if (mine == NULL)
    ct_status_set(&read, CT_RESOURCE_EXHAUSTED, "out of host memory saving a checkpoint");
  size_t at = 0;
  for (int i = 0; mine && i < n; ++i) {
    if (!saved_per_rank(tg, every, i)) continue;
    ct_tensor *value = ct_session_read_variable(s, i, &read);
    if (value == NULL) break;
    memcpy(mine + at, value->data, ct_tensor_nbytes(value));
    at += ct_tensor_nbytes(value);
    ct_tensor_free(value);
  }
  /* every rank takes part in the gathering, whatever failed here */
  ct_cluster_progress(-1, -1, "the checkpoint's per-rank variables");
  const int failed = ct_cluster_gather_to_first(mine, read.code == CT_OK ? bytes : 0, all,
                                                all_bytes, status);
  free(mine);
  if (read.code == CT_OK) return failed;
  free(*all);
  *all = NULL;
  *status = read;
  return 1;
}

/* The tensors a checkpoint is written from: names and values it owns. */
typedef struct saved_list {
  ct_named_tensor *tensors;
  char (*names)[256];
  int n, cap;
} saved_list;

/* Appends a copy of value as `name` (a ct_strategy_add_fn). */
static int saved_add(void *sink, const char *name, const ct_tensor *value, ct_status *status) {
  saved_list *l = sink;
  if (l->n == l->cap) {
    ct_status_set(status, CT_INTERNAL, "more tensors to save than the checkpoint has room for");
    return 1;
  }
  ct_tensor *copy = ct_tensor_clone(value, status);
  if (copy == NULL) return 1;
  snprintf(l->names[l->n], sizeof l->names[0], "%s", name);
  l->tensors[l->n] = (ct_named_tensor){l->names[l->n], copy};
  l->n++;
  return 0;
}

/* Rank r's own variables from the gathered bytes, appended to l: a rank's
 * own (compression's residuals) as replica_<r>/<name>, a learner's copy
 * (inside a block) as learner_<k>/<name>. */
static int add_replicas(const ct_training_graph *tg, int every, const char *all,
                        size_t all_bytes, saved_list *l, ct_status *status) {
  const ct_graph *g = tg->graph;
  size_t at = 0;
  for (int r = 0; at < all_bytes; ++r)
    for (int i = 0; i < ct_graph_variable_count(g); ++i) {
      if (!saved_per_rank(tg, every, i)) continue;
      ct_shape shape = ct_graph_variable_shape(g, i);
      const ct_tensor value = {CT_F32, shape, (void *)(all + at), 0};
      if (at + ct_tensor_nbytes(&value) > all_bytes) return 0;
      at += ct_tensor_nbytes(&value);
      char name[256];
      if (ct_towers_is_local(&tg->train.towers, i))
        replica_name(r, ct_graph_variable_name(g, i), name, sizeof name);
      else
        learner_name(learner_of(tg, r, i), ct_variable_checkpoint_name(g, i), name, sizeof name);
      if (saved_add(l, name, &value, status)) return 1;
    }
  return 0;
}

/* Appends the originals, under their tower-free names; FAILED_PRECONDITION
 * at the first NaN or Inf, which never replaces a good checkpoint. */
static int add_originals(ct_session *s, const ct_training_graph *tg, const ct_trainer_options *o,
                         int64_t step, saved_list *l, ct_status *status) {
  const ct_graph *g = tg->graph;
  for (int i = 0; i < ct_graph_variable_count(g); ++i) {
    if (!ct_variable_is_original(g, i) || ct_towers_is_local(&tg->train.towers, i)) continue;
    ct_tensor *value = ct_session_read_variable(s, i, status);
    if (value == NULL) return 1;
    l->tensors[l->n++] = (ct_named_tensor){ct_variable_checkpoint_name(g, i), value};
    for (int64_t k = 0; value->dtype == CT_F32 && k < ct_tensor_elements(value); ++k) {
      if (isfinite(ct_tensor_f32(value)[k])) continue;
      ct_status_set(status, CT_FAILED_PRECONDITION,
                    "after step %lld variable '%s' holds %s, so checkpoint '%s' was not written "
                    "(the one there stays); lower train.optimizer.learning_rate (now %g), or "
                    "set train.check_numerics: true to name the op that made it",
                    (long long)step, ct_variable_checkpoint_name(g, i),
                    isnan(ct_tensor_f32(value)[k]) ? "NaN" : "Inf", o->train.checkpoint,
                    o->train.schedule.base_rate);
      return 1;
    }
  }
  return 0;
}

/* The checkpoint's metadata and its writing, from the tensors of l. */
static int write_checkpoint(const ct_training_graph *tg, const ct_trainer_options *o,
                            const ct_dataset *train_set, const ct_train_position *at,
                            double test_accuracy, int every, const saved_list *l,
                            ct_status *status) {
  char step_text[32], epoch_text[32], example_text[32], accuracy_text[32], learners_text[32],
      layout_text[64];
  snprintf(step_text, sizeof step_text, "%lld", (long long)at->step);
  snprintf(epoch_text, sizeof epoch_text, "%lld", (long long)at->epoch);
  snprintf(example_text, sizeof example_text, "%lld", (long long)at->example);
  snprintf(accuracy_text, sizeof accuracy_text, "%.4f", test_accuracy);
  const char *metadata[2 * (10 + N_FACTS)] = {
      "format",        "ctower",     "ctower_version", CTOWER_VERSION,
      "model",         o->model,     "optimizer",      ct_optimizer_name(o->train.optimizer.kind),
      "global_step",   step_text,    "epoch",          epoch_text,
      "epoch_example", example_text, "test_accuracy",  accuracy_text};
  int pairs = 8;
  if (every) { /* inside a block: each learner's copy is saved (learner_name) */
    const int towers = tg->train.towers.n_towers;
    snprintf(learners_text, sizeof learners_text, "%d", learners_here(tg));
    snprintf(layout_text, sizeof layout_text, "%d process%s x %d tower%s", ct_cluster_size(),
             ct_cluster_size() == 1 ? "" : "es", towers, towers == 1 ? "" : "s");
    metadata[2 * pairs] = "learners";
    metadata[2 * pairs + 1] = learners_text;
    metadata[2 * pairs + 2] = "learner_layout";
    metadata[2 * pairs + 3] = layout_text;
    pairs += 2;
  }
  data_facts facts;
  data_facts_init(&facts, o, train_set, tg);
  for (int i = 0; i < N_FACTS; ++i) {
    if (facts.value[i] == NULL) continue;
    metadata[2 * pairs] = k_facts[i].key;
    metadata[2 * pairs + 1] = facts.value[i];
    ++pairs;
  }
  const int failed =
      ct_checkpoint_write(o->train.checkpoint, l->tensors, l->n, metadata, pairs, status);
  data_facts_free(&facts);
  return failed;
}

int ct_trainer_save_checkpoint(ct_session *s, const ct_training_graph *tg,
                               const ct_trainer_options *o, const ct_dataset *train_set,
                               const ct_train_position *at, double test_accuracy,
                               const ct_strategy *strategy, void *strategy_state,
                               ct_status *status) {
  /* Every rank holds the same variables but its own (saved_per_rank), and
   * has finished the step (the evaluation before this summed over them):
   * rank 0 writes for the job, every rank's own gathered there. */
  const int every = replicas_differ(strategy, strategy_state);
  char *own = NULL;
  size_t own_bytes = 0;
  if (gather_own(s, tg, every, &own, &own_bytes, status)) return 1;
  if (ct_cluster_rank() != 0) return 0;
  /* Replicas hold the same values as their originals: only originals are
   * saved, under their tower-free names, so any tower count restores them;
   * then what each rank holds of its own, and the strategy's state (at
   * most two tensors a variable). */
  const int variables = ct_graph_variable_count(tg->graph);
  saved_list l = {NULL, NULL, 0, (ct_cluster_size() + 3) * variables + 1};
  l.tensors = calloc((size_t)l.cap, sizeof *l.tensors);
  l.names = calloc((size_t)l.cap, sizeof *l.names);
  int failed = l.tensors == NULL || l.names == NULL;
  if (failed)
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory saving a checkpoint");
  failed = failed || add_originals(s, tg, o, at->step, &l, status) ||
           (own && add_replicas(tg, every, own, own_bytes, &l, status)) ||
           (strategy && strategy->save && strategy->save(strategy_state, saved_add, &l, status)) ||
           write_checkpoint(tg, o, train_set, at, test_accuracy, every, &l, status);
  free(own);
  for (int i = 0; i < l.n; ++i) ct_tensor_free((ct_tensor *)l.tensors[i].tensor);
  free(l.tensors);
  free(l.names);
  return failed;
}
/* Counts in a checkpoint's metadata stay below this: far past any real run,
 * and far from overflowing when a step or epoch is added to them. */
#define MAX_METADATA_COUNT 1000000000000000LL

/* The count the checkpoint's metadata holds under `key`: decimal digits
 * only, at most MAX_METADATA_COUNT. Returns 0, or 1 and DATA_LOSS naming
 * the field when it is missing or anything else ("-1", "0x32", "1e3"). */
static int metadata_count(const ct_checkpoint *ck, const char *path, const char *key,
                          int64_t *count, ct_status *status) {
  const char *text = ct_checkpoint_metadata(ck, key);
  int64_t value = 0;
  int digits = 0;
  for (const char *c = text; c && *c >= '0' && *c <= '9' && value <= MAX_METADATA_COUNT; ++c)
    value = value * 10 + (*c - '0'), ++digits;
  if (text == NULL || digits == 0 || text[digits] != '\0' || value > MAX_METADATA_COUNT) {
    ct_status_set(status, CT_DATA_LOSS,
                  "checkpoint '%s' cannot be resumed: its metadata %s %s%.40s%s, not a count "
                  "from 0 to %lld; train it again without --resume, or resume a checkpoint "
                  "`ctower train` wrote",
                  path, key, text ? "is '" : "is missing", text ? text : "", text ? "'" : "",
                  MAX_METADATA_COUNT);
    return 1;
  }
  *count = value;
  return 0;
}

/* The model the checkpoint records is the config's: INVALID_ARGUMENT naming
 * both when not; 0 when it is (or the checkpoint records none). */
static int check_model(const ct_checkpoint *ck, const char *path, const char *model,
                       ct_status *status) {
  const char *saved = ct_checkpoint_metadata(ck, "model");
  if (saved == NULL || strcmp(saved, model) == 0) return 0;
  ct_status_set(status, CT_INVALID_ARGUMENT,
                "checkpoint '%s' holds model '%s' but the config asks for '%s'; set "
                "model.name: %s or pass the matching checkpoint",
                path, saved, model, saved);
  return 1;
}

/* A tensor of the checkpoint by name (a ct_strategy_find_fn). */
static const ct_tensor *find_saved(void *source, const char *name) {
  return ct_checkpoint_find(source, name);
}

/* The index of t's first NaN or Inf element, or -1 when every one is finite. */
static int64_t first_non_finite(const ct_tensor *t) {
  const float *x = ct_tensor_f32(t);
  for (int64_t k = 0; k < ct_tensor_elements(t); ++k)
    if (!isfinite(x[k])) return k;
  return -1;
}

/* FAILED_PRECONDITION when a saved value is not finite: ctower never writes
 * one (a diverged run keeps its last good checkpoint), so the file was
 * damaged or written by something else, and nothing trained from it or
 * evaluated with it would mean anything. */
static int check_finite(const ct_tensor *saved, const char *path, const char *name,
                        ct_status *status) {
  const int64_t k = first_non_finite(saved);
  if (k < 0) return 0;
  ct_status_set(status, CT_FAILED_PRECONDITION,
                "checkpoint '%s' holds %s in variable '%s' (element %lld of %lld): the file is "
                "damaged or was not written by a finite run (ctower never saves a NaN or Inf); "
                "use an earlier checkpoint (or, to train, start afresh without --resume)",
                path, isnan(ct_tensor_f32(saved)[k]) ? "NaN" : "Inf", name, (long long)k,
                (long long)ct_tensor_elements(saved));
  return 1;
}

/* Where the checkpoint holds variable i's value for this rank (its name
 * written into name[size]): a rank's own (compression's residuals) under
 * replica_<rank>/; when the run keeps each learner's copy (`copies`: block
 * momentum resumed), this rank's learner's, under learner_<k>/ (or
 * replica_<rank>/, where checkpoints of earlier versions kept it); else the
 * original's, so that replicas start equal. NULL when it holds none there. */
static const ct_tensor *saved_value(const ct_training_graph *tg, const ct_checkpoint *ck, int i,
                                    int copies, char *name, size_t size) {
  const ct_graph *g = tg->graph;
  const int rank = ct_cluster_rank();
  const ct_tensor *t;
  if (ct_towers_is_local(&tg->train.towers, i)) {
    replica_name(rank, ct_graph_variable_name(g, i), name, size);
    return ct_checkpoint_find(ck, name);
  }
  if (copies) {
    learner_name(learner_of(tg, rank, i), ct_variable_checkpoint_name(g, i), name, size);
    if ((t = ct_checkpoint_find(ck, name)) != NULL) return t;
    replica_name(rank, ct_graph_variable_name(g, i), name, size);
    if ((t = ct_checkpoint_find(ck, name)) != NULL) return t;
  }
  snprintf(name, size, "%s", ct_variable_checkpoint_name(g, i));
  return ct_checkpoint_find(ck, name);
}

/* A checkpoint written inside a block of block momentum holds each
 * learner's copy ("learners" in its metadata): it resumes only with a
 * strategy that keeps such copies (`copies`) and as many learners in all,
 * laid out over processes and towers as they may be. INVALID_ARGUMENT
 * naming both layouts otherwise. */
static int check_learners(const ct_checkpoint *ck, const char *path, const ct_training_graph *tg,
                          int copies, ct_status *status) {
  if (ct_checkpoint_metadata(ck, "learners") == NULL) return 0;
  int64_t saved;
  if (metadata_count(ck, path, "learners", &saved, status)) return 1;
  const char *layout = ct_checkpoint_metadata(ck, "learner_layout");
  const int here = learners_here(tg), towers = tg->train.towers.n_towers;
  if (copies && saved == here) return 0;
  if (!copies)
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "checkpoint '%s' was written inside a block of block momentum, where its %lld "
                  "learners' copies (%s) differ, but this run keeps one value of each "
                  "variable; resume it with devices.variable_update: block_momentum, or resume "
                  "a checkpoint written at the end of an epoch (a block ends with each)",
                  path, (long long)saved, layout ? layout : "?");
  else
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "checkpoint '%s' was written inside a block of block momentum by %lld "
                  "learners (%s), but this run has %d (%d process%s x %d tower%s); resume it "
                  "with %lld towers in all, or resume a checkpoint written at the end of an "
                  "epoch (a block ends with each)",
                  path, (long long)saved, layout ? layout : "?", here, ct_cluster_size(),
                  ct_cluster_size() == 1 ? "" : "es", towers, towers == 1 ? "" : "s",
                  (long long)saved);
  return 1;
}

/* Every variable of the graph from the checkpoint (saved_value); one of
 * the variables a rank holds its own of (compression's residuals) that the
 * checkpoint lacks starts afresh, counted in the value returned. */
static int restore_variables(ct_session *s, const ct_training_graph *tg, const ct_checkpoint *ck,
                             const char *path, int copies, ct_status *status) {
  const ct_graph *g = tg->graph;
  int missing = 0;
  for (int i = 0; i < ct_graph_variable_count(g); ++i) {
    char name[256];
    const ct_tensor *saved = saved_value(tg, ck, i, copies, name, sizeof name);
    if (saved == NULL && ct_towers_is_local(&tg->train.towers, i)) { /* none: starts afresh */
      missing++;
      continue;
    }
    ct_shape shape = ct_graph_variable_shape(g, i);
    if (saved == NULL || saved->dtype != CT_F32 || !ct_shape_equal(&saved->shape, &shape)) {
      char want[96];
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "checkpoint '%s' has no f32 variable '%s' of shape %s; was it written for "
                    "another model?",
                    path, name, ct_shape_str(&shape, want, sizeof want));
      return missing;
    }
    if (check_finite(saved, path, name, status) ||
        ct_session_assign_variable(s, i, saved, status))
      return missing;
  }
  return missing;
}

int ct_trainer_restore_checkpoint(ct_session *s, const ct_training_graph *tg,
                                  const ct_trainer_options *o, const ct_dataset *data,
                                  const char *path, ct_train_position *at,
                                  const ct_strategy *strategy, void *strategy_state,
                                  ct_status *status) {
  ct_checkpoint *ck = ct_checkpoint_read(path, status);
  if (ck == NULL) return 1;
  data_facts facts;
  data_facts_init(&facts, o, data, tg);
  const int refused = check_model(ck, path, o->model, status) ||
                      check_data(ck, path, &facts, status) ||
                      (at && check_optimizer(ck, path, o, status));
  data_facts_free(&facts);
  if (refused) {
    ct_checkpoint_free(ck);
    return 1;
  }
  /* resumed by a strategy whose learners keep copies of their own */
  const int copies = at && strategy && strategy->replicas_differ;
  if (at && (metadata_count(ck, path, "global_step", &at->step, status) ||
             metadata_count(ck, path, "epoch", &at->epoch, status) ||
             metadata_count(ck, path, "epoch_example", &at->example, status) ||
             check_learners(ck, path, tg, copies, status))) {
    ct_checkpoint_free(ck);
    return 1;
  }
  int locals_missing = restore_variables(s, tg, ck, path, copies, status);
  if (status->code == CT_OK && at && strategy && strategy->restore)
    strategy->restore(strategy_state, find_saved, ck,
                      o->dataset.batch_size > 0 ? at->example / o->dataset.batch_size : 0, status);
  ct_checkpoint_free(ck);
  if (locals_missing && status->code == CT_OK)
    fprintf(stderr,
            "%sctower: note: checkpoint '%s' holds no residuals of devices.compression for rank "
            "%d (it was written without compression, or by fewer ranks); they start at zero\n",
            ct_cluster_log_prefix(), path, ct_cluster_rank());
  return status->code != CT_OK;
}
