/* Small helpers over oneDNN's C API used by the CPU kernels. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "device/cpu_device.h"
#include "kernels/cpu/cpu_kernels.h"

dnnl_memory_desc_t ct_dnnl_md(int ndims, const int64_t *dims, dnnl_format_tag_t tag) {
  dnnl_memory_desc_t md;
  dnnl_dims_t d;
  for (int i = 0; i < ndims; ++i) d[i] = dims[i];
  dnnl_memory_desc_init_by_tag(&md, ndims, d, dnnl_f32, tag);
  return md;
}

int ct_dnnl_check(ct_kernel_ctx *ctx, dnnl_status_t st, const char *what) {
  if (st == dnnl_success) return 0;
  ct_status_set(ctx->status, st == dnnl_out_of_memory ? CT_RESOURCE_EXHAUSTED : CT_INTERNAL,
                "oneDNN failed in %s for node '%s' (status %d)", what, ctx->node->name, (int)st);
  return 1;
}

/* oneDNN writes the code of a primitive into fresh memory as it creates it
 * and crashes (SIGSEGV) when that memory cannot be had (a tight ulimit -v):
 * first make sure this much can be mapped, and fail with a status if not.
 * Generated kernels are far smaller. */
enum { PRIMITIVE_CODE_ROOM = 4 << 20 };

int ct_dnnl_primitive_create(ct_kernel_ctx *ctx, dnnl_primitive_t *primitive,
                             const_dnnl_primitive_desc_t desc, const char *what) {
  void *room =
      mmap(NULL, PRIMITIVE_CODE_ROOM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (room == MAP_FAILED) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED,
                  "out of memory creating oneDNN's %s for node '%s': not even %d MiB can be "
                  "mapped for its code; raise the memory limit (ulimit -v) or train with a "
                  "smaller dataset.batch_size",
                  what, ctx->node->name, PRIMITIVE_CODE_ROOM >> 20);
    return 1;
  }
  munmap(room, PRIMITIVE_CODE_ROOM);
  return ct_dnnl_check(ctx, dnnl_primitive_create(primitive, desc), what);
}

dnnl_memory_t ct_dnnl_memory(ct_kernel_ctx *ctx, const dnnl_memory_desc_t *md, void *data) {
  dnnl_memory_t mem = NULL;
  if (ct_dnnl_check(ctx, dnnl_memory_create(&mem, md, ct_cpu_of(ctx->device)->engine, data),
                    "dnnl_memory_create"))
    return NULL;
  return mem;
}

int ct_dnnl_execute(ct_kernel_ctx *ctx, dnnl_primitive_t prim, int n_args,
                    const dnnl_exec_arg_t *args) {
  if (ct_dnnl_check(ctx, dnnl_primitive_execute(prim, ct_cpu_of(ctx->device)->stream, n_args, args),
                    "dnnl_primitive_execute"))
    return 1;
  return ct_dnnl_check(ctx, dnnl_stream_wait(ct_cpu_of(ctx->device)->stream), "dnnl_stream_wait");
}

int ct_dnnl_arg_make(ct_kernel_ctx *ctx, ct_dnnl_arg *arg, const dnnl_memory_desc_t *user_md,
                     const dnnl_memory_desc_t *prim_md, int is_output) {
  dnnl_engine_t engine = ct_cpu_of(ctx->device)->engine;
  arg->is_output = is_output;
  arg->user = ct_dnnl_memory(ctx, user_md, DNNL_MEMORY_NONE);
  if (arg->user == NULL) return 1;
  if (dnnl_memory_desc_equal(prim_md, user_md)) return 0;
  arg->prim = ct_dnnl_memory(ctx, prim_md, DNNL_MEMORY_NONE);
  arg->prim_bytes = dnnl_memory_desc_get_size(prim_md);
  arg->elements = (int64_t)(dnnl_memory_desc_get_size(user_md) / sizeof(float));
  if (arg->prim == NULL) return 1;
  /* the same layout in bf16: rounded by ct_round_to_bf16 */
  dnnl_memory_desc_t as_f32 = *prim_md;
  as_f32.data_type = dnnl_f32;
  if (!is_output && prim_md->data_type == dnnl_bf16 && dnnl_memory_desc_equal(&as_f32, user_md))
    return 0;
  dnnl_primitive_desc_t reorder_pd = NULL;
  int failed = ct_dnnl_check(ctx,
                             dnnl_reorder_primitive_desc_create(
                                 &reorder_pd, is_output ? prim_md : user_md, engine,
                                 is_output ? user_md : prim_md, engine, NULL),
                             "argument reorder descriptor") ||
               ct_dnnl_primitive_create(ctx, &arg->reorder, reorder_pd, "argument reorder");
  if (reorder_pd) dnnl_primitive_desc_destroy(reorder_pd);
  return failed;
}

void ct_dnnl_arg_free(ct_dnnl_arg *arg) {
  if (arg->reorder) dnnl_primitive_destroy(arg->reorder);
  if (arg->user) dnnl_memory_destroy(arg->user);
  if (arg->prim) dnnl_memory_destroy(arg->prim);
  memset(arg, 0, sizeof *arg);
}

enum { SCRATCH_ALIGN = 64 };

static size_t aligned(size_t n) { return (n + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

/* One float rounded as ct_round_to_bf16 rounds. */
static uint16_t bf16_of(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)((bits | 0x00400000u) >> 16); /* NaN */
  if (magnitude < 0x00800000u) return (uint16_t)((bits & 0x80000000u) >> 16); /* subnormal */
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* Floats rounded a call at a time: a whole block is one AVX512_BF16
 * conversion; only the last block may be shorter. */
enum { BF16_BLOCK = 32 };

/* out[0..count) rounded from in, count <= BF16_BLOCK: a whole block with
 * AVX512_BF16's conversion where the build has it, which rounds the same and
 * is faster on data in cache (from memory, no faster) (bench/RESULTS.md,
 * "Behind the code's choices"). */
static void round_block(const float *in, uint16_t *out, int64_t count) {
#ifdef __AVX512BF16__
  if (count == BF16_BLOCK) {
    const __m512bh pair = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + 16), _mm512_loadu_ps(in));
    _mm512_storeu_si512(out, (__m512i)pair);
    return;
  }
#endif
  for (int64_t i = 0; i < count; ++i) out[i] = bf16_of(in[i]);
}

void ct_round_to_bf16(const float *in, uint16_t *out, int64_t n, int threads) {
  const int64_t blocks = (n + BF16_BLOCK - 1) / BF16_BLOCK;
#pragma omp parallel for num_threads(threads) if (n > CT_PARALLEL_GRAIN)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * BF16_BLOCK, count = n - first < BF16_BLOCK ? n - first : BF16_BLOCK;
    round_block(in + first, out + first, count);
  }
}

/* Converts arg between its user and primitive memory, the way it goes. */
static int arg_convert(ct_kernel_ctx *ctx, const ct_dnnl_arg *arg) {
  if (arg->reorder == NULL) {
    void *from = NULL, *to = NULL;
    dnnl_memory_get_data_handle(arg->user, &from);
    dnnl_memory_get_data_handle(arg->prim, &to);
    ct_round_to_bf16(from, to, arg->elements, ctx->threads);
    return 0;
  }
  dnnl_exec_arg_t r[] = {{DNNL_ARG_FROM, arg->is_output ? arg->prim : arg->user},
                         {DNNL_ARG_TO, arg->is_output ? arg->user : arg->prim}};
  return ct_dnnl_execute(ctx, arg->reorder, 2, r);
}

int ct_dnnl_scratch_blocks(const dnnl_memory_desc_t *user_md,
                           const dnnl_memory_desc_t *const *prim_md, int n,
                           const_dnnl_primitive_desc_t pd, size_t bytes[2]) {
  size_t converted = 0;
  for (int i = 0; i < n; ++i)
    if (!dnnl_memory_desc_equal(prim_md[i], &user_md[i]))
      converted += aligned(dnnl_memory_desc_get_size(prim_md[i]));
  const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  const size_t scratchpad = pad ? dnnl_memory_desc_get_size(pad) : 0;
  int blocks = 0;
  if (converted) bytes[blocks++] = converted;
  if (scratchpad) bytes[blocks++] = scratchpad;
  return blocks;
}

int ct_dnnl_args_bind(ct_kernel_ctx *ctx, ct_dnnl_arg *args, int n, void *const *data,
                      dnnl_memory_t *mems) {
  size_t scratch_bytes = 0;
  for (int i = 0; i < n; ++i)
    if (args[i].prim) scratch_bytes += aligned(args[i].prim_bytes);
  char *scratch = scratch_bytes ? ct_kernel_scratch(ctx, scratch_bytes) : NULL;
  if (scratch_bytes && scratch == NULL) return 1;
  for (int i = 0; i < n; ++i) {
    ct_dnnl_arg *arg = &args[i];
    dnnl_memory_set_data_handle(arg->user, data[i]);
    mems[i] = arg->user;
    if (arg->prim == NULL) continue;
    dnnl_memory_set_data_handle(arg->prim, scratch);
    scratch += aligned(arg->prim_bytes);
    mems[i] = arg->prim;
    if (!arg->is_output && arg_convert(ctx, arg)) return 1;
  }
  return 0;
}

int ct_dnnl_args_finish(ct_kernel_ctx *ctx, const ct_dnnl_arg *args, int n) {
  for (int i = 0; i < n; ++i)
    if (args[i].prim && args[i].is_output && arg_convert(ctx, &args[i])) return 1;
  return 0;
}

dnnl_primitive_attr_t ct_dnnl_user_scratchpad(void) {
  dnnl_primitive_attr_t attr = NULL;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  return attr;
}

int ct_dnnl_scratchpad_make(ct_kernel_ctx *ctx, ct_dnnl_scratchpad *sp,
                            const_dnnl_primitive_desc_t pd) {
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  sp->bytes = md ? dnnl_memory_desc_get_size(md) : 0;
  if (sp->bytes == 0) return 0;
  sp->memory = ct_dnnl_memory(ctx, md, DNNL_MEMORY_NONE);
  return sp->memory == NULL;
}

void ct_dnnl_scratchpad_free(ct_dnnl_scratchpad *sp) {
  if (sp->memory) dnnl_memory_destroy(sp->memory);
  sp->memory = NULL;
  sp->bytes = 0;
}

int ct_dnnl_scratchpad_bind(ct_kernel_ctx *ctx, const ct_dnnl_scratchpad *sp,
                            dnnl_exec_arg_t *args, int *n) {
  if (sp->memory == NULL) return 0;
  void *buffer = ct_kernel_scratch(ctx, sp->bytes);
  if (buffer == NULL) return 1;
  dnnl_memory_set_data_handle(sp->memory, buffer);
  args[(*n)++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sp->memory};
  return 0;
}
