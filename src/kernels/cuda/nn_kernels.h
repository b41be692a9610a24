/* The GPU kernels of the neural-network ops (nn_table.c): cuBLAS matmul,
 * cuDNN convolution, own kernels for pooling, LRN and batch norm. Each
 * computes what its CPU kernel (kernels/cpu) computes, with the same attrs
 * and NHWC / HWIO layouts. */
#ifndef CTOWER_NN_KERNELS_H
#define CTOWER_NN_KERNELS_H

#include "kernels/kernel.h"

void ct_gpu_matmul(ct_kernel_ctx *ctx);
void ct_gpu_conv2d(ct_kernel_ctx *ctx);
void ct_gpu_conv2d_backprop_input(ct_kernel_ctx *ctx);
void ct_gpu_conv2d_backprop_filter(ct_kernel_ctx *ctx);
void ct_gpu_max_pool(ct_kernel_ctx *ctx);
void ct_gpu_max_pool_grad(ct_kernel_ctx *ctx);
void ct_gpu_avg_pool(ct_kernel_ctx *ctx);
void ct_gpu_avg_pool_grad(ct_kernel_ctx *ctx);
void ct_gpu_lrn(ct_kernel_ctx *ctx);
void ct_gpu_lrn_grad(ct_kernel_ctx *ctx);
void ct_gpu_batch_norm_training(ct_kernel_ctx *ctx);
void ct_gpu_batch_norm_inference(ct_kernel_ctx *ctx);
void ct_gpu_batch_norm_grad(ct_kernel_ctx *ctx);
void ct_gpu_batch_norm_inference_grad(ct_kernel_ctx *ctx);

#endif
