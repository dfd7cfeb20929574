#include "runtime/threads.h"

#include <unistd.h>

#include <Eigen/Core>
#include <cstdlib>
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

void use_default_openmp_waiting(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  if (!std::getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "1000", 1);
  execv("/proc/self/exe", argv);  // returns only on failure
}

int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace oat
