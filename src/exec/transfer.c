/* The messages of a run's edges between tasks (plan_edges.c makes their
 * send and receive steps). Each step carries one value (or a control
 * edge's signal) as MPI point-to-point messages on the edge channel: a
 * header (the dtype and shape, or the sender's failure) and the bytes.
 * Sends and receives never occupy a device's worker: the executor's thread
 * starts and completes them, so that no placement can make two tasks wait
 * for each other (a receive that blocked a worker could hold up the very
 * step its peer is waiting for). */
#include "exec/transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"

enum { MESSAGE_CHARS = 640 };

/* A transfer's first message. */
typedef struct transfer_header {
  int32_t failed; /* 1: the sender's run failed, as message says */
  int32_t code;   /* its ct_status code */
  int32_t dtype;
  int32_t rank;
  int64_t dims[CT_MAX_RANK];
  char message[MESSAGE_CHARS];
} transfer_header;

typedef enum phase { HEADER, SHAPED, PAYLOAD, FINISHED } phase;

struct ct_transfer_state {
  transfer_header header;
  ct_cluster_request header_request, payload_request;
  void *scratch; /* a discarded receive's bytes */
  phase phase;
};

int ct_plan_transfers_init(ct_plan *p) {
  p->transfer_state = calloc((size_t)p->n_transfers, sizeof *p->transfer_state);
  return p->transfer_state == NULL;
}

int ct_plan_transfers_begin(ct_plan *p, ct_status *status) {
  p->runs++;
  for (int t = 0; t < p->n_transfers; ++t) {
    const ct_plan_step *step = &p->steps[p->transfer_steps[t]];
    struct ct_transfer_state *state = &p->transfer_state[t];
    state->phase = HEADER;
    if (step->transfer == CT_TRANSFER_RECV &&
        ct_cluster_edge_irecv(&state->header, sizeof state->header, step->peer,
                              ct_transfer_tag(step->edge, p->runs, 0), &state->header_request,
                              status)) {
      while (t-- > 0) ct_cluster_cancel(&p->transfer_state[t].header_request);
      return 1;
    }
  }
  return 0;
}

int ct_plan_transfer_send(ct_plan *p, int t, const ct_status *failure, ct_status *status) {
  const ct_plan_step *step = &p->steps[p->transfer_steps[t]];
  struct ct_transfer_state *state = &p->transfer_state[t];
  transfer_header *h = &state->header;
  memset(h, 0, sizeof *h);
  const ct_tensor *value = step->n_inputs ? &p->values[step->input_slots[0]] : NULL;
  if (failure) {
    h->failed = 1;
    h->code = (int32_t)failure->code;
    snprintf(h->message, sizeof h->message, "%.*s", MESSAGE_CHARS - 1, failure->message);
  } else if (value) {
    h->dtype = (int32_t)value->dtype;
    h->rank = value->shape.rank;
    for (int d = 0; d < value->shape.rank; ++d) h->dims[d] = value->shape.dims[d];
  }
  if (ct_cluster_edge_isend(h, sizeof *h, step->peer, ct_transfer_tag(step->edge, p->runs, 0),
                            &state->header_request, status))
    return 1;
  const size_t bytes = value && !failure ? ct_tensor_nbytes(value) : 0;
  return bytes > 0 && ct_cluster_edge_isend(value->data, bytes, step->peer,
                                            ct_transfer_tag(step->edge, p->runs, 1),
                                            &state->payload_request, status);
}

/* A header's value: its dtype and shape, checked. */
static int read_header(ct_plan *p, const ct_plan_step *step, const transfer_header *h,
                       ct_status *status) {
  ct_tensor *value = &p->values[step->first_slot];
  int ok = h->rank >= 0 && h->rank <= CT_MAX_RANK && h->dtype >= 0 && h->dtype < CT_DTYPE_COUNT;
  value->shape.rank = ok ? h->rank : 0;
  for (int d = 0; ok && d < h->rank; ++d) {
    ok = h->dims[d] >= 0;
    value->shape.dims[d] = h->dims[d];
  }
  value->dtype = (ct_dtype)(ok ? h->dtype : 0);
  value->owns_data = 0;
  if (ok && ct_tensor_nbytes(value) < (size_t)1 << 31) return 0;
  ct_status_set(status, CT_DATA_LOSS,
                "%s: rank %d sent a header this process cannot read (dtype %d, rank %d), or a "
                "value of 2 GiB or more; every rank must run the same ctower",
                step->copy_name, step->peer, (int)h->dtype, (int)h->rank);
  return 1;
}

/* The code a peer's failure came with; INTERNAL for one that is no code. */
static ct_code peer_code(int32_t code) {
  return code > CT_OK && code <= CT_CANCELLED ? (ct_code)code : CT_INTERNAL;
}

static int completed(ct_cluster_request *request, ct_status *status, int *error) {
  int done = 0;
  if (ct_cluster_test(request, &done, status)) *error = 1;
  return done;
}

ct_transfer_event ct_plan_transfer_poll(ct_plan *p, int t, ct_status *status) {
  const ct_plan_step *step = &p->steps[p->transfer_steps[t]];
  struct ct_transfer_state *state = &p->transfer_state[t];
  int error = 0;
  switch (state->phase) {
    case HEADER:
      if (!completed(&state->header_request, status, &error)) return CT_TRANSFER_PENDING;
      if (error) break;
      if (step->transfer == CT_TRANSFER_SEND) {
        state->phase = PAYLOAD;
        return ct_plan_transfer_poll(p, t, status);
      }
      if (state->header.failed) {
        state->phase = FINISHED;
        state->header.message[MESSAGE_CHARS - 1] = '\0';
        ct_status_set(status, peer_code(state->header.code),
                      "%s: the run failed on rank %d (%s/task:%d): %s", step->copy_name, step->peer,
                      ct_cluster_job_of(step->peer), ct_cluster_task_of(step->peer),
                      state->header.message);
        return CT_TRANSFER_PEER_FAILED;
      }
      if (step->n_outputs == 0) { /* a control edge's signal */
        state->phase = FINISHED;
        return CT_TRANSFER_DONE;
      }
      if (read_header(p, step, &state->header, status)) break;
      state->phase = SHAPED;
      return CT_TRANSFER_SHAPED;
    case PAYLOAD:
      if (!completed(&state->payload_request, status, &error)) return CT_TRANSFER_PENDING;
      free(state->scratch);
      state->scratch = NULL;
      if (error) break;
      state->phase = FINISHED;
      return CT_TRANSFER_DONE;
    case SHAPED:
    case FINISHED:
      return CT_TRANSFER_PENDING;
  }
  state->phase = FINISHED;
  return CT_TRANSFER_ERROR;
}

int ct_plan_transfer_receive(ct_plan *p, int t, int discard, ct_status *status) {
  const ct_plan_step *step = &p->steps[p->transfer_steps[t]];
  struct ct_transfer_state *state = &p->transfer_state[t];
  const ct_tensor *value = &p->values[step->first_slot];
  const size_t bytes = ct_tensor_nbytes(value);
  void *into = value->data;
  state->phase = PAYLOAD;
  if (bytes == 0) return 0;
  if (discard && (into = state->scratch = malloc(bytes)) == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory receiving %s",
                  step->copy_name);
    state->phase = FINISHED;
    return 1;
  }
  return ct_cluster_edge_irecv(into, bytes, step->peer, ct_transfer_tag(step->edge, p->runs, 1),
                               &state->payload_request, status);
}
