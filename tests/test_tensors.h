// Random tensors for tests that build their own graphs: uniform F32 values from a fixed seed.
#pragma once

#include <cstdint>
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

}  // namespace oat_test
