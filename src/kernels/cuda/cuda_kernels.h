/* GPU kernels: one C function per op (the `ct_gpu_` functions), in two
 * tables: ct_cuda_basic_kernels (basic_table.c: elementwise, reductions,
 * shapes, classification, dropout, optimizer updates) and
 * ct_cuda_nn_kernels (nn_table.c: cuBLAS matmul, cuDNN convolution,
 * pooling, LRN, batch norm).
 *
 * A GPU kernel function runs on its device's worker thread. It reads shapes
 * and attributes on the host, never the tensors' contents (those are device
 * pointers), and queues its work on the device's compute stream
 * (ct_kernel_gpu(ctx)->stream) without waiting for it. The CUDA C code
 * lives in .cu files behind plain extern "C" launchers (launch_basic.h,
 * launch_nn.h), so that
 * this side stays C11. Scratch memory comes from ct_kernel_scratch (device
 * memory, safe to reuse in stream order). */
#ifndef CTOWER_CUDA_KERNELS_H
#define CTOWER_CUDA_KERNELS_H

#include "device/cuda/cuda_device.h"
#include "device/device.h"
#include "kernels/kernel.h"

extern const ct_kernel_def ct_cuda_basic_kernels[];
extern const ct_kernel_def ct_cuda_nn_kernels[];
extern const ct_kernel_def ct_cuda_collective_kernels[]; /* collective.c: AllReduce */

static inline ct_gpu *ct_kernel_gpu(const ct_kernel_ctx *ctx) { return ct_gpu_of(ctx->device); }

/* Fills ctx->status from the last launch's error; returns 1 on error. */
static inline int ct_kernel_launch_failed(ct_kernel_ctx *ctx, cudaError_t err) {
  return ct_cuda_check(err, ctx->node ? ctx->node->name : "a copy", ctx->status);
}

#endif
