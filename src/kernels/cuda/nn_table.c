/* The GPU kernel table of the neural-network ops (see cuda_kernels.h). */
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/nn_kernels.h"

/* The plan does not estimate GPU kernels' scratch (kernel.h). */
#define K(op, fn) \
  { op, CT_DEVICE_KIND_GPU, fn, ct_kernel_scratch_not_estimated }

const ct_kernel_def ct_cuda_nn_kernels[] = {
    K("MatMul", ct_gpu_matmul),
    K("Conv2D", ct_gpu_conv2d),
    K("Conv2DBackpropInput", ct_gpu_conv2d_backprop_input),
    K("Conv2DBackpropFilter", ct_gpu_conv2d_backprop_filter),
    K("MaxPool", ct_gpu_max_pool),
    K("MaxPoolGrad", ct_gpu_max_pool_grad),
    K("AvgPool", ct_gpu_avg_pool),
    K("AvgPoolGrad", ct_gpu_avg_pool_grad),
    K("LRN", ct_gpu_lrn),
    K("LRNGrad", ct_gpu_lrn_grad),
    K("FusedBatchNorm", ct_gpu_batch_norm_training),
    K("FusedBatchNormInference", ct_gpu_batch_norm_inference),
    K("FusedBatchNormGrad", ct_gpu_batch_norm_grad),
    K("FusedBatchNormInferenceGrad", ct_gpu_batch_norm_inference_grad),
    {0, CT_DEVICE_KIND_GPU, 0, 0},
};
