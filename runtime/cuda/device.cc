#include <cuda_runtime.h>

#include "runtime/cuda/device.h"

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

}  // namespace oat::cuda
