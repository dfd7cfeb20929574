// Device memory of the CUDA backend: one CachingAllocator per process over cudaMalloc/cudaFree,
// and the calling thread's current stream, which orders every allocation (caching_allocator.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/caching_allocator.h"

namespace oat::cuda {

CachingAllocator& device_allocator();

// The stream that allocations and kernels of this thread use; set by CudaContext::enter().
// Outside any context: the legacy default stream (id 0, the synchronised pool).
struct CurrentStream {
  cudaStream_t stream = nullptr;
  uint64_t id = 0;
};
CurrentStream current_stream();
// Returns the previous value, to be restored by the caller.
CurrentStream set_current_stream(CurrentStream s);

}  // namespace oat::cuda
