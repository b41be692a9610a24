/* What the host has asked of the emulated GPUs since the process started,
 * for tests of the hot path (C and C++). EMU_COUNTS=1 in the environment
 * also prints the counts at exit. */
#ifndef CT_EMULATOR_COUNTS_H
#define CT_EMULATOR_COUNTS_H

typedef enum emu_count_kind {
  /* calls that block the host until GPU work is done: stream, device and
   * event synchronization, a copy into pageable host memory, cudaFree and
   * cudaFreeHost */
  EMU_HOST_WAITS,
  EMU_DEVICE_ALLOCATIONS, /* cudaMalloc */
  EMU_PINNED_ALLOCATIONS, /* cudaHostAlloc */
  EMU_EVENTS_CREATED, /* cudaEventCreate(WithFlags) */
  EMU_STREAM_TASKS,   /* work queued on streams: kernels, copies, records, waits, library calls */
  EMU_COUNT_KINDS
} emu_count_kind;

#ifdef __cplusplus
extern "C" {
#endif
long emu_count(emu_count_kind kind);
#ifdef __cplusplus
}
#endif

#endif
