/* Model libraries that misbehave, one per value of MISBEHAVIOUR (a build
 * of this file each, tests/CMakeLists.txt): `ctower train` must refuse each,
 * or name it when it crashes, and never train on it silently
 * (tests/cli/model_libraries.sh). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ctower/models.h"

#define HUGE_COUNT 1       /* a table claiming 100,000,000 models, with one */
#define NULL_MODELS 2      /* one model, and no array */
#define NEGATIVE_COUNT 3   /* -1 models */
#define CRASHING_BUILD 4   /* a build function that dereferences NULL */
#define ABORTING_BUILD 5   /* a build function that calls abort() */
#define GARBAGE_OUTPUT 6   /* a build function returning an output of no graph */
#define TOO_MANY_LOGITS 7  /* logits of num_classes + 2 */
#define CRASHING_LOAD 8    /* a constructor that dereferences NULL */
#define EXITING_LOAD 9     /* a constructor that calls exit(0) */
#define BAD_NAME 10        /* a model whose name points nowhere */
#define HUGE_VARIABLE 11   /* a build function making a variable of 2^62 elements */
#define REPEAT_INT_MAX 12  /* a layer list whose layer repeats INT_MAX times */
#define UNTERMINATED_DEVICE 13 /* a layer list whose layer device fills its field, no NUL */
#define LEAKED_DEVICE_SCOPE 14 /* a build function leaving its device scope /cpu:1 open */

/* A null pointer the compiler cannot see through (a volatile object read
 * at run time), so that writing through it is a real fault. */
static int *volatile nowhere;

__attribute__((unused)) static ct_output build_dense(ct_graph *g, ct_output images, int num_classes,
                                                    int training) {
  (void)training;
  switch (MISBEHAVIOUR) {
    case CRASHING_BUILD: *nowhere = 1; break;
    case ABORTING_BUILD: abort();
    case GARBAGE_OUTPUT: return (ct_output){(ct_node *)(intptr_t)0x1234, 0};
    case TOO_MANY_LOGITS: num_classes += 2; break;
    case HUGE_VARIABLE: {
      const ct_initializer zeros = {CT_INIT_ZEROS, 0.0f};
      ct_variable(g, "huge", ct_shape_of(2, (int64_t)1 << 31, (int64_t)1 << 31), zeros, 1);
      break;
    }
    case LEAKED_DEVICE_SCOPE: ct_graph_push_device(g, "/cpu:1"); break;
    default: break;
  }
  return ct_layer_dense(g, images, num_classes, CT_ACTIVATION_NONE, "logits");
}

#if MISBEHAVIOUR == CRASHING_LOAD || MISBEHAVIOUR == EXITING_LOAD
__attribute__((constructor)) static void on_load(void) {
  if (MISBEHAVIOUR == EXITING_LOAD) exit(0);
  *nowhere = 1;
}
#endif

#if MISBEHAVIOUR == REPEAT_INT_MAX || MISBEHAVIOUR == UNTERMINATED_DEVICE
/* flatten, then dense 10: its repeat, or its device, is the fault */
static ct_layer_list layers = {2, {{.type = CT_LAYER_FLATTEN, .repeat = 1},
                                   {.type = CT_LAYER_DENSE, .repeat = 1, .units = 10}}};
__attribute__((constructor)) static void fill_layers(void) {
  if (MISBEHAVIOUR == REPEAT_INT_MAX) layers.layers[1].repeat = INT_MAX;
  if (MISBEHAVIOUR == UNTERMINATED_DEVICE) memset(layers.layers[1].device, 'x', CT_LAYER_NAME);
}
static const ct_model_def models[] = {{"dense", "one dense layer", NULL, &layers}};
#else
static const ct_model_def models[] = {
    {MISBEHAVIOUR == BAD_NAME ? (const char *)(intptr_t)0x10 : "dense", "one dense layer",
     build_dense, NULL}};
#endif

__attribute__((visibility("default"))) const ct_model_exports ctower_model_exports = {
    CT_MODEL_ABI_VERSION,
    MISBEHAVIOUR == HUGE_COUNT ? 100000000 : MISBEHAVIOUR == NEGATIVE_COUNT ? -1 : 1,
    MISBEHAVIOUR == NULL_MODELS ? NULL : models};
