// The CUDA stack of this machine, without ctower: the driver's and the
// runtime's versions, every GPU the runtime sees (or the runtime's error),
// and a kernel of this build's machine code run on each GPU and checked.
// Exit status: 0 when every GPU ran the kernel, 77 when there is no GPU (no
// device, or no driver at all), 1 on any other error. Built with the CUDA
// device, with its CUDA architectures and the runtime linked statically, as
// ctower is; a GPU test (ctest -L gpu).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

__global__ void fill_squares(int *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * i;
}

static int report(const char *what, cudaError_t err) {
  if (err == cudaSuccess) return 0;
  printf("%s: %s (%s)\n", what, cudaGetErrorName(err), cudaGetErrorString(err));
  return 1;
}

// Runs the kernel on GPU `device` and checks its result; 0 or 1.
static int run_kernel(int device) {
  enum { N = 1000 };
  int *d = nullptr, h[N] = {0};
  if (report("cudaSetDevice", cudaSetDevice(device)) ||
      report("cudaMalloc", cudaMalloc(&d, sizeof h)))
    return 1;
  fill_squares<<<(N + 255) / 256, 256>>>(d, N);
  int failed = report("the kernel's launch", cudaGetLastError()) ||
               report("the kernel", cudaDeviceSynchronize()) ||
               report("cudaMemcpy", cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < N && !failed; ++i)
    if (h[i] != i * i) {
      printf("the kernel wrote %d at %d, not %d\n", h[i], i, i * i);
      failed = 1;
    }
  cudaFree(d);
  return failed;
}

int main() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  void *libcuda = dlopen("libcuda.so.1", RTLD_LAZY);
  Dl_info where = {};
  void *symbol = libcuda ? dlsym(libcuda, "cuInit") : nullptr;
  printf("driver: CUDA %d.%d (libcuda.so.1: %s)\n", driver / 1000, driver % 1000 / 10,
         symbol && dladdr(symbol, &where) && where.dli_fname ? where.dli_fname : "not found");
  printf("runtime: CUDA %d.%d (linked statically)\n", runtime / 1000, runtime % 1000 / 10);
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaErrorNoDevice || (err == cudaErrorInsufficientDriver && libcuda == nullptr)) {
    printf("no GPU: %s (%s)\n", cudaGetErrorName(err), cudaGetErrorString(err));
    return 77;
  }
  if (report("cudaGetDeviceCount", err)) return 1;
  int failed = 0;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p;
    if (report("cudaGetDeviceProperties", cudaGetDeviceProperties(&p, d))) return 1;
    size_t free_bytes = 0, total = 0;
    cudaSetDevice(d);
    const int memory_failed = report("cudaMemGetInfo", cudaMemGetInfo(&free_bytes, &total));
    printf("GPU %d: %s, compute capability %d.%d, %d SMs, %zu MiB (%zu MiB free), PCI %04x:%02x:%02x\n",
           d, p.name, p.major, p.minor, p.multiProcessorCount, p.totalGlobalMem >> 20,
           free_bytes >> 20, p.pciDomainID, p.pciBusID, p.pciDeviceID);
    const int kernel_failed = memory_failed || run_kernel(d);
    if (!kernel_failed) printf("GPU %d: a kernel of this build ran and wrote the right values\n", d);
    failed |= kernel_failed;
  }
  return failed;
}
