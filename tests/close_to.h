// A doctest check of a tensor against expected values computed in double:
// |got − want| <= tol · (1 + |want|) element by element, naming the first elements that miss.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/tensor.h"

namespace oat_test {

inline void check_close_to(const oat::Tensor& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.item_as_double(static_cast<int64_t>(i));
    CHECK_MESSAGE(std::abs(g - want[i]) <= tol * (1 + std::abs(want[i])), "element ", i, ": ", g,
                  " vs ", want[i]);
  }
}

}  // namespace oat_test
