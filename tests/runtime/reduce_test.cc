// Reduction forward cases: axes as attribute and as input (with noop_with_empty_axes), keepdims,
// the [outer, R, inner] paths and the general path (non-adjacent axes), every Reduce* kind,
// accuracy of long float sums, LogSumExp stability, ArgMax/ArgMin and CumSum.
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/executor.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

void check_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(got.item_as_double(i) == doctest::Approx(want[i]).epsilon(tol));
}

Tensor axes(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// x [2, 3, 4] with x[i, j, k] = 12 i + 4 j + k.
Tensor iota234() {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector<float>({2, 3, 4}, v);
}

}  // namespace

TEST_CASE("ReduceSum over each axis layout") {
  Tensor x = iota234();
  // Trailing axis (contiguous rows).
  auto r2 = run_node("ReduceSum", 13, {{"keepdims", attr_i(0)}}, {x, axes({-1})});
  CHECK(r2[0].shape() == Shape{2, 3});
  check_values(r2[0], {6, 22, 38, 54, 70, 86});
  // Leading axis (columns).
  auto r0 = run_node("ReduceSum", 11, {{"axes", attr_ints({0})}}, {x});
  CHECK(r0[0].shape() == Shape{1, 3, 4});
  check_values(r0[0], {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  // Middle axis.
  auto r1 = run_node("ReduceSum", 13, {{"keepdims", attr_i(0)}}, {x, axes({1})});
  check_values(r1[0], {12, 15, 18, 21, 48, 51, 54, 57});
  // Axes 0 and 2 are not adjacent: the general path. Σ_i Σ_k (12 i + 4 j + k) = Σ_i (48 i + 16 j +
  // 6) = 60 + 32 j.
  auto r02 = run_node("ReduceSum", 13, {}, {x, axes({2, 0})});
  CHECK(r02[0].shape() == Shape{1, 3, 1});
  check_values(r02[0], {60, 92, 124});
  // No axes: everything.
  auto all = run_node("ReduceSum", 13, {{"keepdims", attr_i(0)}}, {x});
  CHECK(all[0].shape() == Shape{});
  check_values(all[0], {276});
}

TEST_CASE("ReduceSum noop_with_empty_axes returns the input") {
  Tensor x = iota234();
  auto y = run_node("ReduceSum", 13, {{"noop_with_empty_axes", attr_i(1)}}, {x, axes({})});
  CHECK(y[0].shape() == Shape{2, 3, 4});
  CHECK(y[0].to_float_vector() == x.to_float_vector());
  // Opset 18 takes axes as an input for every Reduce* op.
  auto m = run_node("ReduceMean", 18, {{"keepdims", attr_i(0)}}, {x, axes({0, 1})});
  check_values(m[0], {10, 11, 12, 13});
}

TEST_CASE("every Reduce kind on one row") {
  Tensor x = Tensor::from_vector<float>({1, 4}, {1, -2, 3, 0.5f});
  auto run = [&](const char* op) {
    return run_node(op, 13, {{"axes", attr_ints({1})}, {"keepdims", attr_i(0)}}, {x})[0];
  };
  check_values(run("ReduceMean"), {0.625});
  check_values(run("ReduceMax"), {3});
  check_values(run("ReduceMin"), {-2});
  check_values(run("ReduceProd"), {-3});
  check_values(run("ReduceSumSquare"), {14.25});
  check_values(run("ReduceL1"), {6.5});
  check_values(run("ReduceL2"), {std::sqrt(14.25)});
  check_values(run("ReduceLogSum"), {std::log(2.5)});
  const double lse = std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0) + std::exp(0.5));
  check_values(run("ReduceLogSumExp"), {lse});
}

TEST_CASE("ReduceLogSumExp is stable for large values; ReduceMax on int64") {
  Tensor x = Tensor::from_vector<float>({2, 2}, {1000, 1000, -1000, -999});
  auto y = run_node("ReduceLogSumExp", 13, {{"axes", attr_ints({1})}}, {x});
  check_values(y[0], {1000 + std::log(2.0), -999 + std::log(1 + std::exp(-1.0))});
  Tensor i = Tensor::from_vector<int64_t>({2, 2}, {int64_t{1} << 60, 3, -5, -7});
  auto m = run_node("ReduceMax", 13, {{"axes", attr_ints({1})}, {"keepdims", attr_i(0)}}, {i});
  CHECK(m[0].dtype() == DType::I64);
  CHECK(m[0].to_int_vector() == std::vector<int64_t>{int64_t{1} << 60, -5});
}

TEST_CASE("ReduceSum of a long float row is accurate") {
  // 2^22 values of 0.1f: a naive float running sum drifts by ~1e-2 relative; ours stays exact
  // to float rounding of the double sum.
  const int64_t n = int64_t{1} << 22;
  Tensor x = Tensor::from_vector<float>({n}, std::vector<float>(n, 0.1f));
  auto y = run_node("ReduceSum", 13, {{"keepdims", attr_i(0)}}, {x});
  const double want = static_cast<double>(0.1f) * n;
  CHECK(std::abs(y[0].item_as_double() - want) / want < 1e-6);
  auto m = run_node("ReduceMean", 13, {}, {x.reshaped({1024, 4096})});
  CHECK(m[0].item_as_double() == doctest::Approx(0.1).epsilon(1e-6));
}

TEST_CASE("ArgMax and ArgMin with keepdims and select_last_index") {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 5, 5, 2, 0, 2});
  auto a = run_node("ArgMax", 13, {{"axis", attr_i(1)}}, {x});
  CHECK(a[0].shape() == Shape{2, 1});
  CHECK(a[0].to_int_vector() == std::vector<int64_t>{1, 0});
  auto l = run_node("ArgMax", 13, {{"axis", attr_i(1)}, {"select_last_index", attr_i(1)}}, {x});
  CHECK(l[0].to_int_vector() == std::vector<int64_t>{2, 2});
  auto n = run_node("ArgMin", 13, {{"keepdims", attr_i(0)}}, {x});
  CHECK(n[0].shape() == Shape{3});
  CHECK(n[0].to_int_vector() == std::vector<int64_t>{0, 1, 1});
  CHECK_THROWS_WITH(run_node("ArgMin", 13, {{"axis", attr_i(2)}}, {x}),
                    doctest::Contains("axis 2 is out of range for input [2, 3]"));
}

TEST_CASE("CumSum: exclusive, reverse, axis as input") {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto ax = [](int64_t a) { return Tensor::scalar<int64_t>(a); };
  CHECK(run_node("CumSum", 14, {}, {x, ax(1)})[0].to_float_vector() ==
        std::vector<float>{1, 3, 6, 4, 9, 15});
  CHECK(run_node("CumSum", 14, {}, {x, ax(0)})[0].to_float_vector() ==
        std::vector<float>{1, 2, 3, 5, 7, 9});
  CHECK(run_node("CumSum", 14, {{"exclusive", attr_i(1)}}, {x, ax(-1)})[0].to_float_vector() ==
        std::vector<float>{0, 1, 3, 0, 4, 9});
  CHECK(run_node("CumSum", 14, {{"reverse", attr_i(1)}, {"exclusive", attr_i(1)}},
                 {x, Tensor::from_vector<int32_t>({1}, {1})})[0]
            .to_float_vector() == std::vector<float>{5, 3, 0, 11, 6, 0});
  Tensor i = Tensor::from_vector<int64_t>({3}, {1, 2, 3});
  CHECK(run_node("CumSum", 14, {{"reverse", attr_i(1)}}, {i, ax(0)})[0].to_int_vector() ==
        std::vector<int64_t>{6, 5, 3});
}

// CumSumGrad (internal domain) with the forward's attributes is CumSum's adjoint:
// Σ CumSum(x)·g = Σ x·CumSumGrad(g) for every exclusive/reverse/axis.
TEST_CASE("CumSumGrad: the adjoint of CumSum, i.e. CumSum with the opposite reverse") {
  auto run = [](const std::string& op, bool exclusive, bool reverse, const Tensor& x,
                int64_t axis) {
    Graph g;
    Node n;
    n.name = "n0";
    n.op_type = op;
    n.op = op_from_name(op);
    if (n.op == OpId::CumSumGrad) {
      n.domain = kInternalDomain;
      n.opset = 1;
      g.opsets[kInternalDomain] = 1;
    } else {
      n.opset = 14;
    }
    g.opsets[""] = 14;
    n.attrs = {{"exclusive", attr_i(exclusive)}, {"reverse", attr_i(reverse)}};
    n.inputs = {"x", "axis"};
    n.outputs = {"y"};
    g.nodes.push_back(n);
    g.inputs = {ValueInfo{"x", DType::F32, std::nullopt},
                ValueInfo{"axis", DType::I64, std::nullopt}};
    g.outputs = {ValueInfo{"y", DType::Undefined, std::nullopt}};
    Executor ex(g);
    return ex.run({{"x", x}, {"axis", Tensor::scalar<int64_t>(axis)}}).at(0).to_float_vector();
  };
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, -2, 3, 0.5f, 5, -6});
  const Tensor g = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(run("CumSumGrad", false, false, g, 1) == std::vector<float>{6, 5, 3, 15, 11, 6});
  CHECK(run("CumSumGrad", true, true, g, 0) == std::vector<float>{0, 0, 0, 1, 2, 3});
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      for (int64_t axis : {0, 1, -1}) {
        CAPTURE(exclusive);
        CAPTURE(reverse);
        CAPTURE(axis);
        const auto y = run("CumSum", exclusive, reverse, x, axis);
        const auto dx = run("CumSumGrad", exclusive, reverse, g, axis);
        double lhs = 0, rhs = 0;
        for (size_t k = 0; k < 6; ++k) {
          lhs += y[k] * g.data<float>()[k];
          rhs += x.data<float>()[k] * dx[k];
        }
        CHECK(lhs == doctest::Approx(rhs));
      }
}
