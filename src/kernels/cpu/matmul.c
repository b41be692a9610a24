/* MatMul through oneDNN (row-major, on the device's OpenMP team): its sgemm
 * in fp32, but a matmul primitive where B is transposed (A B^T, the gradient
 * of a dense layer's input: sgemm spreads it poorly over a team
 * (bench/RESULTS.md, "Behind the code's choices")); on a device that computes
 * in bfloat16 (ct_cpu) a matmul primitive whose inputs are rounded to
 * bfloat16 and whose products are summed in fp32.
 *
 * oneDNN's AVX2 sgemm (CPUs without AVX-512) slows down when the rows of B
 * lie a multiple of 1 KiB apart (every fourth row or closer in the same cache
 * set); with B first copied to rows 16 floats longer, the copy included, such
 * products take up to half the time (bench/RESULTS.md, "Behind the code's
 * choices"). There B is so copied first. Its AVX-512 sgemm does not care. */
#include <stdlib.h>
#include <string.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"

enum { ARG_A, ARG_B, ARG_C, N_ARGS };

typedef struct matmul_state {
  int64_t key[5]; /* m, n, k, transpose_a, transpose_b */
  dnnl_primitive_t prim;
  ct_dnnl_arg args[N_ARGS];
  ct_dnnl_scratchpad scratchpad;
} matmul_state;

static void matmul_state_free(void *data) {
  matmul_state *s = data;
  if (s == NULL) return;
  if (s->prim) dnnl_primitive_destroy(s->prim);
  for (int i = 0; i < N_ARGS; ++i) ct_dnnl_arg_free(&s->args[i]);
  ct_dnnl_scratchpad_free(&s->scratchpad);
  free(s);
}

/* The matmul primitive's descriptor on device for C[m, n] = op(A) op(B)
 * (key: m, n, k, transpose_a, transpose_b), an operand stored transposed
 * being described as such ("ba") rather than moved, its inputs in bf16 on
 * a device that computes in bf16; the arguments' layouts as the graph has
 * them (user_md) and as the primitive takes them (md). Returns the oneDNN
 * status. */
static dnnl_status_t matmul_desc_make(const ct_device *device, const int64_t key[5],
                                      dnnl_memory_desc_t user_md[N_ARGS],
                                      dnnl_memory_desc_t md[N_ARGS], dnnl_primitive_desc_t *pd) {
  const int64_t m = key[0], n = key[1], k = key[2];
  const int64_t dims[N_ARGS][2] = {{m, k}, {k, n}, {m, n}};
  const dnnl_format_tag_t tags[N_ARGS] = {key[3] ? dnnl_ba : dnnl_ab, key[4] ? dnnl_ba : dnnl_ab,
                                          dnnl_ab};
  /* a plain descriptor's strides count elements: the same for f32 and bf16 */
  for (int i = 0; i < N_ARGS; ++i) {
    user_md[i] = ct_dnnl_md(2, dims[i], tags[i]);
    md[i] = user_md[i];
    if (i != ARG_C && ct_cpu_of(device)->bf16) md[i].data_type = dnnl_bf16;
  }
  *pd = NULL;
  dnnl_primitive_attr_t attr = ct_dnnl_user_scratchpad();
  if (attr == NULL) return dnnl_out_of_memory;
  dnnl_matmul_desc_t desc;
  dnnl_status_t st = dnnl_matmul_desc_init(&desc, &md[ARG_A], &md[ARG_B], NULL, &md[ARG_C]);
  if (st == dnnl_success)
    st = dnnl_primitive_desc_create(pd, &desc, attr, ct_cpu_of(device)->engine, NULL);
  dnnl_primitive_attr_destroy(attr);
  return st;
}

static matmul_state *matmul_state_make(ct_kernel_ctx *ctx, const int64_t key[5]) {
  matmul_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in MatMul");
    return NULL;
  }
  memcpy(s->key, key, sizeof s->key);
  dnnl_memory_desc_t user_md[N_ARGS], md[N_ARGS];
  dnnl_primitive_desc_t pd = NULL;
  int failed = ct_dnnl_check(ctx, matmul_desc_make(ctx->device, key, user_md, md, &pd),
                             "matmul primitive descriptor") ||
               ct_dnnl_primitive_create(ctx, &s->prim, pd, "matmul primitive");
  for (int i = 0; i < N_ARGS && !failed; ++i)
    failed = ct_dnnl_arg_make(ctx, &s->args[i], &user_md[i], &md[i], i == ARG_C);
  failed = failed || ct_dnnl_scratchpad_make(ctx, &s->scratchpad, pd);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (failed) {
    matmul_state_free(s);
    return NULL;
  }
  return s;
}

/* m, n, k and the transpositions of a MatMul of a and b. */
static void matmul_key(const ct_shape *a, const ct_shape *b, const ct_matmul_attrs *attrs,
                       int64_t key[5]) {
  const int ta = attrs->transpose_a != 0, tb = attrs->transpose_b != 0;
  key[0] = a->dims[ta], key[1] = b->dims[1 - tb], key[2] = a->dims[1 - ta];
  key[3] = ta, key[4] = tb;
}

/* Whether a MatMul of this key runs as a oneDNN matmul primitive on device
 * rather than through sgemm. */
static int uses_primitive(const ct_device *device, const int64_t key[5]) {
  return ct_cpu_of(device)->bf16 || key[4];
}

/* The row length of the copy of B that sgemm takes (key as above: B not
 * transposed, see uses_primitive), or 0 to take B as it is: on an AVX2
 * sgemm, rows that lie a multiple of 1 KiB apart are lengthened by 16
 * floats. */
static int64_t padded_b_row(const ct_device *device, const int64_t key[5]) {
  const int64_t n = key[1];
  return ct_cpu_of(device)->avx2_sgemm && n % 256 == 0 ? n + 16 : 0;
}

CT_CPU_SCRATCH(ct_cpu_matmul_scratch) {
  (void)out;
  if (n_inputs < 2) return 0;
  int64_t key[5];
  matmul_key(&in[0], &in[1], &attrs->matmul, key);
  if (key[0] == 0 || key[1] == 0 || key[2] == 0) return 0;
  if (!uses_primitive(device, key)) {
    const int64_t row = padded_b_row(device, key);
    if (row == 0) return 0;
    bytes[0] = (size_t)(key[2] * row) * sizeof(float);
    return 1;
  }
  dnnl_memory_desc_t user_md[N_ARGS], md[N_ARGS];
  dnnl_primitive_desc_t pd = NULL;
  int n = 0;
  if (matmul_desc_make(device, key, user_md, md, &pd) == dnnl_success) {
    const dnnl_memory_desc_t *prim_md[N_ARGS] = {&md[0], &md[1], &md[2]};
    n = ct_dnnl_scratch_blocks(user_md, prim_md, N_ARGS, pd, bytes);
  }
  if (pd) dnnl_primitive_desc_destroy(pd);
  return n;
}

static void matmul_primitive(ct_kernel_ctx *ctx, const int64_t key[5]) {
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
  dnnl_exec_arg_t args[N_ARGS + 1] = {
      {DNNL_ARG_SRC, mems[ARG_A]}, {DNNL_ARG_WEIGHTS, mems[ARG_B]}, {DNNL_ARG_DST, mems[ARG_C]}};
  int n_args = N_ARGS;
  if (ct_dnnl_scratchpad_bind(ctx, &s->scratchpad, args, &n_args)) return;
  ct_dnnl_execute(ctx, s->prim, n_args, args);
}

void ct_cpu_matmul(ct_kernel_ctx *ctx) {
  const ct_shape *a = &ctx->inputs[0].shape, *b = &ctx->inputs[1].shape;
  int64_t key[5];
  matmul_key(a, b, &ctx->attrs->matmul, key);
  const int64_t m = key[0], n = key[1], k = key[2];
  const int ta = (int)key[3]; /* B transposed goes to the primitive */
  float *c = ct_out_f32(ctx, 0);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = 0.0f;
    return;
  }
  if (uses_primitive(ctx->device, key)) {
    matmul_primitive(ctx, key);
    return;
  }
  const float *b_data = ct_in_f32(ctx, 1);
  int64_t b_row = b->dims[1];
  const int64_t padded_row = padded_b_row(ctx->device, key);
  if (padded_row) {
    float *copy = ct_kernel_scratch(ctx, (size_t)(k * padded_row) * sizeof(float));
    if (copy == NULL) return;
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < k; ++row)
      memcpy(copy + row * padded_row, b_data + row * b_row, (size_t)n * sizeof(float));
    b_data = copy;
    b_row = padded_row;
  }
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', 'N', m, n, k, 1.0f, ct_in_f32(ctx, 0), a->dims[1],
                                b_data, b_row, 0.0f, c, n);
  ct_dnnl_check(ctx, st, "sgemm");
}
