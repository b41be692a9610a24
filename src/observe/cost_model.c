/* The cost model (cost_model.h): defaults, the calibration file, and the
 * predicted time of a step. */
#include "observe/cost_model.h"

#include <errno.h>
#include <sched.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/json.h"
#include "core/text.h"

/* Conservative: slower than any x86 core or GPU of the last decade, so
 * that an uncalibrated plan errs towards "slower than it will be". */
static void kind_defaults(ct_kind_rates *k, int threads, double rate, double bandwidth,
                          double overhead) {
  memset(k, 0, sizeof *k);
  k->threads = threads;
  k->n_points = 1;
  k->flops[0] = 1e6;
  k->rate[0] = rate;
  k->memory_bytes_per_s = bandwidth;
  k->op_overhead_s = overhead;
}

void ct_calibration_defaults(ct_calibration *c) {
  memset(c, 0, sizeof *c);
  kind_defaults(&c->kinds[CT_DEVICE_KIND_CPU], 1, 4e9, 2e9, 20e-6);
  kind_defaults(&c->kinds[CT_DEVICE_KIND_GPU], 1, 2e12, 2e11, 20e-6);
  c->in_process = (ct_link){50e-6, 2e9};
  c->mpi = (ct_link){100e-6, 1.25e9}; /* 10 Gb/s */
}

const char *ct_calibration_default_path(char *buf, size_t size) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && xdg[0] == '/')
    snprintf(buf, size, "%s/ctower/calibration.json", xdg);
  else
    snprintf(buf, size, "%s/.cache/ctower/calibration.json", home && home[0] ? home : ".");
  return buf;
}

static const char *const k_kind_keys[3] = {NULL, "CPU", "GPU"};

/* The file `ctower bench --calibrate` writes, read strictly: every key it
 * writes must be there with a value in range, and no other. A file of
 * another shape (hand-edited, another version, another program's) would
 * otherwise leave the defaults in place while plan said it was measured. */
typedef struct calibration_reader {
  const char *path;
  ct_status *status;
} calibration_reader;

static int malformed(const calibration_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* DATA_LOSS naming the file, what is wrong and how to write it again. */
static int malformed(const calibration_reader *r, const char *fmt, ...) {
  char what[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  ct_status_set(r->status, CT_DATA_LOSS,
                "calibration file '%s' is malformed: %s; run 'ctower bench --calibrate "
                "--calibration %s' to write it again",
                r->path, what, r->path);
  return 1;
}

/* "CPU.threads", or "version" at the top. */
static void key_path(const char *where, const char *key, char *out, size_t size) {
  snprintf(out, size, "%s%s%s", where, where[0] ? "." : "", key);
}

/* Every key of object o (at `where`) is one of `keys` (NULL-terminated). */
static int known_keys(const calibration_reader *r, const ct_json *o, const char *where,
                      const char *const *keys) {
  for (size_t i = 0; i < o->count; ++i) {
    int known = 0;
    for (int k = 0; keys[k] && !known; ++k) known = strcmp(o->keys[i], keys[k]) == 0;
    char path[128];
    key_path(where, o->keys[i], path, sizeof path);
    if (!known)
      return malformed(r, "it has the key \"%s\", which a calibration does not hold", path);
  }
  return 0;
}

/* The member `key` of o: an object (or, with array set, an array). */
static int member(const calibration_reader *r, const ct_json *o, const char *where, const char *key,
                  int array, const ct_json **out) {
  char path[128];
  key_path(where, key, path, sizeof path);
  *out = ct_json_get(o, key);
  const ct_json_type want = array ? CT_JSON_ARRAY : CT_JSON_OBJECT;
  if (*out == NULL) return malformed(r, "\"%s\" is missing", path);
  if ((*out)->type != want)
    return malformed(r, "\"%s\" must be %s", path, array ? "a list" : "an object");
  return 0;
}

/* The number `key` of o in [lo, inf) (lo excluded when lo_open; a whole
 * number when integer). */
static int number(const calibration_reader *r, const ct_json *o, const char *where, const char *key,
                  double lo, int lo_open, int integer, double *out) {
  char path[128];
  key_path(where, key, path, sizeof path);
  const ct_json *v = ct_json_get(o, key);
  if (v == NULL) return malformed(r, "\"%s\" is missing", path);
  const int fits = v->type == CT_JSON_NUMBER && isfinite(v->number) &&
                   (lo_open ? v->number > lo : v->number >= lo) && (!integer || v->is_integer);
  if (!fits) {
    char got[48] = "not a number";
    if (v->type == CT_JSON_NUMBER) snprintf(got, sizeof got, "%g", v->number);
    return malformed(r, "\"%s\" is %s, not %s %s %g", path, got,
                     integer ? "a whole number" : "a number", lo_open ? ">" : ">=", lo);
  }
  *out = v->number;
  return 0;
}

static int read_link(const calibration_reader *r, const ct_json *o, const char *where,
                     ct_link *link) {
  static const char *const keys[] = {"ranks", "latency_s", "bytes_per_s", NULL};
  return known_keys(r, o, where, strcmp(where, "mpi") == 0 ? keys : keys + 1) ||
         number(r, o, where, "latency_s", 0, 0, 0, &link->latency_s) ||
         number(r, o, where, "bytes_per_s", 0, 1, 0, &link->bytes_per_s);
}

/* A kind's rates: threads, bandwidth, overhead and 1 ... CT_RATE_POINTS
 * dense points. */
static int read_kind(const calibration_reader *r, const ct_json *o, const char *where,
                     ct_kind_rates *k) {
  static const char *const keys[] = {"threads", "memory_bytes_per_s", "op_overhead_s", "dense",
                                     NULL};
  const ct_json *points;
  double threads = 0;
  if (known_keys(r, o, where, keys) || number(r, o, where, "threads", 1, 0, 1, &threads) ||
      number(r, o, where, "memory_bytes_per_s", 0, 1, 0, &k->memory_bytes_per_s) ||
      number(r, o, where, "op_overhead_s", 0, 0, 0, &k->op_overhead_s) ||
      member(r, o, where, "dense", 1, &points))
    return 1;
  if (points->count < 1 || points->count > CT_RATE_POINTS)
    return malformed(r, "\"%s.dense\" must hold 1 to %d points, got %zu", where, CT_RATE_POINTS,
                     points->count);
  static const char *const point_keys[] = {"flops", "flops_per_s", NULL};
  for (size_t i = 0; i < points->count; ++i) {
    char at[64];
    snprintf(at, sizeof at, "%s.dense[%zu]", where, i);
    const ct_json *p = &points->items[i];
    if (p->type != CT_JSON_OBJECT) return malformed(r, "\"%s\" must be an object", at);
    if (known_keys(r, p, at, point_keys) || number(r, p, at, "flops", 0, 1, 0, &k->flops[i]) ||
        number(r, p, at, "flops_per_s", 0, 1, 0, &k->rate[i]))
      return 1;
  }
  k->n_points = (int)points->count;
  k->threads = (int)threads;
  k->measured = 1;
  return 0;
}

/* The whole file's tree into c. */
static int read_calibration(const calibration_reader *r, const ct_json *root, ct_calibration *c) {
  static const char *const keys[] = {"version", "cpu", "CPU", "GPU", "mpi", "in_process", NULL};
  if (root->type != CT_JSON_OBJECT) return malformed(r, "it is not a JSON object");
  double version = 0;
  if (known_keys(r, root, "", keys) || number(r, root, "", "version", 1, 0, 1, &version)) return 1;
  if (version != 1) return malformed(r, "\"version\" is %g, and this ctower reads 1", version);
  const ct_json *cpu = ct_json_get(root, "cpu"), *o;
  if (cpu == NULL || cpu->type != CT_JSON_STRING)
    return malformed(r, "\"cpu\" must be the name of the CPU it was measured on");
  snprintf(c->cpu, sizeof c->cpu, "%s", cpu->string);
  if (member(r, root, "", "CPU", 0, &o) || read_kind(r, o, "CPU", &c->kinds[CT_DEVICE_KIND_CPU]))
    return 1;
  if (ct_json_get(root, "GPU") &&
      (member(r, root, "", "GPU", 0, &o) || read_kind(r, o, "GPU", &c->kinds[CT_DEVICE_KIND_GPU])))
    return 1;
  if (ct_json_get(root, "mpi")) {
    double ranks = 0;
    if (member(r, root, "", "mpi", 0, &o) || read_link(r, o, "mpi", &c->mpi) ||
        number(r, o, "mpi", "ranks", 2, 0, 1, &ranks))
      return 1;
    c->mpi_ranks = (int)ranks;
  }
  return member(r, root, "", "in_process", 0, &o) || read_link(r, o, "in_process", &c->in_process);
}

static const ct_file_role k_calibration_role = {
    "calibration file", "give --calibration a file's path (ctower bench --calibrate writes it)"};

int ct_calibration_load(const char *path, ct_calibration *c, ct_status *status) {
  size_t size = 0;
  char *text = (char *)ct_file_read_all(path, &k_calibration_role, &size, status);
  if (text == NULL) return 1;
  char error[256] = "";
  ct_json *root = ct_json_parse(text, size, error, sizeof error);
  free(text);
  const calibration_reader reader = {path, status};
  ct_calibration read = *c;
  const int failed = root == NULL ? malformed(&reader, "%s", error[0] ? error : "not JSON")
                                  : read_calibration(&reader, root, &read);
  ct_json_free(root);
  if (failed) return 1;
  *c = read;
  c->measured = 1;
  return 0;
}

int ct_calibration_check_path(const char *path, ct_status *status) {
  mode_t mode;
  char *target = ct_file_target(path, &k_calibration_role, &mode, status);
  const int refused = target == NULL;
  free(target);
  return refused;
}

/* The calibration as JSON. */
static void calibration_json(const ct_calibration *c, ct_text *out) {
  char cpu[256];
  ct_json_escape(c->cpu, cpu, sizeof cpu);
  ct_text_printf(out, "{\n  \"version\": 1,\n  \"cpu\": %s,\n", cpu);
  for (int kind = 1; kind < 3; ++kind) {
    const ct_kind_rates *k = &c->kinds[kind];
    if (!k->measured) continue;
    ct_text_printf(out,
                   "  \"%s\": {\"threads\": %d, \"memory_bytes_per_s\": %.6g, \"op_overhead_s\": "
                   "%.6g,\n",
                   k_kind_keys[kind], k->threads, k->memory_bytes_per_s, k->op_overhead_s);
    ct_text_str(out, "    \"dense\": [");
    for (int i = 0; i < k->n_points; ++i)
      ct_text_printf(out, "%s{\"flops\": %.6g, \"flops_per_s\": %.6g}", i ? ", " : "", k->flops[i],
                     k->rate[i]);
    ct_text_str(out, "]},\n");
  }
  if (c->mpi_ranks > 1)
    ct_text_printf(out, "  \"mpi\": {\"ranks\": %d, \"latency_s\": %.6g, \"bytes_per_s\": %.6g},\n",
                   c->mpi_ranks, c->mpi.latency_s, c->mpi.bytes_per_s);
  ct_text_printf(out, "  \"in_process\": {\"latency_s\": %.6g, \"bytes_per_s\": %.6g}\n}\n",
                 c->in_process.latency_s, c->in_process.bytes_per_s);
}

int ct_calibration_save(const char *path, const ct_calibration *c, ct_status *status) {
  ct_text json = {NULL, 0, 0, 0};
  calibration_json(c, &json);
  ct_file_writer w;
  int failed = 1;
  if (json.oom) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", path);
  } else if (ct_file_writer_open(&w, path, &k_calibration_role, status) == 0) {
    failed = ct_file_writer_write(&w, json.data, json.len, status);
    failed = failed ? (ct_file_writer_discard(&w), 1) : ct_file_writer_commit(&w, status);
  }
  ct_text_free(&json);
  return failed;
}

/* The achieved rate of a dense op of `flops`, on a device of k's kind with
 * `threads` threads: the measured points interpolated in log-log, flat
 * beyond them (for the measured device's threads). */
static double dense_rate(const ct_kind_rates *k, double flops) {
  double rate = k->rate[0];
  if (flops >= k->flops[k->n_points - 1]) {
    rate = k->rate[k->n_points - 1];
  } else {
    for (int i = 1; i < k->n_points; ++i) {
      if (flops >= k->flops[i]) continue;
      if (flops > k->flops[i - 1]) {
        const double t = log(flops / k->flops[i - 1]) / log(k->flops[i] / k->flops[i - 1]);
        rate = exp(log(k->rate[i - 1]) + t * log(k->rate[i] / k->rate[i - 1]));
      } else {
        rate = k->rate[i - 1];
      }
      break;
    }
  }
  return rate;
}

double ct_cost_ring_seconds(double bytes, int n, const ct_link *link) {
  if (n <= 1 || bytes <= 0) return 0;
  return 2.0 * (n - 1) * link->latency_s + 2.0 * (n - 1) / n * bytes / link->bytes_per_s;
}

/* The threads each device of the run has in effect: CPU devices whose
 * threads together outnumber the cores share them in proportion. */
static void effective_threads(ct_session *s, const ct_run_estimate *e, double *threads) {
  cpu_set_t cores;
  const int n_cores = sched_getaffinity(0, sizeof cores, &cores) == 0 ? CPU_COUNT(&cores) : 1;
  double cpu_threads = 0;
  for (int d = 0; d < e->n_devices; ++d) {
    ct_device_info info;
    ct_session_device_info(s, d, &info);
    threads[d] = info.threads > 0 ? info.threads : 1;
    if (strcmp(info.kind, "CPU") == 0 && e->devices[d].steps > 0) cpu_threads += threads[d];
  }
  for (int d = 0; d < e->n_devices; ++d) {
    ct_device_info info;
    ct_session_device_info(s, d, &info);
    if (strcmp(info.kind, "CPU") == 0 && cpu_threads > n_cores) threads[d] *= n_cores / cpu_threads;
  }
}

double ct_calibration_peak_flops(const ct_calibration *c, const ct_device_info *device) {
  const ct_kind_rates *k =
      &c->kinds[strcmp(device->kind, "GPU") == 0 ? CT_DEVICE_KIND_GPU : CT_DEVICE_KIND_CPU];
  double best = 0;
  for (int i = 0; k->measured && i < k->n_points; ++i) best = k->rate[i] > best ? k->rate[i] : best;
  return best * device->threads / (k->threads > 0 ? k->threads : 1);
}

double ct_cost_step_seconds(const ct_calibration *c, ct_session *s, const ct_run_estimate *e,
                            int ranks, const ct_link *link, double *device_s, double *reduce_s) {
  double busy[CT_MAX_DEVICES] = {0}, reduce = 0, threads[CT_MAX_DEVICES];
  effective_threads(s, e, threads);
  for (int i = 0; i < e->n_steps; ++i) {
    const ct_step_cost *step = &e->steps[i];
    ct_device_info info;
    ct_session_device_info(s, step->device, &info);
    const ct_kind_rates *k =
        &c->kinds[strcmp(info.kind, "GPU") == 0 ? CT_DEVICE_KIND_GPU : CT_DEVICE_KIND_CPU];
    const double share = threads[step->device] / (double)k->threads;
    double t = k->op_overhead_s;
    if (strcmp(step->op, "AllReduce") == 0 || strcmp(step->op, "_Copy") == 0) {
      t += c->in_process.latency_s + step->bytes / 2 / c->in_process.bytes_per_s;
    } else if (step->dense) {
      /* per thread, an op of F FLOPs on t threads is one of F k->threads / t on the
       * measured device */
      t += step->flops / (dense_rate(k, step->flops / share) * share);
    } else if (strcmp(step->op, "CollectiveReduce") != 0) {
      t += step->bytes / (k->memory_bytes_per_s * share);
    }
    busy[step->device] += t;
    if (strncmp(step->name, "all_reduce/", 11) == 0) reduce += t;
  }
  double slowest = 0;
  for (int d = 0; d < e->n_devices; ++d) {
    if (device_s) device_s[d] = busy[d];
    if (busy[d] > slowest) slowest = busy[d];
  }
  const double across = ct_cost_ring_seconds(e->collective_bytes, ranks, link);
  if (reduce_s) *reduce_s = reduce + across;
  return slowest + across;
}
