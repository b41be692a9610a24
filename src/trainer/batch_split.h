/* How each global batch is split over the job's towers (batch_split.c).
 * The input pipeline reads this process's rows of every batch, split once
 * from the job's towers (ct_tower_split_parts); a step feeds each of its
 * towers the rows the batch came with, or, under split: auto, this
 * process's rows in proportion to its towers' measured speeds. */
#ifndef CTOWER_TRAINER_BATCH_SPLIT_H
#define CTOWER_TRAINER_BATCH_SPLIT_H

#include <stdint.h>

#include "ctower/data.h"
#include "ctower/session.h"
#include "ctower/towers.h"

/* split: auto: each tower's speed, measured from the busy time of its
 * device in the steps' timelines. */
typedef struct ct_tower_speeds {
  int on;                        /* split: auto, over several towers of one process */
  int device[CT_MAX_DEVICES];    /* each tower's device in the session, -1 until known */
  double speeds[CT_MAX_DEVICES]; /* examples/s of each tower, smoothed; 0 until measured */
} ct_tower_speeds;

typedef struct ct_tower_split {
  /* the job's towers: this process's are first_tower .. first_tower +
   * job_towers - 1 of global_towers, in rank order (a process on its
   * own: 0 .. of its own; a ps task has none) */
  int first_tower, global_towers, job_towers;
  /* the last batch's */
  ct_batch_share share;          /* this process's rows of the global batch */
  int64_t rows;                  /* how many: the sum of sizes */
  int64_t sizes[CT_MAX_DEVICES]; /* each of this process's towers' rows */
} ct_tower_split;

/* Places this process's towers (towers->n_towers, none on a ps task)
 * among the job's: the ranks' tower counts, gathered (towers that sum
 * nothing across the ranks are a job of their own). Returns 0 or fills
 * status. */
int ct_tower_split_place(ct_tower_split *split, const ct_tower_options *towers, ct_status *status);

/* The split the input pipeline reads by: the job's towers, this
 * process's of them. */
ct_batch_parts ct_tower_split_parts(const ct_tower_split *split);

/* The split of the batch the pipeline handed out: its rows as they came,
 * or by the measured speeds (speeds NULL: none). */
void ct_tower_split_take(ct_tower_split *split, const ct_pipeline_batch *batch,
                         const ct_tower_speeds *speeds);

/* The split of a batch of n examples the pipeline would read, as
 * ct_tower_split_take would make it (to predict a step). */
void ct_tower_split_predict(ct_tower_split *split, int64_t n, const ct_tower_speeds *speeds);

/* Speeds not measured yet; on: split: auto. */
void ct_tower_speeds_init(ct_tower_speeds *speeds, int on);

/* Takes in the step just run (its timeline recorded) on the split's
 * sizes: each tower's speed is its rows over its device's busy time
 * (ct_run_metadata_device_busy_us), smoothed. A tower's device is where
 * the session placed tower_nodes[k]. */
void ct_tower_speeds_update(ct_tower_speeds *speeds, ct_session *session,
                            ct_node *const *tower_nodes, const ct_tower_split *split,
                            const ct_run_metadata *timeline);

#endif
