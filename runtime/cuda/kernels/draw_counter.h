// The draw number of a device generator node (Dropout's and the random generators' Philox
// streams, runtime/cpu/kernels/philox.h): one uint64 in device memory that the kernels read and
// then advance on the stream (launch_advance_draw), so every replay of a captured CUDA graph
// draws the next numbers, in the same sequence as eager runs and the CPU kernel's.
#pragma once

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/generator_impl.h"

namespace oat::cuda {

class DeviceDrawCounter {
 public:
  // The counter, allocated and zeroed at the first call. That call must not be inside a CUDA
  // graph capture (a captured zeroing would restart the stream at every replay): it fails
  // naming the node then. The Trainer runs a step eagerly before it captures one.
  uint64_t* get(const KernelContext& ctx) {
    if (!t_.defined()) {
      if (cuda_context(ctx).capturing())
        ctx.fail("a node drawing random numbers must run once before a CUDA graph capture");
      t_ = Tensor(DType::I64, {1}, Device::CUDA);
      CUDA_CHECK(cudaMemsetAsync(t_.raw_data(), 0, sizeof(uint64_t), stream_of(ctx)));
    }
    return static_cast<uint64_t*>(t_.raw_data());
  }

 private:
  Tensor t_;
};

}  // namespace oat::cuda
