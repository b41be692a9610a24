/* ctower session options: the devices a session creates (how many of each
 * type, their threads, memory limits and GPU settings) and how it places
 * nodes on them, as TensorFlow's ConfigProto. Plain settings: the device
 * layer reads them to create devices, the session to place nodes. */
#ifndef CTOWER_SESSION_OPTIONS_H
#define CTOWER_SESSION_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctower/device_name.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CT_MAX_DEVICES = 64 };

/* GPU settings, as TensorFlow's GPUOptions. */
typedef struct ct_gpu_options {
  int allow_growth;                        /* start small and grow (else reserve the limit) */
  double per_process_gpu_memory_fraction;  /* of each GPU's memory; (0, 1] */
  char visible_device_list[128];           /* "1,0": physical GPU 1 becomes /gpu:0; "" all */
  int n_virtual_devices;                   /* split each visible GPU into this many ... */
  int64_t virtual_devices_mb[CT_MAX_DEVICES]; /* ... logical GPUs of these sizes (MiB) */
} ct_gpu_options;

/* The arithmetic of matmuls and convolutions (train.precision). Tensors
 * and weights stay fp32; tf32 and bf16 let tensor cores round the inputs of
 * each product. On CPU devices bf16 rounds the inputs of convolutions and
 * matmuls to bfloat16 where the CPU multiplies them natively (AVX512_BF16 or
 * AMX) and sums in fp32; elsewhere CPUs compute in fp32 (and say so). */
typedef enum ct_precision { CT_PRECISION_FP32 = 0, CT_PRECISION_TF32, CT_PRECISION_BF16 } ct_precision;

/* How CPU devices compute convolutions (train.conv_algorithm). Winograd's
 * F(4x4, 3x3) needs 2.25 times fewer multiplications for 3x3 stride-1
 * layers, at a larger rounding error (a few ulps of the result's scale);
 * it is used where oneDNN implements it for the CPU and the layer.
 * AUTO: on a CPU device of one thread Winograd wherever it applies, direct
 * elsewhere; on a device of several threads direct (oneDNN's Winograd
 * primitives scale poorly over a thread team). */
typedef enum ct_conv_algorithm {
  CT_CONV_AUTO = 0,
  CT_CONV_DIRECT,
  CT_CONV_WINOGRAD
} ct_conv_algorithm;

/* Session settings, as TensorFlow's ConfigProto. Start from
 * ct_session_options_defaults and change what differs. */
typedef struct ct_session_options {
  int log_device_placement;         /* print the device mapping and each node's device */
  int allow_soft_placement;         /* move ops whose requested device is missing or lacks a kernel */
  int check_numerics;               /* every op's f32 outputs on CPU devices are checked: the first
                                       NaN or Inf fails the run naming the op and its device
                                       (TensorFlow's check_numerics); costs a pass over them */
  int device_count_cpu;             /* CPU devices /cpu:0 .. /cpu:n-1 (at least 1) */
  int device_count_gpu;             /* GPUs to use; -1: all there are */
  int intra_op_parallelism_threads; /* worker threads of all CPU devices together; 0: every core */
  int inter_op_parallelism_threads; /* accepted for compatibility; each device runs its ready
                                       ops one after another on its own workers */
  int cpu_device_threads[CT_MAX_DEVICES]; /* per CPU device; 0: an even share of the above */
  size_t cpu_memory_limit;          /* bytes per CPU device; 0: none */
  size_t cpu_device_memory_limit[CT_MAX_DEVICES]; /* per CPU device; 0: cpu_memory_limit */
  size_t gpu_memory_limit;          /* bytes per GPU; 0: the fraction decides */
  ct_gpu_options gpu_options;
  ct_precision precision;           /* of matmuls and convolutions */
  ct_conv_algorithm conv_algorithm; /* of convolutions on CPU devices */
  FILE *log;                        /* where the placement log goes; NULL: stderr */
  /* The process the devices belong to, as a TensorFlow task: devices are
   * named /job:JOB/replica:0/task:TASK/device:... */
  char job[CT_DEVICE_JOB_MAX];      /* "": "localhost", a process on its own; under mpirun the
                                       defaults name this rank's job and task */
  int task;                         /* this process's index in the job (its MPI rank) */
  /* This process's share of the machine's cores: the cores (those it may
   * run on) are split evenly between the local_processes processes on the
   * machine, local_process being its index, so that no two processes pin
   * the same core. 0 or 1 local_processes: the whole machine. A process
   * whose launcher already bound it to fewer cores than the machine has
   * keeps those as its share. */
  int local_process, local_processes;
} ct_session_options;

void ct_session_options_defaults(ct_session_options *options);

/* How many devices of `kind` (CT_DEVICE_KIND_GPU: /gpu:0 ..) a session
 * with these options would have, without creating them: 0 for GPUs without
 * any, or without CUDA in this build. Options the session would refuse
 * count no device of the kind they concern; ct_session_new reports them. */
int ct_device_count(const ct_session_options *options, ct_device_kind kind);

/* What this build's device types load at run time, a line each: with CUDA,
 * the driver's and runtime's versions and which cuBLAS, cuDNN and NCCL
 * ctower loads and from where (or where it looked for a missing one), which
 * loads those libraries to find out. At most `size` bytes, NUL-terminated;
 * "" when there is nothing to say (a build without CUDA). */
void ct_device_runtime_describe(char *text, size_t size);

#ifdef __cplusplus
}
#endif
#endif
