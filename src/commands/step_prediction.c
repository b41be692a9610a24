/* `ctower plan`: what a training step of a config will do, before any
 * step runs: placement with reasons, memory per device, FLOPs and bytes,
 * and the cost model's step time and scaling. The session, graph and plan
 * are built; no kernel runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/communication.h"
#include "commands/model_summary.h"
#include "commands/calibrate.h"
#include "observe/cost_model.h"
#include "trainer/report.h"
#include "trainer/train_run.h"

static const char *short_device(const char *name) {
  const char *d = strstr(name, "device:");
  return d ? d + 7 : name;
}

static const char *mib(double bytes, char *buf, size_t size) {
  snprintf(buf, size, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

static const char *amount(double value, const char *unit, char *buf, size_t size) {
  static const char *const prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (value >= 1000 && p < 5) value /= 1000, ++p;
  snprintf(buf, size, "%.*f %s%s", p ? 2 : 0, value, prefixes[p], unit);
  return buf;
}

/* Section 1: per device, its ops by reason and by type; with verbose,
 * every node. */
static int print_placement(ct_session *s, const ct_graph *g, int verbose, ct_status *status) {
  const int n_nodes = ct_graph_node_count(g), n_devices = ct_session_device_count(s);
  int *device = malloc(((size_t)n_nodes + 1) * sizeof *device);
  ct_placement_reason *reason = malloc(((size_t)n_nodes + 1) * sizeof *reason);
  int failed = device == NULL || reason == NULL;
  if (failed) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory");
  for (int i = 0; i < n_nodes && !failed; ++i)
    failed = ct_session_node_placement(s, ct_graph_node(g, i), &device[i], &reason[i], status);
  printf(
      "placement (why: explicit device scope, colocated with its variable, default "
      "priority, soft placement):\n");
  for (int d = 0; d < n_devices && !failed; ++d) {
    int by_reason[4] = {0}, count = 0, n_types = 0, type_count[96] = {0};
    const char *types[96];
    for (int i = 0; i < n_nodes; ++i) {
      if (device[i] != d) continue;
      ++count, ++by_reason[reason[i]];
      const char *op = ct_node_op(ct_graph_node(g, i));
      int t = 0;
      while (t < n_types && strcmp(types[t], op) != 0) ++t;
      if (t == n_types && n_types < 96) types[n_types++] = op;
      if (t < 96) ++type_count[t];
    }
    if (count == 0) continue;
    printf("  %s: %d ops: explicit %d, colocated %d, default %d, soft %d\n",
           ct_session_device_name(s, d), count, by_reason[CT_PLACED_EXPLICIT],
           by_reason[CT_PLACED_COLOCATED], by_reason[CT_PLACED_DEFAULT], by_reason[CT_PLACED_SOFT]);
    printf("    ");
    for (int t = 0; t < n_types; ++t) printf("%s%s %d", t ? ", " : "", types[t], type_count[t]);
    printf("\n");
    for (int i = 0; i < n_nodes && verbose; ++i)
      if (device[i] == d)
        printf("    %s (%s): %s\n", ct_node_name(ct_graph_node(g, i)),
               ct_node_op(ct_graph_node(g, i)), ct_placement_reason_name(reason[i]));
  }
  free(device);
  free(reason);
  return failed;
}

/* Section 2 and 3: memory. Returns the first device whose predicted peak
 * passes its limit, or -1. */
/* The host's physical memory in bytes, 0 when unknown. */
static double host_memory_bytes(void) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

/* Prints each device's predicted memory against its limit; the CPU devices
 * without a limit share the host's memory, against which their peaks are
 * summed. Returns 0, or 1 with the reason a step will not fit in status. */
static int print_memory(ct_session *s, const ct_run_estimate *e, int64_t batch,
                        ct_status *status) {
  static const char *const what_to_do =
      "lower dataset.batch_size (now %lld), spread the batch over more towers "
      "(devices.n_towers), or raise the limit (session.memory_limit_mb or "
      "session.cpu_virtual_devices / gpu_options)";
  char a[32], b[32], c[32], d[32];
  double unlimited_cpu_peak = 0;
  printf(
      "memory per device (one training step; parameters, optimizer state, predicted "
      "peak):\n");
  for (int i = 0; i < e->n_devices; ++i) {
    const ct_device_estimate *x = &e->devices[i];
    if (x->peak_bytes == 0 && x->steps == 0) continue;
    ct_device_info info;
    ct_session_device_info(s, i, &info);
    const int too_big = info.memory_limit > 0 && x->peak_bytes > info.memory_limit;
    if (info.memory_limit == 0 && strcmp(info.kind, "CPU") == 0)
      unlimited_cpu_peak += (double)x->peak_bytes;
    if (too_big && status->code == CT_OK) {
      char todo[256];
      snprintf(todo, sizeof todo, what_to_do, (long long)batch);
      ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                    "a training step will not fit on %s: predicted peak %.1f MiB, memory limit "
                    "%.1f MiB; %s",
                    info.name, (double)x->peak_bytes / 1048576.0,
                    (double)info.memory_limit / 1048576.0, todo);
    }
    printf("  %-8s parameters %s, optimizer %s, peak %s, limit %s%s\n", short_device(info.name),
           mib((double)x->parameter_bytes, a, sizeof a),
           mib((double)x->optimizer_bytes, b, sizeof b), mib((double)x->peak_bytes, c, sizeof c),
           info.memory_limit ? mib((double)info.memory_limit, d, sizeof d) : "none",
           too_big ? "  DOES NOT FIT" : "");
  }
  const double host = host_memory_bytes();
  if (host > 0 && unlimited_cpu_peak > host) {
    printf("  CPU devices without a limit: peak %s together, this machine's memory %s  DOES NOT "
           "FIT\n",
           mib(unlimited_cpu_peak, a, sizeof a), mib(host, b, sizeof b));
    if (status->code == CT_OK) {
      char todo[256];
      snprintf(todo, sizeof todo, what_to_do, (long long)batch);
      ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                    "a training step will not fit in this machine's memory: the CPU devices' "
                    "predicted peaks are %.1f MiB together, the machine has %.1f MiB; %s",
                    unlimited_cpu_peak / 1048576.0, host / 1048576.0, todo);
    }
  }
  return status->code != CT_OK;
}

/* Section 4: FLOPs and bytes. */
static void print_work(ct_session *s, const ct_run_estimate *e, double in_process_bytes) {
  char a[32], b[32], c[32];
  printf("work per step:\n");
  for (int i = 0; i < e->n_devices; ++i) {
    const ct_device_estimate *x = &e->devices[i];
    if (x->steps == 0) continue;
    printf("  %-8s %s (conv/matmul %s), %d kernels, copied in %s\n",
           short_device(ct_session_device_name(s, i)), amount(x->flops, "FLOP", a, sizeof a),
           amount(x->dense_flops, "FLOP", b, sizeof b), x->steps,
           amount(x->copied_in_bytes, "B", c, sizeof c));
  }
  printf("  copied between devices %s, all-reduced in process %s, across ranks %s\n",
         amount(e->copied_bytes, "B", a, sizeof a), amount(in_process_bytes, "B", b, sizeof b),
         amount(e->collective_bytes, "B", c, sizeof c));
}

/* The bytes of one tower's variables: the original ones, trainable only
 * (its gradients) or all of them (slots and moving averages too), but for
 * a rank's own (compression's residuals). */
static double variable_bytes(const ct_train_run *r, int trainable_only) {
  const ct_graph *g = r->tg.graph;
  double bytes = 0;
  for (int v = 0; v < ct_graph_variable_count(g); ++v)
    if ((!trainable_only || ct_graph_variable_trainable(g, v)) && ct_variable_is_original(g, v) &&
        !ct_towers_is_local(&r->tg.train.towers, v)) {
      ct_shape shape = ct_graph_variable_shape(g, v);
      bytes += (double)ct_shape_elements(&shape) * sizeof(float);
    }
  return bytes;
}

/* What each rank all-reduces across the ranks, in bytes, and how many
 * such all-reduces a step makes on average (*per_step): the gradients,
 * packed as devices.compression packs them, every step; with block
 * momentum every variable, once every block_steps steps. *what: the
 * exchange in words. */
static double exchanged_bytes(const ct_train_run *r, double *per_step, char *what, size_t size) {
  const ct_tower_options *t = &r->towers;
  const double gradients = variable_bytes(r, 1);
  if (t->variable_update == CT_VARIABLE_UPDATE_BLOCK_MOMENTUM) {
    *per_step = 1.0 / (double)t->block_steps;
    const double model = variable_bytes(r, 0);
    snprintf(what, size, "the model's %.1f MiB averaged every %lld steps", model / 1048576.0,
             (long long)t->block_steps);
    return model;
  }
  *per_step = 1;
  const double packed =
      (double)ct_compressed_bytes(t->compression, (int64_t)(gradients / sizeof(float)));
  if (t->compression == CT_COMPRESSION_NONE)
    snprintf(what, size, "ring all-reduce of %.1f MiB", gradients / 1048576.0);
  else
    snprintf(what, size, "ring all-reduce of %.2f MiB, the %.1f MiB of gradients as %s",
             packed / 1048576.0, gradients / 1048576.0, ct_compression_name(t->compression));
  return packed;
}

/* The same config as one tower on its first tower's device: with
 * whole_cpu, a CPU device then takes every core the CPU devices share
 * (what one tower would run on instead of the towers); else that device as
 * configured (one of the towers, alone). The step time, or 0 when it cannot
 * be planned. */
static double one_tower_seconds(const ct_trainer_options *o, const ct_tower_options *towers,
                                const ct_calibration *c, int whole_cpu) {
  ct_trainer_options single = *o;
  ct_tower_options one = *towers;
  one.n_towers = 1;
  one.across_ranks = 0;
  if (whole_cpu && (strstr(towers->devices[0], "cpu") || strstr(towers->devices[0], "CPU"))) {
    single.session.device_count_cpu = 1;
    memset(single.session.cpu_device_threads, 0, sizeof single.session.cpu_device_threads);
  }
  single.session.log_device_placement = 0;
  ct_status status = CT_STATUS_INIT;
  ct_train_run r;
  ct_run_estimate e;
  double seconds = 0;
  if (ct_train_run_setup_graph(&r, &single, &one, &status) == 0 &&
      ct_train_run_estimate(&r, &e, &status) == 0)
    seconds = ct_cost_step_seconds(c, r.session, &e, 1, &c->mpi, NULL, NULL);
  ct_run_estimate_free(&e);
  ct_train_run_free(&r);
  return seconds;
}

/* The towers' step against one tower's: the speed-up, and the efficiency
 * (the speed-up per tower). */
static void print_speed_up(const char *against, double one, double step, int towers) {
  if (one > 0)
    printf("  against one tower %s: %.2f ms, speed-up %.2f, efficiency %.0f%%\n", against,
           one * 1e3, one / step, 100.0 * one / step / towers);
}

/* Section 5: step time, speed-up over one tower, and ranks until the
 * efficiency falls under 90% on each link. */
static void print_speed(const ct_trainer_options *o, const ct_train_run *r,
                        const ct_run_estimate *e, const ct_calibration *c,
                        const ct_plan_flags *flags) {
  const int ranks = ct_cluster_size(), towers = r->split.global_towers;
  double device_s[CT_MAX_DEVICES], reduce_s = 0;
  const double step = ct_cost_step_seconds(c, r->session, e, ranks, &c->mpi, device_s, &reduce_s);
  printf("predicted step: %.2f ms, %.0f images/s (slowest device", step * 1e3,
         (double)o->dataset.batch_size / step);
  for (int d = 0; d < e->n_devices; ++d)
    if (e->devices[d].steps)
      printf(" %s %.2f ms", short_device(ct_session_device_name(r->session, d)), device_s[d] * 1e3);
  printf("; all-reduce %.2f ms)\n", reduce_s * 1e3);
  if (towers > 1 && ranks == 1) { /* across ranks: the ranks' lines below */
    char device[sizeof r->towers.devices[0] + 32];
    snprintf(device, sizeof device, "on %s alone, as configured", r->towers.devices[0]);
    printf("%d towers, the same batch (speed-up: one tower's step time over the towers'):\n",
           towers);
    print_speed_up(device, one_tower_seconds(o, &r->towers, c, 0), step, towers);
    if (strstr(r->towers.devices[0], "cpu") || strstr(r->towers.devices[0], "CPU"))
      print_speed_up("on one CPU device of all the CPU devices' cores",
                     one_tower_seconds(o, &r->towers, c, 1), step, towers);
  }
  const double compute = step - ct_cost_ring_seconds(e->collective_bytes, ranks, &c->mpi);
  double per_step;
  char what[160];
  const double bytes = exchanged_bytes(r, &per_step, what, sizeof what);
  if (ranks > 1) {
    /* the graph's sums across the ranks are in the step; block momentum's are not */
    const double sync = per_step < 1 ? ct_cost_ring_seconds(bytes, ranks, &c->mpi) * per_step
                                     : step - compute;
    printf("%d ranks: efficiency %.0f%% (each rank's compute %.2f ms, across the ranks %.2f ms a "
           "step: %s)\n",
           ranks, 100 * compute / (compute + sync), compute * 1e3, sync * 1e3, what);
  }
  printf("ranks until efficiency < 90%% (each rank as this one, its batch kept; %s, no "
         "overlap):\n",
         what);
  for (int i = 0; i < flags->n_links; ++i) {
    const ct_link link = {c->mpi.latency_s, flags->link_gbps[i] * 1e9 / 8};
    int n = 2;
    double eff = 1;
    for (; n <= 65536; ++n)
      if ((eff = compute / (compute + ct_cost_ring_seconds(bytes, n, &link) * per_step)) < 0.9)
        break;
    if (n > 65536)
      printf("  %g Gb/s link: above 90%% up to 65536 ranks\n", flags->link_gbps[i]);
    else
      printf("  %g Gb/s link: %d ranks (at %d: %.2f%%)\n", flags->link_gbps[i], n - 1, n,
             100 * eff);
  }
}

static void print_calibration(const ct_calibration *c, const char *path, int measured_now) {
  if (measured_now)
    printf("cost model: this machine, measured now and saved to %s for later plans ('ctower "
           "bench --calibrate' measures again)\n",
           path);
  else if (c->measured)
    printf("cost model: calibration %s (measured on %s)\n", path, c->cpu);
  else
    printf(
        "cost model: no calibration at %s; conservative defaults (run 'ctower bench "
        "--calibrate' to measure this machine)\n",
        path);
}

/* The cost model: the calibration file; where the default one is missing
 * on any rank, this machine measured now (every rank together) and saved
 * there for later plans. A file named with --calibration that is missing
 * leaves the conservative defaults. Sets *measured_now. Returns 0 or fills
 * status. */
static int load_cost_model(const ct_trainer_options *o, const ct_plan_flags *flags,
                           const char *path, ct_calibration *c, int *measured_now,
                           ct_status *status) {
  *measured_now = 0;
  ct_calibration_defaults(c);
  int missing = 0;
  if (ct_calibration_load(path, c, status)) {
    if (status->code != CT_NOT_FOUND) return 1;
    ct_status_clear(status);
    ct_calibration_defaults(c);
    missing = flags->calibration == NULL;
  }
  double any_missing = missing;
  if (ct_cluster_size() > 1 && ct_cluster_allreduce_f64(&any_missing, 1, status)) return 1;
  if (any_missing == 0) return 0;
  if (ct_calibration_measure(&o->session, c, NULL, status)) return 1;
  *measured_now = 1;
  ct_status not_saved = CT_STATUS_INIT;
  if (missing && ct_calibration_save(path, c, &not_saved))
    fprintf(stderr, "note: the plan's measurement of this machine could not be saved: %s\n",
            not_saved.message);
  return 0;
}

int ct_plan_main(const ct_trainer_options *o, const ct_tower_options *towers,
                 const ct_plan_flags *flags, ct_status *status) {
  char default_path[1024];
  const char *path = flags->calibration
                         ? flags->calibration
                         : ct_calibration_default_path(default_path, sizeof default_path);
  ct_calibration c;
  int measured_now;
  if (load_cost_model(o, flags, path, &c, &measured_now, status)) return 1;
  ct_train_run r;
  ct_run_estimate e;
  memset(&e, 0, sizeof e);
  int failed =
      ct_train_run_setup_graph(&r, o, towers, status) || ct_train_run_estimate(&r, &e, status);
  if (!failed) {
    char summary[128];
    printf("plan: %s, batch %lld, %s", o->model, (long long)o->dataset.batch_size,
           ct_trainer_tower_summary(&r.towers, summary, sizeof summary));
    if (ct_cluster_size() > 1)
      printf(", %d ranks (%d towers in all)", ct_cluster_size(), r.split.global_towers);
    printf("\n");
    print_calibration(&c, path, measured_now);
    failed = ct_print_model_summary(r.session, r.tg.graph, o->model, status) ||
             print_placement(r.session, r.tg.graph, flags->verbose, status);
  }
  if (!failed) {
    /* what does not fit is said after the rest of the plan */
    ct_status fit = CT_STATUS_INIT;
    print_memory(r.session, &e, o->dataset.batch_size, &fit);
    const double in_process = r.towers.n_towers > 1 ? variable_bytes(&r, 1) : 0;
    print_work(r.session, &e, in_process);
    print_speed(o, &r, &e, &c, flags);
    if (fit.code != CT_OK) {
      *status = fit;
      failed = 1;
    }
  }
  ct_run_estimate_free(&e);
  ct_train_run_free(&r);
  return failed;
}
