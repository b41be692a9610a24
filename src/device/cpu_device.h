/* CPU devices: what a CPU kernel needs from its device (oneDNN's engine and
 * stream), and the CPU's table of device operations. */
#ifndef CTOWER_CPU_DEVICE_H
#define CTOWER_CPU_DEVICE_H

#include <dnnl.h>

#include "device/device.h"

typedef struct ct_cpu {
  dnnl_engine_t engine; /* the oneDNN CPU engine its kernels use */
  dnnl_stream_t stream;
  int bf16;                  /* convolutions and matmuls round their inputs to bfloat16 */
  int winograd;              /* 3x3 stride-1 convolutions use Winograd where it runs */
  int winograd_min_channels; /* ... those of at least so many input and output channels */
  int own_winograd;          /* ... 3x3 ones by ctower's own too (kernels/cpu/winograd.c, which
                                takes 5x5 ones everywhere): oneDNN has none here */
  int avx2_sgemm;            /* oneDNN's sgemm is its AVX2 one (no AVX-512): see matmul.c */
} ct_cpu;

/* The CPU state of a CPU device. */
static inline ct_cpu *ct_cpu_of(const ct_device *device) { return (ct_cpu *)device->impl; }

extern const ct_device_ops ct_cpu_device_ops;

#endif
