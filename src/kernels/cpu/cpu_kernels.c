/* The CPU kernel table. */
#include "kernels/cpu/cpu_kernels.h"

/* Each kernel with its scratch rule (kernel.h): its own, beside it, or NONE
 * when it asks for no scratch, NOT_ESTIMATED when the plan leaves its small
 * per-channel or per-thread blocks out. */
#define K(op, fn, scratch) \
  { op, CT_DEVICE_KIND_CPU, fn, scratch }
#define NONE ct_kernel_no_scratch
#define NOT_ESTIMATED ct_kernel_scratch_not_estimated

const ct_kernel_def ct_cpu_kernels[] = {
    K("Placeholder", ct_cpu_nothing, NONE),
    K("Const", ct_cpu_nothing, NONE),
    K("Variable", ct_cpu_nothing, NONE),
    K("Identity", ct_cpu_nothing, NONE),
    K("StopGradient", ct_cpu_nothing, NONE),
    K("Reshape", ct_cpu_nothing, NONE),
    K("ReshapeLike", ct_cpu_nothing, NONE),
    K("ZerosLike", ct_cpu_zeros_like, NONE),
    K("OnesLike", ct_cpu_ones_like, NONE),
    K("ConcatV2", ct_cpu_concat, NONE),
    K("ConcatGrad", ct_cpu_concat_grad, NONE),
    K("Split", ct_cpu_split, NONE),
    K("StridedSlice", ct_cpu_strided_slice, NONE),
    K("StridedSliceGrad", ct_cpu_strided_slice_grad, NONE),
    K("Transpose", ct_cpu_transpose, NONE),
    K("Neg", ct_cpu_neg, NONE),
    K("Add", ct_cpu_add, NONE),
    K("Sub", ct_cpu_sub, NONE),
    K("Mul", ct_cpu_mul, NONE),
    K("RealDiv", ct_cpu_div, NONE),
    K("BroadcastLike", ct_cpu_broadcast_like, NONE),
    K("SumLike", ct_cpu_sum_like, ct_cpu_sum_like_scratch),
    K("AddN", ct_cpu_add_n, NONE),
    K("AllReduce", ct_cpu_all_reduce, NONE),
    K("CollectiveReduce", ct_cpu_collective_reduce, NONE),
    K("CollectiveBroadcast", ct_cpu_collective_broadcast, NONE),
    K("CompressGradient", ct_cpu_compress_gradient, NONE),
    K("DecompressGradient", ct_cpu_decompress_gradient, NONE),
    K("CompressedAllReduce", ct_cpu_compressed_all_reduce, ct_cpu_compressed_all_reduce_scratch),
    K("Relu", ct_cpu_relu, NONE),
    K("ReluGrad", ct_cpu_relu_grad, NONE),
    K("Sigmoid", ct_cpu_sigmoid, NONE),
    K("SigmoidGrad", ct_cpu_sigmoid_grad, NONE),
    K("Tanh", ct_cpu_tanh, NONE),
    K("TanhGrad", ct_cpu_tanh_grad, NONE),
    K("Sum", ct_cpu_sum, NONE),
    K("Mean", ct_cpu_mean, NONE),
    K("ReduceGrad", ct_cpu_reduce_grad, NONE),
    K("Max", ct_cpu_max, NONE),
    K("Min", ct_cpu_min, NONE),
    K("MaxMinGrad", ct_cpu_max_min_grad, NONE),
    K("MatMul", ct_cpu_matmul, ct_cpu_matmul_scratch),
    K("Conv2D", ct_cpu_conv2d, ct_cpu_conv2d_scratch),
    K("Conv2DBackpropInput", ct_cpu_conv2d_backprop_input, ct_cpu_conv2d_backprop_input_scratch),
    K("Conv2DBackpropFilter", ct_cpu_conv2d_backprop_filter, ct_cpu_conv2d_backprop_filter_scratch),
    K("MaxPool", ct_cpu_max_pool, NONE),
    K("MaxPoolGrad", ct_cpu_max_pool_grad, ct_cpu_max_pool_grad_scratch),
    K("AvgPool", ct_cpu_avg_pool, NONE),
    K("AvgPoolGrad", ct_cpu_avg_pool_grad, NONE),
    K("LRN", ct_cpu_lrn, NOT_ESTIMATED),
    K("LRNGrad", ct_cpu_lrn_grad, NOT_ESTIMATED),
    K("FusedBatchNorm", ct_cpu_batch_norm_training, ct_cpu_batch_norm_training_scratch),
    K("FusedBatchNormInference", ct_cpu_batch_norm_inference, NOT_ESTIMATED),
    K("FusedBatchNormGrad", ct_cpu_batch_norm_grad, ct_cpu_batch_norm_grad_scratch),
    K("FusedBatchNormInferenceGrad", ct_cpu_batch_norm_inference_grad,
      ct_cpu_batch_norm_grad_scratch),
    K("AssignMovingAvg", ct_cpu_assign_moving_average, NONE),
    K("Dropout", ct_cpu_dropout, NONE),
    K("DropoutGrad", ct_cpu_dropout_grad, NONE),
    K("SparseSoftmaxCrossEntropyWithLogits", ct_cpu_sparse_softmax_xent, NONE),
    K("SoftmaxCrossEntropyWithLogits", ct_cpu_softmax_xent, NONE),
    K("L2Loss", ct_cpu_l2_loss, NONE),
    K("ArgMax", ct_cpu_argmax, NONE),
    K("Equal", ct_cpu_equal, NONE),
    K("Cast", ct_cpu_cast, NONE),
    K("Accuracy", ct_cpu_accuracy, NONE),
    K("ApplyGradientDescent", ct_cpu_apply_gradient_descent, NONE),
    K("ApplyMomentum", ct_cpu_apply_momentum, NONE),
    K("ApplyAdam", ct_cpu_apply_adam, NONE),
    K("Assign", ct_cpu_assign, NONE),
#define UNARY_MATH(P, Name, function, forward, derivative, gradient, flops, domain) \
  K(#Name, ct_cpu_##Name, NONE),
    CT_UNARY_MATH(UNARY_MATH, _)
#undef UNARY_MATH
    K("UnaryMathGrad", ct_cpu_unary_math_grad, NONE),
#define BINARY_MATH(P, Name, function, forward, da, db, flops, domain) \
  K(#Name, ct_cpu_##Name, NONE),
    CT_BINARY_MATH(BINARY_MATH, _)
#undef BINARY_MATH
    K("BinaryMathGrad", ct_cpu_binary_math_grad, NONE),
#define COMPARE(P, Name, function, op) K(#Name, ct_cpu_##Name, NONE),
    CT_COMPARE(COMPARE, _)
#undef COMPARE
    {0, CT_DEVICE_KIND_CPU, 0, 0},
};
