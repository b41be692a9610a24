/* The kernel interface: what a kernel receives when the executor runs a node.
 *
 * Kernels take their outputs already allocated (shapes from the op's shape
 * rule) and never allocate on their own: temporary memory comes from
 * ct_kernel_scratch, which draws on the device's allocator. */
#ifndef CTOWER_KERNEL_H
#define CTOWER_KERNEL_H

#include "ctower/device_name.h"
#include "graph/graph_internal.h"

struct ct_device;

/* State a kernel keeps for its node across runs (e.g. oneDNN primitives
 * created for the current shapes). Freed with the session's plan. */
typedef struct ct_kernel_state {
  void *data;
  void (*free_fn)(void *data);
} ct_kernel_state;

typedef struct ct_kernel_ctx {
  const ct_node *node;
  const ct_attrs *attrs;
  int n_inputs;
  ct_tensor *inputs;        /* headers over the input buffers */
  int n_outputs;
  ct_tensor *outputs;       /* allocated, shapes set; contents undefined */
  struct ct_device *device;
  int threads;              /* the device's worker threads */
  uint64_t step;            /* the session step (random streams) */
  ct_kernel_state *state;
  ct_status *status;        /* a kernel that fails fills it */
  void *scratch[4];         /* ct_kernel_scratch blocks, freed after the call */
  int n_scratch;
  struct ct_device **input_devices; /* where each input lives (NULL: host memory); only a
                                       multi-device op reads inputs off its own device */
  void **output_marks; /* per output, NULL on entry: a GPU kernel whose last writes to an
                          output are queued on another stream than its device's compute
                          stream leaves a mark recorded after them here (ct_device_mark_*),
                          and every later reader of the output waits for it */
} ct_kernel_ctx;

typedef void (*ct_kernel_fn)(ct_kernel_ctx *ctx);

/* A kernel's scratch rule: the blocks (at most 4, their sizes into bytes[])
 * that one call of the kernel (with attrs) on device asks ct_kernel_scratch
 * for, estimated from its shapes (all dims known), so that `ctower plan` can
 * add them to a step's memory. Returns how many. */
typedef int (*ct_kernel_scratch_fn)(const struct ct_device *device, const ct_attrs *attrs,
                                    const ct_shape *in_shapes, int n_inputs,
                                    const ct_shape *out_shapes, size_t bytes[4]);

typedef struct ct_kernel_def {
  const char *op;
  ct_device_kind device_kind; /* the device type it runs on (ct_device_ops.kind) */
  ct_kernel_fn fn;
  ct_kernel_scratch_fn scratch; /* every kernel names one: its own rule, or one of the two below */
} ct_kernel_def;

/* The scratch rule of a kernel that asks ct_kernel_scratch for nothing. */
int ct_kernel_no_scratch(const struct ct_device *device, const ct_attrs *attrs,
                         const ct_shape *in_shapes, int n_inputs, const ct_shape *out_shapes,
                         size_t bytes[4]);
/* The scratch rule of a kernel whose scratch the plan leaves out (counts as
 * none): the GPU kernels, and small per-channel or per-thread blocks. */
int ct_kernel_scratch_not_estimated(const struct ct_device *device, const ct_attrs *attrs,
                                    const ct_shape *in_shapes, int n_inputs,
                                    const ct_shape *out_shapes, size_t bytes[4]);

/* The kernel definition for (op, device type), or NULL when that device
 * cannot run it. */
const ct_kernel_def *ct_kernel_lookup(const char *op, ct_device_kind device_kind);

/* The kernel for (op, device type), or NULL when that device cannot run it. */
ct_kernel_fn ct_kernel_find(const char *op, ct_device_kind device_kind);

/* Temporary memory for the running kernel, freed when it returns. NULL (and
 * ctx->status set to RESOURCE_EXHAUSTED) when the device is out of memory. */
void *ct_kernel_scratch(ct_kernel_ctx *ctx, size_t nbytes);

/* The scratch blocks that one call of op's kernel on device asks for: its
 * kernel's scratch rule (0 when the device has no kernel for op). */
int ct_kernel_scratch_estimate(const char *op, const struct ct_device *device,
                               const ct_attrs *attrs, const ct_shape *in_shapes, int n_inputs,
                               const ct_shape *out_shapes, size_t bytes[4]);

/* Element count of input/output i. */
static inline int64_t ct_in_elements(const ct_kernel_ctx *ctx, int i) {
  return ct_shape_elements(&ctx->inputs[i].shape);
}
static inline float *ct_in_f32(const ct_kernel_ctx *ctx, int i) {
  return (float *)ctx->inputs[i].data;
}
static inline float *ct_out_f32(const ct_kernel_ctx *ctx, int i) {
  return (float *)ctx->outputs[i].data;
}

/* Minimum elements per thread before an elementwise loop goes parallel. */
enum { CT_PARALLEL_GRAIN = 32768 };

#endif
