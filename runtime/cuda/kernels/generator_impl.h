// The device generators' draw counter step (generator_impl.cu; draw_counter.h holds the counter).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// *draw += 1 on s: after a generator kernel has read it, so each run (and each replay of a
// captured CUDA graph) draws the next numbers.
void launch_advance_draw(uint64_t* draw, cudaStream_t s);

}  // namespace oat::cuda
