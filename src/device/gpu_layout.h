/* How a session's options turn the GPUs the CUDA runtime reports into the
 * logical devices /gpu:0, /gpu:1, ..., and how much memory each may use.
 * These are pure functions of the options and of the runtime's figures, so
 * that the rules are tested on machines without a GPU; the CUDA device
 * (device/cuda/cuda_device.c) applies them to the real GPUs. */
#ifndef CTOWER_GPU_LAYOUT_H
#define CTOWER_GPU_LAYOUT_H

#include <stddef.h>

#include "ctower/session_options.h"
#include "ctower/status.h"

typedef struct ct_gpu_layout {
  int n_physical;               /* GPUs the session uses, in /gpu order */
  int ordinals[CT_MAX_DEVICES]; /* their CUDA ordinals (after CUDA_VISIBLE_DEVICES) */
  int per_physical;             /* logical devices on each: the virtual devices, or 1 */
} ct_gpu_layout;

/* Lays out the GPUs of a session on a machine whose CUDA runtime sees
 * `available` devices: gpu_options.visible_device_list picks and orders them
 * ("1,0": ordinal 1 becomes /gpu:0), device_count GPU caps their number (0
 * hides them all), and gpu_options.virtual_devices splits each into logical
 * devices. A list naming a GPU that is not there, one GPU twice, or anything
 * but comma-separated ids is INVALID_ARGUMENT quoting the list; without any
 * GPU there is nothing to pick and the layout is empty. */
int ct_gpu_layout_make(const ct_session_options *options, int available, ct_gpu_layout *layout,
                       ct_status *status);

/* The logical GPU devices of a layout. */
int ct_gpu_layout_devices(const ct_gpu_layout *layout);

/* The memory limit of the logical device `name`, the `virtual_index`-th on
 * CUDA device `ordinal`, which has free_bytes free of total_bytes. In order:
 * its gpu_options.virtual_devices size, else memory_limit_mb GPU, else
 * per_process_gpu_memory_fraction of the total; by default (fraction 1)
 * what is free less max(5%, 256 MiB), left for the buffers the CUDA
 * libraries allocate on their own. Without allow_growth the limit is
 * reserved at once, so a limit above what is free is RESOURCE_EXHAUSTED,
 * naming the setting that asked for it. */
int ct_gpu_memory_limit(const ct_session_options *options, const char *name, int ordinal,
                        int virtual_index, size_t free_bytes, size_t total_bytes, size_t *limit,
                        ct_status *status);

#endif
