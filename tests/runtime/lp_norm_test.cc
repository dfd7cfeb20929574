// LpNormalization (runtime/cpu/kernels/lp_norm.cc): hand-computed values for p = 1 and 2 along
// the last and a leading axis (the values ONNX Runtime 1.31 gives for the same inputs), a zero
// lane (0, not NaN), the defaults, F64/F16/BF16, and the errors naming the node. Its gradient
// LpNormalizationGrad is checked in tests/train/grad_norm_test.cc.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

void check_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-6) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    CAPTURE(i);
    CHECK(std::isfinite(got.item_as_double(i)));
    CHECK(got.item_as_double(i) == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

// Rows: a zero lane, [1, -2, 2] (L1 5, L2 3) and [3, -4, 0] (L1 7, L2 5).
Tensor x33() { return Tensor::from_vector<float>({3, 3}, {0, 0, 0, 1, -2, 2, 3, -4, 0}); }

Tensor lp(const Tensor& x, std::map<std::string, Attribute> attrs) {
  return run1("LpNormalization", 1, attrs, {x});
}

}  // namespace

TEST_CASE("LpNormalization p = 2 and p = 1 along the last axis; a zero lane stays 0") {
  check_values(lp(x33(), {{"p", attr_i(2)}, {"axis", attr_i(-1)}}),
               {0, 0, 0, 1.0 / 3, -2.0 / 3, 2.0 / 3, 0.6, -0.8, 0});
  check_values(lp(x33(), {{"p", attr_i(1)}, {"axis", attr_i(1)}}),
               {0, 0, 0, 0.2, -0.4, 0.4, 3.0 / 7, -4.0 / 7, 0});
  // Defaults: axis -1, p 2.
  check_values(lp(x33(), {}), {0, 0, 0, 1.0 / 3, -2.0 / 3, 2.0 / 3, 0.6, -0.8, 0});
}

TEST_CASE("LpNormalization along axis 0 (strided lanes)") {
  // Columns: {0, 1, 3} (L2 √10, L1 4), {0, -2, -4} (L2 √20, L1 6), {0, 2, 0} (L2 2, L1 2).
  const double s10 = std::sqrt(10.0), s20 = std::sqrt(20.0);
  check_values(lp(x33(), {{"axis", attr_i(0)}}),
               {0, 0, 0, 1 / s10, -2 / s20, 1, 3 / s10, -4 / s20, 0});
  check_values(lp(x33(), {{"axis", attr_i(-2)}, {"p", attr_i(1)}}),
               {0, 0, 0, 0.25, -1.0 / 3, 1, 0.75, -2.0 / 3, 0});
  // [2, 2, 2]: lanes along the middle axis.
  const Tensor x = Tensor::from_vector<float>({2, 2, 2}, {3, 0, 4, 0, 0, 5, 0, 12});
  check_values(lp(x, {{"axis", attr_i(1)}}), {0.6, 0, 0.8, 0, 0, 5.0 / 13, 0, 12.0 / 13});
}

TEST_CASE("LpNormalization in F64, F16 and BF16") {
  const Tensor y64 = lp(cast_tensor(x33(), DType::F64), {{"p", attr_i(1)}});
  CHECK(y64.dtype() == DType::F64);
  check_values(y64, {0, 0, 0, 0.2, -0.4, 0.4, 3.0 / 7, -4.0 / 7, 0}, 1e-14);
  const Tensor y16 = lp(cast_tensor(x33(), DType::F16), {});
  CHECK(y16.dtype() == DType::F16);
  check_values(y16, {0, 0, 0, 1.0 / 3, -2.0 / 3, 2.0 / 3, 0.6, -0.8, 0}, 1e-3);
  const Tensor yb = lp(cast_tensor(x33(), DType::BF16), {});
  CHECK(yb.dtype() == DType::BF16);
  check_values(yb, {0, 0, 0, 1.0 / 3, -2.0 / 3, 2.0 / 3, 0.6, -0.8, 0}, 1e-2);
}

TEST_CASE("LpNormalization errors name the node, p and the axis") {
  auto error_of = [](std::map<std::string, Attribute> attrs, const Tensor& x) -> std::string {
    try {
      lp(x, attrs);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of({{"p", attr_i(3)}}, x33()) ==
        "node 'n0' (LpNormalization, opset 1): p must be 1 or 2, got 3");
  CHECK(error_of({{"axis", attr_i(2)}}, x33()).find("axis 2 is out of range for input [3, 3]") !=
        std::string::npos);
  CHECK(error_of({}, Tensor::scalar<float>(2)).find("axis -1 is out of range for input []") !=
        std::string::npos);
}
