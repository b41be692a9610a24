/* The GPU kernel table of the basic ops (see cuda_kernels.h). */
#include "kernels/cuda/basic_kernels.h"

/* The plan does not estimate GPU kernels' scratch (kernel.h). */
#define K(op, fn) \
  { op, CT_DEVICE_KIND_GPU, fn, ct_kernel_scratch_not_estimated }

const ct_kernel_def ct_cuda_basic_kernels[] = {
    K("Placeholder", ct_gpu_nothing),
    K("Const", ct_gpu_nothing),
    K("Variable", ct_gpu_nothing),
    K("Identity", ct_gpu_nothing),
    K("StopGradient", ct_gpu_nothing),
    K("Reshape", ct_gpu_nothing),
    K("ReshapeLike", ct_gpu_nothing),
    K("ZerosLike", ct_gpu_zeros_like),
    K("OnesLike", ct_gpu_ones_like),
    K("ConcatV2", ct_gpu_concat),
    K("ConcatGrad", ct_gpu_concat_grad),
    K("Split", ct_gpu_split),
    K("StridedSlice", ct_gpu_strided_slice),
    K("StridedSliceGrad", ct_gpu_strided_slice_grad),
    K("Transpose", ct_gpu_transpose),
    K("Neg", ct_gpu_neg),
    K("Add", ct_gpu_add),
    K("Sub", ct_gpu_sub),
    K("Mul", ct_gpu_mul),
    K("RealDiv", ct_gpu_div),
    K("BroadcastLike", ct_gpu_broadcast_like),
    K("SumLike", ct_gpu_sum_like),
    K("AddN", ct_gpu_add_n),
    K("Relu", ct_gpu_relu),
    K("ReluGrad", ct_gpu_relu_grad),
    K("Sigmoid", ct_gpu_sigmoid),
    K("SigmoidGrad", ct_gpu_sigmoid_grad),
    K("Tanh", ct_gpu_tanh),
    K("TanhGrad", ct_gpu_tanh_grad),
    K("Sum", ct_gpu_sum),
    K("Mean", ct_gpu_mean),
    K("ReduceGrad", ct_gpu_reduce_grad),
    K("Max", ct_gpu_max),
    K("Min", ct_gpu_min),
    K("MaxMinGrad", ct_gpu_max_min_grad),
    K("AssignMovingAvg", ct_gpu_assign_moving_average),
    K("Dropout", ct_gpu_dropout),
    K("DropoutGrad", ct_gpu_dropout_grad),
    K("SparseSoftmaxCrossEntropyWithLogits", ct_gpu_sparse_softmax_xent),
    K("SoftmaxCrossEntropyWithLogits", ct_gpu_softmax_xent),
    K("L2Loss", ct_gpu_l2_loss),
    K("ArgMax", ct_gpu_argmax),
    K("Equal", ct_gpu_equal),
    K("Cast", ct_gpu_cast),
    K("CompressGradient", ct_gpu_compress_gradient),
    K("DecompressGradient", ct_gpu_decompress_gradient),
    K("Accuracy", ct_gpu_accuracy),
    K("ApplyGradientDescent", ct_gpu_apply_gradient_descent),
    K("ApplyMomentum", ct_gpu_apply_momentum),
    K("ApplyAdam", ct_gpu_apply_adam),
    K("Assign", ct_gpu_assign),
#define UNARY_MATH(P, Name, function, forward, derivative, gradient, flops, domain) \
  K(#Name, ct_gpu_##Name),
    CT_UNARY_MATH(UNARY_MATH, _)
#undef UNARY_MATH
    K("UnaryMathGrad", ct_gpu_unary_math_grad),
#define BINARY_MATH(P, Name, function, forward, da, db, flops, domain) K(#Name, ct_gpu_##Name),
    CT_BINARY_MATH(BINARY_MATH, _)
#undef BINARY_MATH
    K("BinaryMathGrad", ct_gpu_binary_math_grad),
#define COMPARE(P, Name, function, op) K(#Name, ct_gpu_##Name),
    CT_COMPARE(COMPARE, _)
#undef COMPARE
    {0, CT_DEVICE_KIND_GPU, 0, 0},
};
