// A GPU emulator for the tests: the CUDA runtime, cuBLAS, cuDNN and NCCL
// calls ctower makes, carried out on the host, so that the GPU code (the CUDA
// device, the kernels' C glue and the .cu kernels, compiled as host C++ by
// translate_cu.py and device_code.h) runs end to end on machines without a
// GPU: tests/gpu/test_gpu.c against the CPU, in CI.
//
// It is strict where a GPU would be: GPU memory is host memory from cudaMalloc,
// tracked, so a copy or library call outside an allocation, host memory handed
// to the GPU, or a kernel launched on another GPU's stream is reported; each
// stream runs its work in order on a thread of its own, asynchronously to the
// host, so work that is not ordered by events may run in any order (set
// EMU_JITTER=1 for random delays that shake such races out); NCCL ranks wait
// for each other. A misuse a GPU would punish prints "EMU BUG: ..." and aborts.
//
// Environment: EMU_GPUS (GPUs, default 1), EMU_GPU_MB (memory of each,
// default 8192), EMU_JITTER.
//
// This header is what runtime.cc gives libraries.cc.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

// How long a stream, the host or an NCCL rank waits before calling it a
// deadlock (generous: CI machines are slow and shared).
constexpr int kWatchdogSeconds = 120;

// Queue `task` on `stream` (NULL: the current device's default stream).
// Tasks of one stream run in order on that stream's own worker thread,
// asynchronously to the host thread that queued them.
void emu_enqueue(cudaStream_t stream, std::function<void()> task);
// The device ordinal a stream belongs to.
int emu_stream_device(cudaStream_t stream);
// The calling host thread's current device (cudaSetDevice).
int emu_current_device(void);
// Whether [p, p+n) lies inside one live cudaMalloc allocation; its device
// goes to *device when not NULL.
bool emu_device_range(const void *p, size_t n, int *device);
// A bug the emulator detected (misuse a real GPU would punish): prints
// "EMU BUG: ..." to stderr and aborts.
[[noreturn]] void emu_fail(const char *fmt, ...);
