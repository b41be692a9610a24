/* ctower device names: device specifications as TensorFlow 1.x parses them
 * (DeviceNameUtils::ParseFullName / ParseLocalName).
 *
 * A specification is what a caller writes in ct_graph_push_device: it may name
 * one concrete device ("/gpu:1"), a family ("/device:GPU", any GPU) or nothing
 * ("", anywhere). Concrete devices belong to a process, the task of a job:
 * /job:localhost/replica:0/task:0/device:TYPE:N for a process on its own,
 * /job:worker/replica:0/task:K/device:TYPE:N for rank K of an MPI job.
 *
 * Accepted forms (components separated by '/', each at most once, in TF's
 * order /job /replica /task /device):
 *   ""  or "/"                       the empty spec: matches every device
 *   /job:NAME  or /job:*             NAME is [A-Za-z][A-Za-z0-9_]*, < 64 chars
 *   /replica:N or /replica:*         N a non-negative decimal integer
 *   /task:N    or /task:*
 *   /device:TYPE[:N | :*]            TYPE is CPU, GPU (any case) or *
 *   /cpu:N, /gpu:N, /cpu:*, /gpu:*   legacy short forms (type in any case)
 * "*" always means "absent": /gpu:* has has_id = 0, /job:* has has_job = 0.
 */
#ifndef CTOWER_DEVICE_NAME_H
#define CTOWER_DEVICE_NAME_H

#include <stddef.h>

#include "ctower/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_device_kind {
  CT_DEVICE_KIND_ANY = 0, /* the spec names no type (or "*") */
  CT_DEVICE_KIND_CPU,
  CT_DEVICE_KIND_GPU
} ct_device_kind;

enum { CT_DEVICE_JOB_MAX = 64 }; /* job names have at most 63 characters */

typedef struct ct_device_spec {
  int has_job;
  char job[CT_DEVICE_JOB_MAX]; /* "localhost"; "" when has_job is 0 */
  int has_replica;
  int replica;                 /* 0 when has_replica is 0 */
  int has_task;
  int task;                    /* 0 when has_task is 0 */
  ct_device_kind kind;         /* ANY when the spec names no type */
  int has_id;
  int id;                      /* "/gpu:1" -> 1; absent or "*" -> has_id = 0, id = 0 */
} ct_device_spec;

/* Parses a device specification.
 *
 * On success returns 0, fills *spec (every field: absent parts are 0 / "")
 * and leaves status untouched. On failure returns 1, leaves *spec unchanged
 * and records CT_INVALID_ARGUMENT in status (unless status already holds an
 * error, or is NULL) with the message
 *   "invalid device specification '<text>': <what is wrong>; use a name like
 *    /cpu:0, /gpu:1 or /job:localhost/replica:0/task:0/device:GPU:1"
 * Failures: NULL text, text not starting with '/', an empty component
 * ("//", trailing '/'), an unknown component ("/extra", "/tpu:0"), an unknown
 * device type ("/device:TPU:0"), a malformed or negative number ("/gpu:x",
 * "/gpu:-1"), a missing value ("/job:"), extra fields ("/device:GPU:1:2"),
 * a repeated component or components out of order ("/cpu:0/job:x").
 * spec may be NULL to only validate the text. */
int ct_device_spec_parse(const char *text, ct_device_spec *spec, ct_status *status);

/* Writes the canonical full name of the concrete device (kind, id) of task
 * `task` of job `job` (NULL or "": "localhost"), e.g.
 * "/job:localhost/replica:0/task:0/device:GPU:1" or
 * "/job:worker/replica:0/task:1/device:CPU:0", NUL-terminated and truncated
 * to fit size bytes (nothing is written when size is 0). kind should be CPU
 * or GPU; ANY is written as "*". Cannot fail. */
void ct_device_canonical_name(const char *job, int task, ct_device_kind kind, int id, char *buf,
                              size_t size);

/* Writes spec the way TF prints a requested device: only the parts present,
 * in order, e.g. "/job:localhost/device:GPU:1", "/device:GPU:1",
 * "/device:GPU:*" (type without id), "/device:*:1" (id without type),
 * "/replica:0"; "" for the empty spec. The result parses back to the same
 * spec. NUL-terminated and truncated to fit size bytes (nothing written when
 * size is 0). Cannot fail. */
void ct_device_spec_string(const ct_device_spec *spec, char *buf, size_t size);

/* Returns 1 when the concrete device (kind, id) of task `task` of job `job`
 * (NULL or "": "localhost") satisfies spec, else 0: job absent or equal to
 * job, replica absent or 0, task absent or equal to task, spec kind ANY or
 * equal to kind, id absent or equal to id. A spec that names another job or
 * task names another process's device; one without job and task matches
 * this process's devices. A NULL spec matches everything (like the empty
 * spec). */
int ct_device_spec_matches(const ct_device_spec *spec, const char *job, int task,
                           ct_device_kind kind, int id);

/* "CPU", "GPU"; "*" for CT_DEVICE_KIND_ANY (and any other value). */
const char *ct_device_kind_name(ct_device_kind kind);

#ifdef __cplusplus
}
#endif
#endif
