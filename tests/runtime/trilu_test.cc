// Trilu (runtime/cpu/kernels/trilu.cc): hand-computed triangles for upper/lower and k of both
// signs (also past the matrix), batches, non-float dtypes, empty inputs, and the errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor k_of(int64_t k) { return Tensor::from_vector<int64_t>({}, {k}); }

// 1..12 as a 3x4 matrix.
Tensor m34() {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i + 1);
  return Tensor::from_vector<float>({3, 4}, v);
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.item_as_double(i));
  return v;
}

std::vector<double> trilu(const Tensor& x, bool upper, const Tensor& k = Tensor()) {
  std::vector<Tensor> in = {x};
  if (k.defined()) in.push_back(k);
  return values(run1("Trilu", 14, {{"upper", attr_i(upper ? 1 : 0)}}, in));
}

}  // namespace

TEST_CASE("Trilu keeps the upper or lower triangle, k shifting the diagonal") {
  const Tensor x = m34();
  using V = std::vector<double>;
  CHECK(trilu(x, true) == V{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  CHECK(values(run1("Trilu", 14, {}, {x})) == trilu(x, true));  // upper defaults to 1
  CHECK(trilu(x, true, k_of(1)) == V{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(trilu(x, true, k_of(-1)) == V{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12});
  CHECK(trilu(x, true, k_of(5)) == V(12, 0.0));
  CHECK(trilu(x, true, k_of(-7)) == values(x));
  CHECK(trilu(x, false) == V{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  CHECK(trilu(x, false, k_of(2)) == V{1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(trilu(x, false, k_of(-1)) == V{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  CHECK(trilu(x, false, k_of(-3)) == V(12, 0.0));
  CHECK(trilu(x, false, k_of(9)) == values(x));
}

TEST_CASE("Trilu over a batch and in other dtypes; empty inputs") {
  // [2, 2, 3] int64: each matrix is its own triangle.
  const Tensor b = Tensor::from_vector<int64_t>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const Tensor y = run1("Trilu", 14, {{"upper", attr_i(0)}}, {b});
  CHECK(y.dtype() == DType::I64);
  CHECK(values(y) == std::vector<double>{1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0});
  const Tensor bo = Tensor::from_vector<bool>({2, 2}, {true, true, true, true});
  const Tensor yb = run1("Trilu", 14, {}, {bo, k_of(1)});
  CHECK(yb.dtype() == DType::Bool);
  CHECK(values(yb) == std::vector<double>{0, 1, 0, 0});
  const Tensor h = cast_tensor(m34(), DType::F16);
  CHECK(values(run1("Trilu", 14, {}, {h})) == trilu(m34(), true));
  const Tensor e(DType::F32, {3, 0, 5});
  CHECK(run1("Trilu", 14, {}, {e}).shape() == Shape{3, 0, 5});
  const Tensor e2(DType::F32, {2, 0});
  CHECK(run1("Trilu", 14, {}, {e2, k_of(-2)}).shape() == Shape{2, 0});
}

TEST_CASE("Trilu errors name the rank and k") {
  auto error_of = [](const std::vector<Tensor>& in) -> std::string {
    try {
      run1("Trilu", 14, {}, in);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of({Tensor::from_vector<float>({3}, {1, 2, 3})})
            .find("input must have rank 2 or more, got [3]") != std::string::npos);
  CHECK(error_of({m34(), Tensor::from_vector<int64_t>({2}, {1, 2})})
            .find("k must be a scalar, got shape [2]") != std::string::npos);
  CHECK(error_of({m34(), Tensor::from_vector<float>({}, {1})}).find("k must be int64") !=
        std::string::npos);
}
