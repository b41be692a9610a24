/* MatMul through oneDNN (row-major, on the device's OpenMP team): its sgemm
 * in fp32; on a device that computes in bfloat16 (ct_cpu) a matmul
 * primitive whose inputs are rounded to bfloat16 and whose products are
 * summed in fp32. */
#include <stdlib.h>
#include <string.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"

enum { ARG_A, ARG_B, ARG_C, N_ARGS };

typedef struct matmul_state {
  int64_t key[5]; /* m, n, k, transpose_a, transpose_b */
  dnnl_primitive_t prim;
  ct_dnnl_arg args[N_ARGS];
} matmul_state;

static void matmul_state_free(void *data) {
  matmul_state *s = data;
  if (s == NULL) return;
  if (s->prim) dnnl_primitive_destroy(s->prim);
  for (int i = 0; i < N_ARGS; ++i) ct_dnnl_arg_free(&s->args[i]);
  free(s);
}

/* The bf16 matmul primitive for C[m, n] = op(A) op(B), an operand stored
 * transposed being described as such ("ba") rather than moved. */
static matmul_state *matmul_state_make(ct_kernel_ctx *ctx, const int64_t key[5]) {
  const int64_t m = key[0], n = key[1], k = key[2];
  const int64_t dims[N_ARGS][2] = {{m, k}, {k, n}, {m, n}};
  const dnnl_format_tag_t tags[N_ARGS] = {key[3] ? dnnl_ba : dnnl_ab, key[4] ? dnnl_ba : dnnl_ab,
                                          dnnl_ab};
  dnnl_memory_desc_t user_md[N_ARGS], md[N_ARGS];
  /* a plain descriptor's strides count elements: the same for f32 and bf16 */
  for (int i = 0; i < N_ARGS; ++i) {
    user_md[i] = ct_dnnl_md(2, dims[i], tags[i]);
    md[i] = user_md[i];
    if (i != ARG_C) md[i].data_type = dnnl_bf16;
  }
  matmul_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in MatMul");
    return NULL;
  }
  memcpy(s->key, key, sizeof s->key);
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd = NULL;
  int failed =
      ct_dnnl_check(ctx, dnnl_matmul_desc_init(&desc, &md[ARG_A], &md[ARG_B], NULL, &md[ARG_C]),
                    "bf16 matmul descriptor") ||
      ct_dnnl_check(ctx,
                    dnnl_primitive_desc_create(&pd, &desc, NULL, ct_cpu_of(ctx->device)->engine,
                                               NULL),
                    "bf16 matmul primitive descriptor") ||
      ct_dnnl_primitive_create(ctx, &s->prim, pd, "bf16 matmul primitive");
  for (int i = 0; i < N_ARGS && !failed; ++i)
    failed = ct_dnnl_arg_make(ctx, &s->args[i], &user_md[i], &md[i], i == ARG_C);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (failed) {
    matmul_state_free(s);
    return NULL;
  }
  return s;
}

static void matmul_bf16(ct_kernel_ctx *ctx, const int64_t key[5]) {
  matmul_state *s = ctx->state->data;
  if (s == NULL || memcmp(s->key, key, sizeof s->key) != 0) {
    matmul_state_free(s);
    s = ctx->state->data = matmul_state_make(ctx, key);
    ctx->state->free_fn = matmul_state_free;
    if (s == NULL) return;
  }
  void *data[N_ARGS] = {ctx->inputs[0].data, ctx->inputs[1].data, ctx->outputs[0].data};
  dnnl_memory_t mems[N_ARGS];
  if (ct_dnnl_args_bind(ctx, s->args, N_ARGS, data, mems)) return;
  dnnl_exec_arg_t args[N_ARGS] = {
      {DNNL_ARG_SRC, mems[ARG_A]}, {DNNL_ARG_WEIGHTS, mems[ARG_B]}, {DNNL_ARG_DST, mems[ARG_C]}};
  ct_dnnl_execute(ctx, s->prim, N_ARGS, args);
}

void ct_cpu_matmul(ct_kernel_ctx *ctx) {
  const ct_shape *a = &ctx->inputs[0].shape, *b = &ctx->inputs[1].shape;
  const int ta = ctx->attrs->matmul.transpose_a != 0, tb = ctx->attrs->matmul.transpose_b != 0;
  const int64_t m = a->dims[ta], k = a->dims[1 - ta], n = b->dims[1 - tb];
  float *c = ct_out_f32(ctx, 0);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = 0.0f;
    return;
  }
  if (ct_cpu_of(ctx->device)->bf16) {
    const int64_t key[5] = {m, n, k, ta, tb};
    matmul_bf16(ctx, key);
    return;
  }
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, ct_in_f32(ctx, 0),
                                a->dims[1], ct_in_f32(ctx, 1), b->dims[1], 0.0f, c, n);
  ct_dnnl_check(ctx, st, "sgemm");
}
