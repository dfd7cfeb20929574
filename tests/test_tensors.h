// Random tensors for tests that build their own graphs (uniform F32 values from a fixed seed), and
// the error measure the model tests compare outputs with.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "runtime/tensor.h"

namespace oat_test {

inline oat::Tensor uniform_tensor(oat::Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  oat::Tensor t(oat::DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// max |got - want| (infinite when a difference is NaN) and max |want| over two F32 tensors of the
// same element count.
struct MaxError {
  double err = 0, ref = 0;
};
inline MaxError max_abs_error(const oat::Tensor& got, const oat::Tensor& want) {
  MaxError m;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = std::abs(double(got.data<float>()[i]) - want.data<float>()[i]);
    m.err = std::max(m.err, std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
    m.ref = std::max(m.ref, double(std::abs(want.data<float>()[i])));
  }
  return m;
}

}  // namespace oat_test
