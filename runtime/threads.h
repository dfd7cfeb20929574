// Thread count for CPU kernels: OpenMP loops follow it, and so do the GEMMs (split into one
// single-threaded Eigen product per thread by cpu/kernels/gemm_split.h).
#pragma once

#include <cstdint>

namespace oat {

// n <= 0 means all hardware threads.
void set_num_threads(int n);
int num_threads();

// How the programs (the CLI, the benchmarks) want idle OpenMP threads to wait, unless the user
// set OMP_WAIT_POLICY: a short spin (GOMP_SPINCOUNT=1000, a few microseconds), then sleep
// (OMP_WAIT_POLICY=PASSIVE). libgomp reads both once at start-up, so this sets them and re-runs
// the program (execv of /proc/self/exe); it returns when the user's setting stands or the exec
// failed (the program then runs with libgomp's defaults).
//
// Why: libgomp's default spins ~300000 iterations at every barrier, and on cores that other
// processes also want a spinning thread steals the time slice its partner needs (a graph of
// many small parallel regions ran several times slower: bench/README.md). Sleeping at once costs
// a wake-up per parallel region instead, which on a VM (an idle vCPU halts and is woken through
// the hypervisor) was 36.7 against 30.0 ms for bench/transformer_encoder_bench with the short
// spin, which covers the gap between consecutive regions of one run; with two busy processes
// beside it the short spin cost 57 -> 63 ms. `infer --repeat`, 2 threads, bench/README.md.
void use_default_openmp_waiting(char** argv);

// Below about this many elements read and written, a CPU loop is not worth spreading over
// threads: waking the sleeping OpenMP threads (OMP_WAIT_POLICY=PASSIVE, the CLI's default) costs
// ~50 µs a parallel region on a 2-vCPU VM (measured: an empty 2-thread region between serial
// work), about what one core takes to stream 2^18 floats through an elementwise op. Loops that
// do less per element (a sum, a 2x2 max) use a multiple of it. On LeNet-5's 2-thread step
// (Relu/ReluGrad, pooling, conv bias gradients under it) this took the median from 2.13 to
// 2.01 ms, with 2^15-2^16 before.
constexpr int64_t kParallelMinElements = int64_t{1} << 18;

}  // namespace oat
