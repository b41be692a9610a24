/* Failures the tests plant in the emulated GPUs and libraries, to check
 * that ctower reports each one where it happens (C and C++). The
 * environment plants some too: EMU_DRIVER_ERROR=N makes cudaGetDeviceCount
 * fail with CUDA error N, as a broken driver does (EMU_GPUS=0 makes it
 * report cudaErrorNoDevice, as a machine without a GPU does), and
 * EMU_MISSING_LIBRARIES=cudnn,nccl makes those libraries missing. */
#ifndef CT_EMULATOR_FAULTS_H
#define CT_EMULATOR_FAULTS_H

#ifdef __cplusplus
extern "C" {
#endif
/* The n-th kernel launched from now on (n >= 1) faults when its stream
 * runs it, as a kernel that reads out of bounds does: its GPU's context is
 * lost, and every later call on that GPU returns cudaErrorIllegalAddress,
 * until emu_fault_clear. */
void emu_fault_after_launches(long n);
void emu_fault_clear(void);

/* Makes "cublas", "cudnn" or "nccl" missing (1) or present again (0), as on
 * a machine without that library: loading it fails, and so do its calls. */
void emu_library_missing(const char *library, int missing);

/* The next ncclCommInitAll fails with ncclSystemError, and NCCL's own
 * account of the error (ncclGetLastError) is `text`. */
void emu_nccl_fail_next_init(const char *text);
#ifdef __cplusplus
}
#endif

#endif
