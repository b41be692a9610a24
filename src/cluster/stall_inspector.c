/* The stall inspector (ctower/cluster.h): a thread that sends this rank's
 * progress (mpi_job.h's heartbeat) to every other rank twice a second, on a
 * communicator of its own, and watches theirs; when a rank stays in a
 * collective, or a rank goes silent, for the timeout, it names the ranks
 * that hold the others up and ends the job. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cluster/communication.h"
#include "cluster/mpi_job.h"
#include "core/clock.h"

enum { HEARTBEAT_TAG = 17 };

/* The stall inspector's state: one heartbeat in and one out per rank. */
typedef struct inspector {
  double timeout_s;
  ct_heartbeat *in, *out, *seen; /* seen[r]: rank r's latest (this rank's own too) */
  MPI_Request *recv, *send;
  double *heard, *since; /* when rank r was last heard, and entered its state */
  pthread_t thread;
  atomic_int stop;
} inspector;

static inspector *running; /* NULL: not started */

int ct_stall_inspector_running(void) { return running != NULL; }

/* "all-reduce bucket 3 of step 12", "broadcast for checkpoint", ... */
static void describe(const ct_heartbeat *h, char *buf, size_t size) {
  if (h->collectives == 0) {
    snprintf(buf, size, "no collective yet");
    return;
  }
  int n = h->bucket >= 0 ? snprintf(buf, size, "%s bucket %d", h->op, (int)h->bucket)
          : h->what[0]   ? snprintf(buf, size, "%s for %s", h->op, h->what)
                         : snprintf(buf, size, "%s", h->op);
  if (h->step >= 0 && n >= 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, " of step %lld", (long long)h->step);
}

/* Appends the printf-formatted text to buf (size bytes, *used of them
 * taken), truncating at its end. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int w = vsnprintf(buf + *used, size - *used, fmt, args);
  va_end(args);
  if (w > 0) *used = *used + (size_t)w < size ? *used + (size_t)w : size - 1;
}

/* Prints, as this rank sees it, which ranks have not reached the collective
 * that others wait in (or have gone silent), and ends the job. */
static void report_stall(const inspector *in, double now) {
  char msg[4096], lagging[512] = "", waiting[512] = "", waited[160] = "", last[160];
  size_t used = 0, lag_used = 0, wait_used = 0;
  int waiting_in = -1, laggards = 0, waiters = 0;
  for (int r = 0; r < ct_mpi.size; ++r)
    if (in->seen[r].inside &&
        (waiting_in < 0 || in->seen[r].collectives > in->seen[waiting_in].collectives))
      waiting_in = r;
  if (waiting_in >= 0) describe(&in->seen[waiting_in], waited, sizeof waited);
  const int64_t target = waiting_in >= 0 ? in->seen[waiting_in].collectives : 0;
  msg[0] = '\0';
  for (int r = 0; r < ct_mpi.size; ++r) {
    const int silent = r != ct_mpi.rank && now - in->heard[r] >= in->timeout_s;
    const int behind = waiting_in >= 0 && in->seen[r].collectives < target;
    if (waiting_in >= 0 && in->seen[r].inside && in->seen[r].collectives == target)
      append(waiting, sizeof waiting, &wait_used, "%s%d", waiters++ ? ", " : "", r);
    if (!silent && !behind) continue;
    describe(&in->seen[r], last, sizeof last);
    if (behind)
      append(msg, sizeof msg, &used, "%srank %d has not reached %s (its last: %s",
             laggards ? "; " : "", r, waited, last);
    else
      append(msg, sizeof msg, &used, "%srank %d has sent nothing (its last: %s",
             laggards ? "; " : "", r, last);
    if (silent) append(msg, sizeof msg, &used, "; silent for %.0f s", now - in->heard[r]);
    append(msg, sizeof msg, &used, ")");
    append(lagging, sizeof lagging, &lag_used, "%s%d", laggards++ ? ", " : "", r);
  }
  if (laggards == 0)
    append(msg, sizeof msg, &used, "every rank has waited in %s for %.0f s", waited, in->timeout_s);
  else if (waiters > 0)
    append(msg, sizeof msg, &used, "; rank%s %s %s there", waiters > 1 ? "s" : "", waiting,
           waiters > 1 ? "wait" : "waits");
  fprintf(stderr,
          "%sctower: error: stalled for %.0f s: %s. Check rank%s %s (stopped, or stuck in a long "
          "step), or raise cluster.stall_timeout_s\n",
          ct_cluster_log_prefix(), in->timeout_s, msg, laggards == 1 ? "" : "s",
          laggards ? lagging : "every");
  /* One rank ends the job: the lowest that still answers, so that the job
   * ends the same way whichever ranks saw the stall; the others wait to be
   * ended, and end the job themselves if that does not come. */
  int aborter = ct_mpi.rank;
  for (int r = 0; r < ct_mpi.rank; ++r)
    if (now - in->heard[r] < in->timeout_s &&
        !(waiting_in >= 0 && in->seen[r].collectives < target)) {
      aborter = r;
      break;
    }
  /* the aborter too waits a moment: the launcher forwards every rank's
   * report above before it ends the ranks (on a loaded machine one was
   * lost otherwise) */
  sleep(aborter != ct_mpi.rank ? 5 : 1);
  ct_cluster_abort(1);
}

/* For an MPI call of the inspector that failed: the heartbeats are lost, so
 * no stall could be seen any more; the job ends. */
static void inspector_failed(int err, const char *call) {
  ct_status status = CT_STATUS_INIT;
  ct_mpi_failed(err, call, &status);
  fprintf(stderr, "%sctower: error: the stall inspector stopped: %s\n", ct_cluster_log_prefix(),
          status.message);
  ct_cluster_abort(1);
}

/* Records a heartbeat of rank r heard at `now`. */
static void note(inspector *in, int r, const ct_heartbeat *h, double now) {
  if (h->collectives != in->seen[r].collectives || h->inside != in->seen[r].inside)
    in->since[r] = now;
  in->seen[r] = *h;
  in->heard[r] = now;
}

static void inspect_once(inspector *in) {
  const double now = ct_monotonic_seconds();
  const int n = (int)sizeof(ct_heartbeat);
  for (int r = 0; r < ct_mpi.size; ++r) {
    if (r == ct_mpi.rank) continue;
    for (;;) {
      int done = 0, err = MPI_Test(&in->recv[r], &done, MPI_STATUS_IGNORE);
      if (err != MPI_SUCCESS) inspector_failed(err, "receiving a heartbeat");
      if (!done) break;
      note(in, r, &in->in[r], now);
      err =
          MPI_Irecv(&in->in[r], n, MPI_BYTE, r, HEARTBEAT_TAG, ct_mpi.heartbeat_comm, &in->recv[r]);
      if (err != MPI_SUCCESS) inspector_failed(err, "receiving a heartbeat");
    }
  }
  pthread_mutex_lock(&ct_mpi.lock);
  ct_heartbeat mine = ct_mpi.mine;
  const double entered_at = ct_mpi.entered_at;
  pthread_mutex_unlock(&ct_mpi.lock);
  mine.seq = in->seen[ct_mpi.rank].seq + 1;
  in->seen[ct_mpi.rank] = mine;
  in->heard[ct_mpi.rank] = now;
  in->since[ct_mpi.rank] = entered_at;
  for (int r = 0; r < ct_mpi.size; ++r) {
    if (r == ct_mpi.rank) continue;
    int idle = 0, err = MPI_Test(&in->send[r], &idle, MPI_STATUS_IGNORE);
    if (err == MPI_SUCCESS && idle) {
      in->out[r] = mine;
      err = MPI_Isend(&in->out[r], n, MPI_BYTE, r, HEARTBEAT_TAG, ct_mpi.heartbeat_comm,
                      &in->send[r]);
    }
    if (err != MPI_SUCCESS) inspector_failed(err, "sending a heartbeat");
  }
  for (int r = 0; r < ct_mpi.size; ++r) {
    const int silent = r != ct_mpi.rank && now - in->heard[r] >= in->timeout_s;
    const int stuck = in->seen[r].inside && now - in->since[r] >= in->timeout_s;
    if (silent || stuck) report_stall(in, now);
  }
}

static void *inspector_main(void *arg) {
  inspector *in = arg;
  const struct timespec tick = {0, 50 * 1000 * 1000};
  while (!atomic_load(&in->stop)) {
    inspect_once(in);
    for (int i = 0; i < 10 && !atomic_load(&in->stop); ++i) nanosleep(&tick, NULL);
  }
  return NULL;
}

static void inspector_free(inspector *in) {
  free(in->in);
  free(in->out);
  free(in->seen);
  free(in->recv);
  free(in->send);
  free(in->heard);
  free(in->since);
  free(in);
}

/* Cancels the pending receives, completes the sends (heartbeats are small:
 * MPI has sent them already) and frees the inspector. */
static void inspector_end(inspector *in) {
  for (int r = 0; r < ct_mpi.size; ++r) {
    if (in->recv[r] != MPI_REQUEST_NULL) {
      MPI_Cancel(&in->recv[r]);
      MPI_Wait(&in->recv[r], MPI_STATUS_IGNORE);
    }
    if (in->send[r] != MPI_REQUEST_NULL) MPI_Wait(&in->send[r], MPI_STATUS_IGNORE);
  }
  inspector_free(in);
}

void ct_stall_inspector_stop(void) {
  inspector *in = running;
  if (in == NULL) return;
  atomic_store(&in->stop, 1);
  pthread_join(in->thread, NULL);
  inspector_end(in);
  running = NULL;
}

int ct_cluster_start_stall_inspector(double timeout_s, ct_status *status) {
  if (!ct_mpi.mpi || ct_mpi.size < 2 || timeout_s <= 0 || running != NULL) return 0;
  if (!ct_mpi.thread_multiple) {
    ct_status_set(status, CT_UNAVAILABLE,
                  "the stall inspector needs MPI_THREAD_MULTIPLE, which this MPI does not "
                  "provide; set cluster.stall_timeout_s: 0 to run without it");
    return 1;
  }
  const size_t n = (size_t)ct_mpi.size;
  inspector *in = calloc(1, sizeof *in);
  if (in != NULL) {
    in->in = calloc(n, sizeof *in->in);
    in->out = calloc(n, sizeof *in->out);
    in->seen = calloc(n, sizeof *in->seen);
    in->recv = malloc(n * sizeof *in->recv);
    in->send = malloc(n * sizeof *in->send);
    in->heard = malloc(n * sizeof *in->heard);
    in->since = malloc(n * sizeof *in->since);
  }
  if (in == NULL || !in->in || !in->out || !in->seen || !in->recv || !in->send || !in->heard ||
      !in->since) {
    if (in) inspector_free(in);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory starting the stall inspector");
    return 1;
  }
  in->timeout_s = timeout_s;
  atomic_init(&in->stop, 0);
  const double now = ct_monotonic_seconds();
  int err = MPI_SUCCESS;
  for (int r = 0; r < ct_mpi.size; ++r) {
    in->seen[r].step = -1;
    in->seen[r].bucket = -1;
    in->heard[r] = in->since[r] = now;
    in->send[r] = in->recv[r] = MPI_REQUEST_NULL;
    if (r != ct_mpi.rank && err == MPI_SUCCESS)
      err = MPI_Irecv(&in->in[r], (int)sizeof(ct_heartbeat), MPI_BYTE, r, HEARTBEAT_TAG,
                      ct_mpi.heartbeat_comm, &in->recv[r]);
  }
  if (ct_mpi_failed(err, "starting the stall inspector", status)) {
    inspector_end(in);
    return 1;
  }
  if (pthread_create(&in->thread, NULL, inspector_main, in) != 0) {
    inspector_end(in);
    ct_status_set(status, CT_UNAVAILABLE, "could not start the stall inspector's thread");
    return 1;
  }
  running = in;
  return 0;
}
