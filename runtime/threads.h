// Thread count for CPU kernels: OpenMP loops and Eigen's GEMM both follow it.
#pragma once

namespace oat {

// n <= 0 means all hardware threads.
void set_num_threads(int n);
int num_threads();

}  // namespace oat
