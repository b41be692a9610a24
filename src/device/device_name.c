/* Device specifications with TensorFlow 1.x's DeviceNameUtils semantics. */
#include "ctower/device_name.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define CT_DEVICE_SPEC_HINT \
  "use a name like /cpu:0, /gpu:1 or /job:localhost/replica:0/task:0/device:GPU:1"

/* Order ranks of the components: each may appear once, in this order. */
enum { RANK_JOB = 0, RANK_REPLICA, RANK_TASK, RANK_DEVICE, RANK_COUNT };

static const char *const rank_names[RANK_COUNT] = {"/job", "/replica", "/task", "/device"};

/* Records the failure for `text`; `what` says what is wrong. Returns 1. */
static int spec_error(ct_status *status, const char *text, const char *what) {
  ct_status_set(status, CT_INVALID_ARGUMENT, "invalid device specification '%.256s': %s; %s",
                text, what, CT_DEVICE_SPEC_HINT);
  return 1;
}

static int ieq_n(const char *a, size_t n, const char *b) {
  if (strlen(b) != n) return 0;
  for (size_t i = 0; i < n; i++) {
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return 0;
  }
  return 1;
}

static int eq_n(const char *a, size_t n, const char *b) {
  return strlen(b) == n && memcmp(a, b, n) == 0;
}

/* Parses a non-negative decimal int from [s, s+n). Returns 0 on success. */
static int parse_nonneg(const char *s, size_t n, int *out) {
  if (n == 0) return -1;
  long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
    if (v > INT_MAX) return -1;
  }
  *out = (int)v;
  return 0;
}

/* Parses "N" or "*" into (has, value); "what" names the field in messages. */
static int parse_index(const char *text, const char *comp, size_t comp_len, const char *val,
                       size_t n, const char *what, int *has, int *value, ct_status *status) {
  char msg[512];
  if (n == 0) {
    snprintf(msg, sizeof msg, "'%.*s' has no %s after ':'", (int)comp_len, comp, what);
    return spec_error(status, text, msg);
  }
  if (n == 1 && val[0] == '*') {
    *has = 0;
    *value = 0;
    return 0;
  }
  if (memchr(val, ':', n) != NULL) {
    snprintf(msg, sizeof msg, "'%.*s' has too many ':'-separated fields", (int)comp_len, comp);
    return spec_error(status, text, msg);
  }
  if (parse_nonneg(val, n, value) != 0) {
    snprintf(msg, sizeof msg, "%s '%.*s' in '%.*s' is not a non-negative integer or *", what,
             (int)n, val, (int)comp_len, comp);
    return spec_error(status, text, msg);
  }
  *has = 1;
  return 0;
}

/* Parses a device type name: CPU, GPU (any case) or "*". */
static int parse_kind(const char *text, const char *comp, size_t comp_len, const char *val,
                      size_t n, ct_device_kind *kind, ct_status *status) {
  char msg[512];
  if (n == 0) {
    snprintf(msg, sizeof msg, "'%.*s' has no device type", (int)comp_len, comp);
    return spec_error(status, text, msg);
  }
  if (n == 1 && val[0] == '*') {
    *kind = CT_DEVICE_KIND_ANY;
  } else if (ieq_n(val, n, "CPU")) {
    *kind = CT_DEVICE_KIND_CPU;
  } else if (ieq_n(val, n, "GPU")) {
    *kind = CT_DEVICE_KIND_GPU;
  } else {
    snprintf(msg, sizeof msg, "unknown device type '%.*s' (the device types are CPU and GPU)",
             (int)n, val);
    return spec_error(status, text, msg);
  }
  return 0;
}

/* One '/'-separated component of the specification `text`: key[:value]. */
typedef struct spec_component {
  const char *text;
  const char *comp; /* after its '/' */
  size_t len;
  const char *colon; /* its first ':', or NULL */
  const char *val;   /* after the ':' */
  size_t val_len;
  int rank;
  int legacy; /* /cpu:N or /gpu:N */
  ct_device_kind legacy_kind;
} spec_component;

/* Finds which component c is from its key, and that it has a value. */
static int component_rank(spec_component *c, ct_status *status) {
  char msg[512];
  const size_t key_len = c->colon ? (size_t)(c->colon - c->comp) : c->len;
  c->legacy = 0;
  c->legacy_kind = CT_DEVICE_KIND_ANY;
  if (eq_n(c->comp, key_len, "job")) {
    c->rank = RANK_JOB;
  } else if (eq_n(c->comp, key_len, "replica")) {
    c->rank = RANK_REPLICA;
  } else if (eq_n(c->comp, key_len, "task")) {
    c->rank = RANK_TASK;
  } else if (eq_n(c->comp, key_len, "device")) {
    c->rank = RANK_DEVICE;
  } else if (ieq_n(c->comp, key_len, "cpu") || ieq_n(c->comp, key_len, "gpu")) {
    c->rank = RANK_DEVICE;
    c->legacy = 1;
    c->legacy_kind = ieq_n(c->comp, key_len, "cpu") ? CT_DEVICE_KIND_CPU : CT_DEVICE_KIND_GPU;
  } else {
    snprintf(msg, sizeof msg,
             "unknown component '/%.*s' (expected /job:, /replica:, /task:, /device:TYPE:N, "
             "/cpu:N or /gpu:N; the device types are CPU and GPU)",
             (int)c->len, c->comp);
    return spec_error(status, c->text, msg);
  }
  if (c->colon == NULL) {
    const int n = (int)c->len;
    if (c->legacy) {
      snprintf(msg, sizeof msg, "'/%.*s' needs an id, as in /%.*s:0 or /%.*s:*", n, c->comp, n,
               c->comp, n, c->comp);
    } else {
      snprintf(msg, sizeof msg, "'/%.*s' needs a value after ':'", n, c->comp);
    }
    return spec_error(status, c->text, msg);
  }
  return 0;
}

/* /job:NAME or /job:* */
static int parse_job(const spec_component *c, ct_device_spec *out, ct_status *status) {
  char msg[512];
  const char *val = c->val;
  const size_t val_len = c->val_len;
  if (val_len == 0) return spec_error(status, c->text, "'/job:' has no job name");
  if (val_len == 1 && val[0] == '*') return 0;
  int ok = isalpha((unsigned char)val[0]) != 0;
  for (size_t i = 1; ok && i < val_len; i++) {
    ok = isalnum((unsigned char)val[i]) || val[i] == '_';
  }
  if (!ok) {
    snprintf(msg, sizeof msg, "job name '%.*s' must be a letter followed by letters, digits or '_'",
             (int)val_len, val);
    return spec_error(status, c->text, msg);
  }
  if (val_len >= sizeof out->job) {
    snprintf(msg, sizeof msg, "job name '%.*s' is longer than %d characters", (int)val_len, val,
             (int)sizeof out->job - 1);
    return spec_error(status, c->text, msg);
  }
  out->has_job = 1;
  memcpy(out->job, val, val_len);
  out->job[val_len] = '\0';
  return 0;
}

/* /device:TYPE[:N], /cpu:N or /gpu:N. Messages quote the component with
 * its leading '/'. */
static int parse_device(const spec_component *c, ct_device_spec *out, ct_status *status) {
  const char *qcomp = c->comp - 1;
  const size_t qlen = c->len + 1;
  if (c->legacy) {
    out->kind = c->legacy_kind;
    return parse_index(c->text, qcomp, qlen, c->val, c->val_len, "device id", &out->has_id,
                       &out->id, status);
  }
  const char *c2 = memchr(c->val, ':', c->val_len);
  size_t type_len = c2 ? (size_t)(c2 - c->val) : c->val_len;
  if (parse_kind(c->text, qcomp, qlen, c->val, type_len, &out->kind, status) != 0) return 1;
  return c2 != NULL && parse_index(c->text, qcomp, qlen, c2 + 1, c->val_len - type_len - 1,
                                   "device id", &out->has_id, &out->id, status) != 0;
}

/* The value of component c into out. */
static int parse_value(const spec_component *c, ct_device_spec *out, ct_status *status) {
  switch (c->rank) {
    case RANK_JOB: return parse_job(c, out, status);
    case RANK_REPLICA:
      return parse_index(c->text, c->comp - 1, c->len + 1, c->val, c->val_len, "replica",
                         &out->has_replica, &out->replica, status);
    case RANK_TASK:
      return parse_index(c->text, c->comp - 1, c->len + 1, c->val, c->val_len, "task",
                         &out->has_task, &out->task, status);
    default: return parse_device(c, out, status);
  }
}

/* The components of text (it starts with '/'), each once, in order. */
static int parse_components(const char *text, ct_device_spec *out, ct_status *status) {
  char msg[512];
  int last_rank = -1;
  const char *p = text;
  while (*p == '/') {
    spec_component c = {.text = text, .comp = p + 1};
    const char *end = strchr(c.comp, '/');
    c.len = end ? (size_t)(end - c.comp) : strlen(c.comp);
    p = c.comp + c.len;
    if (c.len == 0) {
      return spec_error(status, text,
                        end ? "it has an empty component ('//')" : "it ends with '/'");
    }
    c.colon = memchr(c.comp, ':', c.len);
    c.val = c.colon ? c.colon + 1 : c.comp + c.len;
    c.val_len = c.colon ? c.len - (size_t)(c.colon - c.comp) - 1 : 0;
    if (component_rank(&c, status) != 0) return 1;
    if (c.rank == last_rank) {
      snprintf(msg, sizeof msg, "it names %s more than once", rank_names[c.rank]);
      return spec_error(status, text, msg);
    }
    if (c.rank < last_rank) {
      snprintf(msg, sizeof msg, "'/%.*s' comes after %s; the order is /job/replica/task/device",
               (int)c.len, c.comp, rank_names[last_rank]);
      return spec_error(status, text, msg);
    }
    last_rank = c.rank;
    if (parse_value(&c, out, status) != 0) return 1;
  }
  return 0;
}

int ct_device_spec_parse(const char *text, ct_device_spec *spec, ct_status *status) {
  if (text == NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "invalid device specification: got NULL instead of a string (\"\" means any "
                  "device); %s",
                  CT_DEVICE_SPEC_HINT);
    return 1;
  }
  ct_device_spec out;
  memset(&out, 0, sizeof out);
  out.kind = CT_DEVICE_KIND_ANY;

  if (text[0] != '\0' && !(text[0] == '/' && text[1] == '\0')) {
    if (text[0] != '/') return spec_error(status, text, "it must start with '/'");
    if (parse_components(text, &out, status) != 0) return 1;
  }
  if (spec != NULL) *spec = out;
  return 0;
}

const char *ct_device_kind_name(ct_device_kind kind) {
  switch (kind) {
    case CT_DEVICE_KIND_CPU: return "CPU";
    case CT_DEVICE_KIND_GPU: return "GPU";
    case CT_DEVICE_KIND_ANY: break;
  }
  return "*";
}

/* The job a device belongs to: "localhost" for NULL or "". */
static const char *job_name(const char *job) {
  return job == NULL || job[0] == '\0' ? "localhost" : job;
}

void ct_device_canonical_name(const char *job, int task, ct_device_kind kind, int id, char *buf,
                              size_t size) {
  if (buf == NULL || size == 0) return;
  snprintf(buf, size, "/job:%.*s/replica:0/task:%d/device:%s:%d", CT_DEVICE_JOB_MAX - 1,
           job_name(job), task, ct_device_kind_name(kind), id);
}

void ct_device_spec_string(const ct_device_spec *spec, char *buf, size_t size) {
  if (buf == NULL || size == 0) return;
  buf[0] = '\0';
  if (spec == NULL) return;
  char tmp[256];
  size_t n = 0;
  tmp[0] = '\0';
#define APPEND(...)                                                           \
  do {                                                                        \
    int w_ = snprintf(tmp + n, sizeof tmp - n, __VA_ARGS__);                  \
    if (w_ > 0) n = (size_t)w_ < sizeof tmp - n ? n + (size_t)w_ : sizeof tmp - 1; \
  } while (0)
  if (spec->has_job) APPEND("/job:%.*s", (int)sizeof spec->job - 1, spec->job);
  if (spec->has_replica) APPEND("/replica:%d", spec->replica);
  if (spec->has_task) APPEND("/task:%d", spec->task);
  if (spec->kind != CT_DEVICE_KIND_ANY || spec->has_id) {
    if (spec->has_id) {
      APPEND("/device:%s:%d", ct_device_kind_name(spec->kind), spec->id);
    } else {
      APPEND("/device:%s:*", ct_device_kind_name(spec->kind));
    }
  }
#undef APPEND
  snprintf(buf, size, "%s", tmp);
}

int ct_device_spec_matches(const ct_device_spec *spec, const char *job, int task,
                           ct_device_kind kind, int id) {
  if (spec == NULL) return 1;
  if (spec->has_job && strcmp(spec->job, job_name(job)) != 0) return 0;
  if (spec->has_replica && spec->replica != 0) return 0;
  if (spec->has_task && spec->task != task) return 0;
  if (spec->kind != CT_DEVICE_KIND_ANY && spec->kind != kind) return 0;
  if (spec->has_id && spec->id != id) return 0;
  return 1;
}
