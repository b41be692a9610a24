/* The batch split over the job's towers and split: auto's speeds: see
 * batch_split.h. */
#include "trainer/batch_split.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"

int ct_tower_split_place(ct_tower_split *s, const ct_tower_options *towers, ct_status *status) {
  memset(s, 0, sizeof *s);
  const int alone = !towers->across_ranks && ct_cluster_ps_tasks() == 0;
  s->job_towers = ct_cluster_is_ps() ? 0 : towers->n_towers;
  const int ranks = alone ? 1 : ct_cluster_size(), rank = alone ? 0 : ct_cluster_rank();
  int *counts = calloc((size_t)ranks, sizeof *counts);
  if (counts == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory setting up the towers");
    return 1;
  }
  const int failed = alone ? (counts[0] = s->job_towers, 0)
                           : ct_cluster_allgather(&s->job_towers, sizeof(int), counts, status);
  for (int k = 0; !failed && k < ranks; ++k) {
    if (k < rank) s->first_tower += counts[k];
    s->global_towers += counts[k];
  }
  free(counts);
  return failed;
}

ct_batch_parts ct_tower_split_parts(const ct_tower_split *s) {
  return (ct_batch_parts){s->global_towers, s->first_tower, s->job_towers, 0};
}

/* Whether every tower's speed is measured (speeds then split the rows). */
static int measured(const ct_tower_speeds *speeds, int towers) {
  int all = speeds && speeds->on;
  for (int k = 0; all && k < towers; ++k) all = speeds->speeds[k] > 0;
  return all;
}

/* This process's `rows` of a batch of count examples from `first`, split
 * as `sizes` says or by the measured speeds. */
static void take_rows(ct_tower_split *s, int64_t count, int64_t first, int64_t rows,
                      const int64_t *sizes, const ct_tower_speeds *speeds) {
  s->share = (ct_batch_share){count, first};
  s->rows = rows;
  if (measured(speeds, s->job_towers)) /* within one process: its rows are the batch */
    ct_towers_split(s->job_towers, rows, speeds->speeds, s->sizes);
  else
    memcpy(s->sizes, sizes, (size_t)s->job_towers * sizeof *sizes);
}

void ct_tower_split_take(ct_tower_split *s, const ct_pipeline_batch *batch,
                         const ct_tower_speeds *speeds) {
  take_rows(s, batch->count, batch->first, batch->rows, batch->sizes, speeds);
}

void ct_tower_split_predict(ct_tower_split *s, int64_t n, const ct_tower_speeds *speeds) {
  const ct_batch_parts parts = ct_tower_split_parts(s);
  int64_t first, sizes[CT_MAX_DEVICES + 1];
  const int64_t rows = ct_batch_parts_rows(&parts, n, &first, sizes);
  take_rows(s, n, first, rows, sizes, speeds);
}

void ct_tower_speeds_init(ct_tower_speeds *speeds, int on) {
  memset(speeds, 0, sizeof *speeds);
  speeds->on = on;
  for (int k = 0; k < CT_MAX_DEVICES; ++k) speeds->device[k] = -1;
}

void ct_tower_speeds_update(ct_tower_speeds *speeds, ct_session *session,
                            ct_node *const *tower_nodes, const ct_tower_split *split,
                            const ct_run_metadata *timeline) {
  for (int k = 0; k < split->job_towers; ++k) {
    ct_status ignored = CT_STATUS_INIT; /* unplaced: the tower is not measured yet */
    if (speeds->device[k] < 0 &&
        ct_session_node_placement(session, tower_nodes[k], &speeds->device[k], NULL, &ignored))
      speeds->device[k] = -1;
    const double busy =
        speeds->device[k] < 0 ? 0 : ct_run_metadata_device_busy_us(timeline, speeds->device[k]);
    if (busy <= 0 || split->sizes[k] == 0) continue;
    const double speed = (double)split->sizes[k] / busy;
    speeds->speeds[k] = speeds->speeds[k] > 0 ? 0.8 * speeds->speeds[k] + 0.2 * speed : speed;
  }
}
