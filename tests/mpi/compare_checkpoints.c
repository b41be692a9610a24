/* compare_checkpoints A B TOLERANCE [--a-in-b]: the largest difference
 * between two checkpoints' tensors of the same name, relative to the
 * largest magnitude of the tensor in A, printed; exit 0 when every tensor
 * of A is in B with its shape and within TOLERANCE (0: bitwise equal), and
 * B holds no other (with --a-in-b it may: a strategy's own state), else 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/checkpoint.h"

int main(int argc, char **argv) {
  const int a_in_b = argc == 5 && strcmp(argv[4], "--a-in-b") == 0;
  if (argc != 4 && !a_in_b) {
    fprintf(stderr, "usage: compare_checkpoints A.safetensors B.safetensors TOLERANCE "
                    "[--a-in-b]\n");
    return 2;
  }
  ct_status st = CT_STATUS_INIT;
  ct_checkpoint *a = ct_checkpoint_read(argv[1], &st);
  ct_checkpoint *b = a ? ct_checkpoint_read(argv[2], &st) : NULL;
  if (b == NULL) {
    fprintf(stderr, "compare_checkpoints: %s\n", st.message);
    ct_checkpoint_free(a);
    return 2;
  }
  const double tolerance = atof(argv[3]);
  double worst = 0;
  const char *worst_name = "";
  int failed = (!a_in_b && ct_checkpoint_count(a) != ct_checkpoint_count(b)) ||
               ct_checkpoint_count(a) == 0;
  for (int i = 0; i < ct_checkpoint_count(a) && !failed; ++i) {
    const char *name = ct_checkpoint_name(a, i);
    const ct_tensor *x = ct_checkpoint_find(a, name), *y = ct_checkpoint_find(b, name);
    if (y == NULL || x->dtype != CT_F32 || y->dtype != CT_F32 ||
        !ct_shape_equal(&x->shape, &y->shape)) {
      fprintf(stderr, "compare_checkpoints: '%s' differs in presence, dtype or shape\n", name);
      failed = 1;
      break;
    }
    double scale = 0, diff = 0;
    for (int64_t k = 0; k < ct_tensor_elements(x); ++k) {
      scale = fmax(scale, fabs(ct_tensor_f32(x)[k]));
      diff = fmax(diff, fabs((double)ct_tensor_f32(x)[k] - ct_tensor_f32(y)[k]));
    }
    const double relative = scale > 0 ? diff / scale : diff;
    if (relative > worst || (diff > 0 && worst == 0)) worst = relative, worst_name = name;
    if (tolerance == 0 ? diff != 0 : relative > tolerance) failed = 1;
  }
  printf("%d tensors, largest relative difference %.3g (%s)\n", ct_checkpoint_count(a), worst,
         worst_name);
  ct_checkpoint_free(a);
  ct_checkpoint_free(b);
  return failed;
}
