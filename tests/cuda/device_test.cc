// The CUDA backend's seam. Runs wherever a device answers; elsewhere it says it skipped.
#include <doctest/doctest.h>

#include <iostream>

#include "runtime/cuda/device.h"

TEST_CASE("CUDA device query") {
  if (!oat::cuda::compiled()) {
    std::cout << "SKIPPED: this build has no CUDA backend\n";
    CHECK(oat::cuda::device_count() == 0);
    return;
  }
  const int n = oat::cuda::device_count();
  if (n == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << oat::cuda::describe_device() << ")\n";
    CHECK(oat::cuda::describe_device() == "no CUDA device answers");
    return;
  }
  const std::string d = oat::cuda::describe_device(0);
  std::cout << "CUDA device 0: " << d << "\n";
  CHECK(d.find("sm_") != std::string::npos);
  CHECK(oat::cuda::describe_device(n) == "CUDA device index out of range");
}
