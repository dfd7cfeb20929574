// The CUDA emulator's kernel launches (see runtime/cuda/emulator/README.md).
//
//   kernel<<<grid, block, smem, stream>>>(args...)
// is rewritten at build time (tools/emu_rewrite.cc) into
//   ::oat_emu::Launch(grid, block, smem, stream).named("FILE:LINE kernel")(kernel, args...)
// which checks the launch configuration as the CUDA runtime does (an error for cudaGetLastError,
// nothing run), converts the arguments to the kernel's parameter types now (a launch copies its
// arguments), and hands one closure to the stream: it runs every thread of every block on the
// CPU, or is recorded while the stream captures a graph.
//
// Threads of a block run as fibers on one OS thread: a thread runs until it reaches
// __syncthreads() or a warp shuffle, and a barrier opens when every live thread of the block (of
// the warp, for a shuffle) has reached it, so block reductions and shuffles mean what they mean on
// a GPU. A kernel whose first block reaches no barrier runs its other threads as plain calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace oat_emu {

// What threadIdx, blockIdx, blockDim and gridDim read while a kernel runs.
struct ThreadIndex {
  uint3 thread{0, 0, 0}, block{0, 0, 0};
  dim3 block_dim{1, 1, 1}, grid_dim{1, 1, 1};
};
extern thread_local ThreadIndex t_index;

// __syncthreads_or semantics; __syncthreads is sync(0).
int block_barrier(int predicate);

// How many cudnnFind*AlgorithmEx calls the emulator has answered (for tests: the timed search
// of --cudnn-benchmark was taken).
uint64_t cudnn_find_calls();
// How many kernel launches (run or recorded into a graph) so far had a name ("file.cu:line
// kernel<T>") containing `part` (for tests: the whole optimizer step is one launch).
uint64_t kernel_launches(const char* part);

// A vector access of `bytes` at p: a GPU faults unless p is a multiple of `bytes` (the host's
// loads would not), so the emulator stops, naming the kernel (vector_map.cuh's packs).
void check_vector_access(const void* p, size_t bytes);
// The value of `bits` held by source lane src(lane) of the calling thread's warp, where
// kind: 0 down (lane + delta), 1 up (lane - delta), 2 xor (lane ^ delta), 3 idx (delta);
// lanes outside the thread's `width` segment read their own value, as on a GPU. Every lane named
// in `mask` must exist and reach the shuffle (else the result is undefined on a GPU: an error).
uint64_t warp_shuffle(unsigned mask, uint64_t bits, int kind, int delta, int width);

// Runs (or records) one launch of `body`, each thread calling it once; `name` (the kernel and
// its source line) is what errors name.
void launch_kernel(const char* name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   std::function<void()> body);

class Launch {
 public:
  Launch(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = nullptr)
      : grid_(grid), block_(block), smem_(smem), stream_(stream) {}

  // The rewritten launches name themselves: "file.cu:line kernel<T>".
  Launch& named(const char* name) {
    name_ = name;
    return *this;
  }

  template <class... P, class... A>
  void operator()(void (*kernel)(P...), A&&... args) const {
    static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong argument count");
    std::tuple<std::decay_t<P>...> params(static_cast<std::decay_t<P>>(std::forward<A>(args))...);
    launch_kernel(name_, grid_, block_, smem_, stream_,
                  [kernel, params]() { std::apply(kernel, params); });
  }

 private:
  dim3 grid_, block_;
  size_t smem_;
  cudaStream_t stream_;
  const char* name_ = "a kernel";
};

}  // namespace oat_emu
