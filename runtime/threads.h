// Thread count for CPU kernels: OpenMP loops follow it, and so do the GEMMs (split into one
// single-threaded Eigen product per thread by cpu/kernels/gemm_split.h).
#pragma once

#include <cstdint>

namespace oat {

// n <= 0 means all hardware threads.
void set_num_threads(int n);
int num_threads();

// Below about this many elements read and written, a CPU loop is not worth spreading over
// threads: waking the sleeping OpenMP threads (OMP_WAIT_POLICY=PASSIVE, the CLI's default) costs
// ~50 µs a parallel region on a 2-vCPU VM (measured: an empty 2-thread region between serial
// work), about what one core takes to stream 2^18 floats through an elementwise op. Loops that
// do less per element (a sum, a 2x2 max) use a multiple of it. On LeNet-5's 2-thread step
// (Relu/ReluGrad, pooling, conv bias gradients under it) this took the median from 2.13 to
// 2.01 ms, with 2^15-2^16 before.
constexpr int64_t kParallelMinElements = int64_t{1} << 18;

}  // namespace oat
