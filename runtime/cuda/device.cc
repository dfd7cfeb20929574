// Device queries (host API only, compiled by the C++ compiler).
#include "runtime/cuda/device.h"

#include <cuda_runtime.h>

#include "runtime/error.h"

namespace oat::cuda {

bool compiled() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::string describe_device(int index) {
  int n = device_count();
  if (n == 0) return "no CUDA device answers";
  if (index >= n) return "CUDA device index out of range";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return "cudaGetDeviceProperties failed";
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.totalGlobalMem >> 30) + " GiB)";
}

void require_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(cat("no CUDA device: ", cudaGetErrorString(e)));
  }
  if (n == 0) throw Error("no CUDA device: the driver reports none");
}

}  // namespace oat::cuda
