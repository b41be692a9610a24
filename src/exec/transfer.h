/* The messages of a run's sends and receives (the steps plan_edges.c
 * makes), driven by the executor's thread. */
#ifndef CTOWER_EXEC_TRANSFER_H
#define CTOWER_EXEC_TRANSFER_H
#include "exec/plan.h"

enum { CT_TRANSFER_RUN_TAGS = 4 };

/* A message's tag: the edge, the run (modulo CT_TRANSFER_RUN_TAGS: a run
 * ends only once its messages are matched, so runs that far apart never
 * meet) and the part (0: header, 1: bytes). */
static inline int ct_transfer_tag(int edge, uint64_t run, int part) {
  return (edge * CT_TRANSFER_RUN_TAGS + (int)(run % CT_TRANSFER_RUN_TAGS)) * 2 + part;
}

/* Room for the run state of the plan's n_transfers sends and receives
 * (pass 3b). Returns 0, or 1 when out of memory. */
int ct_plan_transfers_init(ct_plan *plan);
/* Readies the plan's sends and receives for a run and posts every receive's first message (the
 * value's dtype and shape, or the sender's failure). Returns 0 or fills
 * status. */
int ct_plan_transfers_begin(ct_plan *plan, ct_status *status);
/* Starts transfer t, a send: its input's value, or, when `failure` is not
 * NULL, that failure (the peer's run then fails naming it, instead of
 * waiting for a value that will not come). Returns 0 or fills status. */
int ct_plan_transfer_send(ct_plan *plan, int t, const ct_status *failure, ct_status *status);
typedef enum ct_transfer_event {
  CT_TRANSFER_PENDING,     /* nothing new */
  CT_TRANSFER_SHAPED,      /* a receive's header came: its value's dtype and shape are set;
                              bind its buffer, then ct_plan_transfer_receive */
  CT_TRANSFER_DONE,        /* the step is done */
  CT_TRANSFER_PEER_FAILED, /* the sender's run failed: status says how */
  CT_TRANSFER_ERROR        /* MPI failed: status says how */
} ct_transfer_event;
/* Advances transfer t without waiting. */
ct_transfer_event ct_plan_transfer_poll(ct_plan *plan, int t, ct_status *status);
/* Receives transfer t's value into its bound buffer; with `discard`, into a
 * scratch buffer that is dropped (its buffer could not be bound, and the
 * message must still be taken). Returns 0 or fills status. */
int ct_plan_transfer_receive(ct_plan *plan, int t, int discard, ct_status *status);

#endif
