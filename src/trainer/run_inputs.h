/* What a run of the trainer starts from (trainer_options.c, run_inputs.c):
 * its options checked, its model, its datasets, their batches and the
 * input pipeline. */
#ifndef CTOWER_TRAINER_RUN_INPUTS_H
#define CTOWER_TRAINER_RUN_INPUTS_H

#include <stdint.h>

#include "ctower/data.h"
#include "ctower/models.h"
#include "ctower/trainer.h"

/* INVALID_ARGUMENT naming the first option out of range (an unknown model,
 * a batch size, epoch or step count, or learning rate out of range);
 * returns 1 then. */
int ct_trainer_check_options(const ct_trainer_options *options, ct_status *status);

/* The model the options name: their layer list, a model of their shared
 * library, or the zoo's. Returns 0 or fills status; close it (after the
 * graphs built from it are freed) either way. */
typedef struct ct_trainer_model {
  ct_model_def def;
  ct_model_library *library; /* NULL unless model_library is set */
} ct_trainer_model;
int ct_trainer_model_open(const ct_trainer_options *options, ct_trainer_model *model,
                          ct_status *status);
void ct_trainer_model_close(ct_trainer_model *model);

/* The training (train = 1) or test split of the dataset the options name. */
ct_dataset *ct_trainer_open_dataset(const ct_trainer_options *options, int train,
                                    ct_status *status);

/* A batch of images and labels, sized for the largest batch. */
typedef struct ct_batch_buffers {
  ct_tensor *images, *labels;
} ct_batch_buffers;

int ct_batch_buffers_init(ct_batch_buffers *buffers, int64_t batch, int64_t h, int64_t w,
                          int64_t c, ct_status *status);

/* dataset.augment, or NULL when it changes nothing. */
const ct_augment_options *ct_trainer_augment(const ct_trainer_options *options);

/* A pipeline of dataset.threads workers and dataset.prefetch batches over
 * ds in batches of `batch`: training's (train != 0: shuffled as
 * dataset.shuffle says, augmented with random draws) or evaluation's (in
 * order, the central crop and standardization). rows gives the split this
 * process reads by and max_rows (threads and prefetch are set here).
 * NULL with status when it cannot start. */
ct_pipeline *ct_trainer_open_pipeline(const ct_trainer_options *options, const ct_dataset *ds,
                                      int64_t batch, int train, ct_pipeline_options rows,
                                      ct_status *status);

/* The shape of the images the model sees: the dataset's, cropped as
 * dataset.augment.crop asks (training and evaluation alike). */
void ct_trainer_image_shape(const ct_trainer_options *options, const ct_dataset *dataset,
                            int64_t *h, int64_t *w, int64_t *c);
void ct_batch_buffers_free(ct_batch_buffers *buffers);

#endif
