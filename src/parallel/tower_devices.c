/* What a user asks for (ct_tower_request) on the devices a session has:
 * which devices this rank's towers run on, where the parameter server
 * keeps the variables, the strategy and the all-reduce. Names are parsed
 * into device specs before anything is compared, so /cpu:0 and
 * /device:CPU:0 are one device; a name with a task is that task's device
 * (the rank ct_cluster_rank_of gives), written here as the local name. */
#include <stdio.h>
#include <string.h>

#include "cluster/communication.h"
#include "ctower/device_name.h"
#include "parallel/parallel_internal.h"

void ct_tower_request_defaults(ct_tower_request *r) {
  memset(r, 0, sizeof *r);
  r->n_listed = 1;
  snprintf(r->listed[0], sizeof r->listed[0], "/cpu:0");
  r->variable_update = CT_VARIABLE_UPDATE_REPLICATED;
  snprintf(r->ps_device, sizeof r->ps_device, "/cpu:0");
  r->all_reduce = CT_ALL_REDUCE_REQUEST_AUTO;
  r->max_staleness = -1;
  r->block_steps = 8;
  r->block_momentum = -1.0f;
}

void ct_tower_device_local_name(const ct_device_spec *spec, char *out, size_t size) {
  ct_device_spec local = *spec;
  local.has_job = local.has_replica = local.has_task = 0;
  local.job[0] = '\0';
  local.replica = local.task = 0;
  if (local.kind != CT_DEVICE_KIND_ANY && local.has_id)
    snprintf(out, size, "/%s:%d", local.kind == CT_DEVICE_KIND_GPU ? "gpu" : "cpu", local.id);
  else
    ct_device_spec_string(&local, out, size);
}

/* The rank a spec's job and task name (a task without a job is a
 * worker's), or -1 for a task the job does not have; -2 for a spec
 * without a task, which is every rank's. */
static int rank_named(const ct_device_spec *spec) {
  if (!spec->has_task) return -2;
  /* TensorFlow's name of a process on its own: this one */
  if (spec->has_job && strcmp(spec->job, "localhost") == 0 && ct_cluster_size() == 1)
    return spec->task == 0 ? ct_cluster_rank() : -1;
  const char *job = spec->has_job ? spec->job : "worker";
  return ct_cluster_rank_of(job, spec->task);
}

/* A device name of the request on this rank: `text` parsed into *spec,
 * its local name into out (size bytes); *mine (when not NULL) says whether
 * the name is this rank's (a name without a task is every worker's). A
 * task the job does not have is an error naming `key` (TensorFlow's
 * words), or with soft placement a warning, and then *mine is 0. Returns 0
 * or fills status. */
static int local_name(const char *key, const char *text, int soft, ct_device_spec *spec,
                      char *out, size_t size, int *mine, ct_status *status) {
  if (ct_device_spec_parse(text, spec, status)) return 1;
  const int rank = rank_named(spec);
  if (mine) *mine = rank == -2 ? !ct_cluster_is_ps() : rank == ct_cluster_rank();
  if (spec->has_task && rank < 0 && ct_cluster_size() > 1) {
    const char *job = spec->has_job ? spec->job : "worker";
    const int tasks = ct_cluster_job_tasks(job);
    char known[96] = "no task";
    if (tasks > 0) snprintf(known, sizeof known, "tasks 0 to %d", tasks - 1);
    if (!soft) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "%s: cannot assign a device to '%s': /job:%s/task:%d does not exist (job %s "
                    "has %s in this cluster of %d ranks); name an existing task, or set "
                    "session.allow_soft_placement: true to leave it out",
                    key, text, job, spec->task, job, known, ct_cluster_size());
      return 1;
    }
    fprintf(stderr, "%sctower: warning: %s: /job:%s/task:%d does not exist (job %s has %s); "
            "'%s' is left out\n", ct_cluster_log_prefix(), key, job, spec->task, job, known, text);
  }
  ct_tower_device_local_name(spec, out, size);
  return 0;
}

/* The listed towers: the entries that name this rank's task, and those
 * that name no task, which every worker has. */
static int listed_towers(const ct_tower_request *r, int soft, ct_tower_options *t,
                         ct_status *status) {
  t->n_towers = 0;
  for (int k = 0; k < r->n_listed && k < CT_MAX_DEVICES; ++k) {
    int mine;
    ct_device_spec spec;
    if (local_name("devices.towers", r->listed[k], soft, &spec, t->devices[t->n_towers],
                   sizeof t->devices[0], &mine, status))
      return 1;
    t->n_towers += mine;
  }
  if (t->n_towers == 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.towers lists no device of /job:worker/task:%d (this rank); give "
                  "every worker a tower, e.g. /job:worker/task:%d/cpu:0",
                  ct_cluster_task(), ct_cluster_task());
    return 1;
  }
  return 0;
}

/* Puts towers [first, first + count) on /KIND:0, /KIND:1, ... */
static void towers_on(ct_tower_options *t, int first, int count, const char *kind) {
  for (int k = 0; k < count; ++k)
    snprintf(t->devices[first + k], sizeof t->devices[first + k], "/%s:%d", kind, k);
}

/* The tower devices: n_gpus (cxflow's key: /gpu:0 ..), else n_towers (the
 * first N devices of the preferred type: GPUs when the session has any,
 * else CPU devices; -1: all of them), else the list. Towers that want a
 * GPU the session lacks go to CPU devices with a warning under soft
 * placement (the session's own fallback does the same for single ops),
 * else it is an error. */
static int tower_devices(const ct_tower_request *r, const ct_session_options *so,
                         ct_tower_options *t, ct_status *status) {
  const int cpus = so->device_count_cpu, gpus = ct_device_count(so, CT_DEVICE_KIND_GPU);
  int64_t n = r->n_gpus > 0 ? r->n_gpus : r->n_towers;
  if (n == 0) return listed_towers(r, so->allow_soft_placement, t, status);
  if (n < 0) n = gpus > 0 ? gpus : cpus;
  const int want_gpus = r->n_gpus > 0 || gpus > 0;
  const int64_t on_gpus = want_gpus ? (n < gpus ? n : gpus) : 0, on_cpus = n - on_gpus;
  if (want_gpus && on_cpus > 0) {
    if (!so->allow_soft_placement) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "%lld towers want GPUs but this session has %d GPU%s; set "
                    "session.allow_soft_placement: true to train the other towers on CPU "
                    "devices, or ask for fewer towers",
                    (long long)n, gpus, gpus == 1 ? "" : "s");
      return 1;
    }
    fprintf(stderr,
            "ctower: warning: %d GPU%s for %lld towers: towers %lld .. %lld run on CPU "
            "devices /cpu:0 .. /cpu:%lld\n",
            gpus, gpus == 1 ? "" : "s", (long long)n, (long long)on_gpus, (long long)n - 1,
            (long long)on_cpus - 1);
  }
  if (on_cpus > cpus) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "%lld towers need %lld CPU devices but the session has %d; set "
                  "session.device_count: {CPU: %lld}",
                  (long long)n, (long long)on_cpus, cpus, (long long)on_cpus);
    return 1;
  }
  if (n > CT_MAX_DEVICES) {
    ct_status_set(status, CT_INVALID_ARGUMENT, "%lld towers asked for; at most %d", (long long)n,
                  CT_MAX_DEVICES);
    return 1;
  }
  t->n_towers = (int)n;
  towers_on(t, 0, (int)on_gpus, "gpu");
  towers_on(t, (int)on_gpus, (int)on_cpus, "cpu");
  return 0;
}

/* Under a cluster spec with ps tasks: the variables live on the ps tasks
 * (ps_device names one, /job:ps/task:0/cpu:0, or no task: spread over them
 * all), the workers compute (each rank's graph keeps them on its own
 * device of that name), and the update needs the parameter server. */
static int cluster_ps_device(const ct_tower_request *r, const ct_device_spec *spec,
                             ct_tower_options *t, ct_status *status) {
  if (spec->has_job && strcmp(spec->job, "ps") != 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.ps_device '%s' puts the variables on a %s task, but %s; write "
                  "/job:ps/task:0%s (or /job:ps%s to spread them over the %d ps tasks)",
                  r->ps_device, spec->job,
                  r->async_updates
                      ? "with cluster.updates: async each worker's gradients are applied as "
                        "they arrive, by the ps tasks that hold the variables"
                      : "with cluster.ps the ps tasks hold the variables and apply the updates",
                  t->ps_device, t->ps_device, ct_cluster_ps_tasks());
    return 1;
  }
  if (r->variable_update != CT_VARIABLE_UPDATE_PARAMETER_SERVER) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cluster.ps is %d, but devices.variable_update is %s; ps tasks hold the "
                  "variables of devices.variable_update: parameter_server",
                  ct_cluster_ps_tasks(), ct_strategy_of(r->variable_update)->name);
    return 1;
  }
  return 0;
}

/* ps_device, as a device of this process. Across ranks the parameter
 * server is rank 0's (task 0): it applies the updates, holds the
 * optimizer's slots and writes the checkpoints; a device of another task
 * is an error that says what to write. */
static int ps_device(const ct_tower_request *r, ct_tower_options *t, ct_status *status) {
  ct_device_spec spec;
  if (local_name("devices.ps_device", r->ps_device, 0, &spec, t->ps_device, sizeof t->ps_device,
                 NULL, status))
    return 1;
  t->ps_task = spec.has_task ? spec.task : -1;
  if (ct_cluster_ps_tasks() > 0) return cluster_ps_device(r, &spec, t, status);
  if (r->variable_update == CT_VARIABLE_UPDATE_PARAMETER_SERVER && ct_cluster_size() > 1 &&
      spec.has_task && spec.task != 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.ps_device '%s' is on task %d, but across ranks the parameter server "
                  "is task 0's (rank 0 applies the updates, holds the optimizer's slots and "
                  "writes the checkpoints); write /job:worker/task:0/%s, or %s for the same "
                  "device",
                  r->ps_device, spec.task, t->ps_device + 1, t->ps_device);
    return 1;
  }
  return 0;
}

/* block_momentum's block: K steps, and eta in [0, 1) or -1 (1 - 1/N). */
static int block_options(const ct_tower_request *r, ct_tower_options *t, ct_status *status) {
  const float eta = r->block_momentum;
  if (r->block_steps < 1 || !((eta >= 0.0f && eta < 1.0f) || eta == -1.0f)) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.block_steps must be 1 or more and devices.block_momentum from 0 up to "
                  "(not including) 1, or -1 for 1 - 1/N with N towers in the job; got %lld and %g",
                  (long long)r->block_steps, (double)eta);
    return 1;
  }
  t->block_steps = r->block_steps;
  t->block_momentum = r->block_momentum;
  return 0;
}

/* devices.compression: the replicated update's, between ranks and from
 * GPUs to other memory (compression_note says when it finds no such way). */
static int compression(const ct_tower_request *r, ct_tower_options *t, ct_status *status) {
  if ((int)r->compression < 0 || r->compression >= CT_COMPRESSION_COUNT) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.compression %d is none of none, bf16, fp16 and onebit",
                  (int)r->compression);
    return 1;
  }
  t->compression = r->compression;
  if (t->compression != CT_COMPRESSION_NONE && t->variable_update != CT_VARIABLE_UPDATE_REPLICATED) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.compression: %s compresses the gradients the replicated update "
                  "all-reduces between ranks, but devices.variable_update is %s%s; set "
                  "devices.variable_update: replicated, or devices.compression: none",
                  ct_compression_name(t->compression), ct_strategy_of(r->variable_update)->name,
                  ct_cluster_ps_tasks() > 0 ? " (on ps tasks)" : "");
    return 1;
  }
  return 0;
}

/* t->memory_domain of each tower: 0 for the host's memory, 1 + i for
 * physical GPU i, whose virtual GPUs (gpu_options.n_virtual_devices a
 * card) are /gpu:k for k / n = i. */
static void memory_domains(const ct_session_options *so, ct_tower_options *t) {
  const int per_physical =
      so->gpu_options.n_virtual_devices > 0 ? so->gpu_options.n_virtual_devices : 1;
  for (int k = 0; k < t->n_towers; ++k) {
    ct_device_spec spec;
    const int gpu = ct_device_spec_parse(t->devices[k], &spec, NULL) == 0 &&
                    spec.kind == CT_DEVICE_KIND_GPU;
    t->memory_domain[k] = gpu ? 1 + spec.id / per_physical : 0;
  }
}

/* A process on its own where compression finds nothing to compress says
 * so, and why. */
static void compression_note(const ct_tower_options *t) {
  if (t->compression == CT_COMPRESSION_NONE || t->across_ranks ||
      ct_towers_compress_out_of_gpus(t))
    return;
  fprintf(stderr,
          "ctower: note: devices.compression: %s applies between the ranks of an MPI job, and "
          "where a ring or tree all-reduce sends a sum from a GPU to another GPU or to the "
          "host; %s, so the towers sum their gradients exactly\n",
          ct_compression_name(t->compression),
          ct_towers_span_memories(t) ? "devices.all_reduce is nccl, which moves f32"
                                     : "here no sum leaves a GPU for other memory");
}

/* The variable update the request names, as this job runs it: the
 * parameter server under a cluster spec with ps tasks is theirs. */
static int strategy(const ct_tower_request *r, ct_tower_options *t, ct_status *status) {
  if (r->variable_update != CT_VARIABLE_UPDATE_PARAMETER_SERVER &&
      r->variable_update != CT_VARIABLE_UPDATE_REPLICATED &&
      r->variable_update != CT_VARIABLE_UPDATE_BLOCK_MOMENTUM) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.variable_update %d is not one a request names; use replicated, "
                  "parameter_server or block_momentum (a cluster spec with ps tasks makes the "
                  "parameter server theirs)",
                  (int)r->variable_update);
    return 1;
  }
  if (block_options(r, t, status)) return 1;
  t->variable_update = r->variable_update;
  if (ct_cluster_ps_tasks() > 0)
    t->variable_update = r->async_updates ? CT_VARIABLE_UPDATE_ASYNC : CT_VARIABLE_UPDATE_PS_TASKS;
  t->max_staleness = r->async_updates ? r->max_staleness : 0;
  return compression(r, t, status);
}

/* Whether every tower is on a GPU; else *first_cpu is the first that is not. */
static int all_on_gpus(const ct_tower_options *t, int *first_cpu) {
  for (int k = 0; k < t->n_towers; ++k) {
    ct_device_spec spec;
    if (ct_device_spec_parse(t->devices[k], &spec, NULL) || spec.kind != CT_DEVICE_KIND_GPU) {
      *first_cpu = k;
      return 0;
    }
  }
  return 1;
}

int ct_towers_resolve(const ct_tower_request *r, const ct_session_options *so,
                      ct_tower_options *out, ct_status *status) {
  ct_tower_options t;
  memset(&t, 0, sizeof t);
  /* across ranks every rank keeps the ps variables on its own device of
   * that name; rank 0 applies the job's summed gradients to its copy and
   * sends the variables back to the others */
  if (strategy(r, &t, status) || ps_device(r, &t, status)) return 1;
  /* with ps tasks each rank's graph is its own: the trainer moves the
   * gradients and variables between the tasks */
  t.across_ranks = ct_cluster_size() > 1 && ct_cluster_ps_tasks() == 0;
  if (ct_cluster_is_ps()) { /* one tower that never runs: the graph's variables and updates */
    t.n_towers = 1;
    snprintf(t.devices[0], sizeof t.devices[0], "/cpu:0");
  } else if (tower_devices(r, so, &t, status)) {
    return 1;
  }
  int first_cpu = 0;
  const int gpus_only = all_on_gpus(&t, &first_cpu);
  if (r->all_reduce == CT_ALL_REDUCE_REQUEST_NCCL && !gpus_only) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "devices.all_reduce: nccl needs every tower on a GPU, but tower %d is on %s%s; "
                  "use ring, tree or auto",
                  first_cpu, t.devices[first_cpu],
                  ct_device_count(so, CT_DEVICE_KIND_GPU) == 0 ? " (this session has no GPU)" : "");
    return 1;
  }
  memory_domains(so, &t);
  const int compress_in_ring =
      t.compression != CT_COMPRESSION_NONE && ct_towers_span_memories(&t);
  t.all_reduce = r->all_reduce == CT_ALL_REDUCE_REQUEST_TREE   ? CT_ALL_REDUCE_TREE
                 : r->all_reduce == CT_ALL_REDUCE_REQUEST_RING ? CT_ALL_REDUCE_RING
                 : r->all_reduce == CT_ALL_REDUCE_REQUEST_NCCL ? CT_ALL_REDUCE_COLLECTIVE
                 : gpus_only && !compress_in_ring              ? CT_ALL_REDUCE_COLLECTIVE
                                                               : CT_ALL_REDUCE_RING;
  compression_note(&t);
  *out = t;
  return 0;
}
