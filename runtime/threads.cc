#include "runtime/threads.h"

#include <Eigen/Core>
#include <thread>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace oat {

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  // Eigen's GEMM would thread itself (with spinning synchronisation) outside a parallel region;
  // every product is split over OpenMP threads by split_product (cpu/kernels/gemm_split.h).
  Eigen::setNbThreads(1);
}

int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace oat
