/* The GPU kernel table of the neural-network ops (see cuda_kernels.h). */
#include "kernels/cuda/cuda_kernels.h"

const ct_kernel_def ct_cuda_nn_kernels[] = {
    {0, CT_DEVICE_GPU, 0},
};
