/* The layout of a dataset, shared by the files of src/data. */
#ifndef CTOWER_DATA_DATASET_INTERNAL_H
#define CTOWER_DATA_DATASET_INTERNAL_H

#include <stdint.h>

#include "ctower/data.h"

struct ct_dataset {
  int64_t n, h, w, c; /* examples and image shape (NHWC) */
  int num_classes;
  ct_tensor *images; /* u8, n * h * w * c bytes, example-major */
  ct_tensor *labels; /* u8 [n], each below num_classes */
};

#endif
