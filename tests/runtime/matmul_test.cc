// MatMul and Gemm forward cases: numpy broadcasting of the batch dims, 1-D operands, the folded
// and per-batch GEMM paths, Gemm's transposes/alpha/beta/C broadcast, and shape errors.
#include <doctest/doctest.h>

#include "runtime/executor.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

// Deterministic values that are exact in float (small multiples of 1/8).
Tensor ramp(const Shape& s, float offset) {
  std::vector<float> v(numel(s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7 + 3) % 17) / 8.0f - offset;
  return Tensor::from_vector<float>(s, v);
}

// Reference numpy matmul for rank >= 2 operands with broadcast batch dims (up to rank 4).
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Shape sa = a.shape(), sb = b.shape();
  while (sa.size() < 4) sa.insert(sa.begin(), 1);
  while (sb.size() < 4) sb.insert(sb.begin(), 1);
  const int64_t M = sa[2], K = sa[3], N = sb[3];
  Shape out = {std::max(sa[0], sb[0]), std::max(sa[1], sb[1]), M, N};
  std::vector<float> y(numel(out));
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < out[0]; ++i)
    for (int64_t j = 0; j < out[1]; ++j)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k) {
            const int64_t ia = (((i % sa[0]) * sa[1] + (j % sa[1])) * M + m) * K + k;
            const int64_t ib = (((i % sb[0]) * sb[1] + (j % sb[1])) * K + k) * N + n;
            s += static_cast<double>(pa[ia]) * pb[ib];
          }
          y[((i * out[1] + j) * M + m) * N + n] = static_cast<float>(s);
        }
  return Tensor::from_vector<float>(out, y);
}

void check_close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  REQUIRE(got.numel() == want.numel());
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(got.item_as_double(i) == doctest::Approx(want.item_as_double(i)).epsilon(tol));
}

}  // namespace

TEST_CASE("MatMul broadcasts batch dimensions like numpy") {
  // A [2,1,2,3] x B [3,3,2] -> [2,3,2,2]: A broadcast along dim 1, B along dim 0.
  Tensor a = ramp({2, 1, 2, 3}, 1.0f), b = ramp({3, 3, 2}, 0.5f);
  auto y = run_node("MatMul", 13, {}, {a, b});
  REQUIRE(y[0].shape() == Shape{2, 3, 2, 2});
  check_close(y[0], naive_matmul(a, b));
}

TEST_CASE("MatMul folds [B, M, K] x [K, N] into one GEMM and runs many small batches") {
  Tensor a = ramp({3, 4, 5}, 1.0f), b = ramp({5, 6}, 0.25f);
  auto y = run_node("MatMul", 13, {}, {a, b});
  REQUIRE(y[0].shape() == Shape{3, 4, 6});
  check_close(y[0], naive_matmul(a, b));

  Tensor c = ramp({4, 8, 3, 5}, 1.0f), d = ramp({4, 8, 5, 2}, 0.75f);
  auto z = run_node("MatMul", 13, {}, {c, d});
  REQUIRE(z[0].shape() == Shape{4, 8, 3, 2});
  check_close(z[0], naive_matmul(c, d));

  // A shared by every batch of B.
  Tensor e = ramp({3, 5}, 1.0f), f = ramp({2, 5, 4}, 0.5f);
  auto w = run_node("MatMul", 13, {}, {e, f});
  REQUIRE(w[0].shape() == Shape{2, 3, 4});
  check_close(w[0], naive_matmul(e, f));
}

TEST_CASE("MatMul promotes 1-D operands and removes the added dimension") {
  Tensor v = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor m = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto vm = run_node("MatMul", 13, {}, {v, m});
  REQUIRE(vm[0].shape() == Shape{2});
  CHECK(vm[0].to_float_vector() == std::vector<float>{22, 28});

  Tensor mt = Tensor::from_vector<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  auto mv = run_node("MatMul", 13, {}, {mt, v});
  REQUIRE(mv[0].shape() == Shape{2});
  CHECK(mv[0].to_float_vector() == std::vector<float>{22, 28});

  auto dot = run_node("MatMul", 13, {}, {v, v});
  REQUIRE(dot[0].shape() == Shape{});
  CHECK(dot[0].item_as_double() == 14.0);

  // Batched matrix times vector: [2, 2, 3] x [3] -> [2, 2].
  Tensor bm = Tensor::from_vector<float>({2, 2, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  auto bmv = run_node("MatMul", 13, {}, {bm, v});
  REQUIRE(bmv[0].shape() == Shape{2, 2});
  CHECK(bmv[0].to_float_vector() == std::vector<float>{1, 2, 3, 6});
}

TEST_CASE("MatMul on int64 and float64") {
  Tensor a = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  auto y = run_node("MatMul", 13, {}, {a, a});
  CHECK(y[0].to_int_vector() == std::vector<int64_t>{7, 10, 15, 22});
  Tensor d = Tensor::from_vector<double>({1, 2}, {0.5, 0.25});
  Tensor e = Tensor::from_vector<double>({2, 1}, {2.0, 4.0});
  CHECK(run_node("MatMul", 13, {}, {d, e})[0].item_as_double() == 2.0);
}

TEST_CASE("MatMul reports mismatched shapes") {
  Tensor a = ramp({2, 3}, 0), b = ramp({4, 2}, 0);
  CHECK_THROWS_WITH(run_node("MatMul", 13, {}, {a, b}),
                    doctest::Contains("inner dimensions differ: [2, 3] x [4, 2]"));
  Tensor c = ramp({2, 2, 3}, 0), d = ramp({3, 3, 2}, 0);
  CHECK_THROWS_WITH(run_node("MatMul", 13, {}, {c, d}), doctest::Contains("do not broadcast"));
}

TEST_CASE("Gemm: transposes, alpha, beta and C broadcast") {
  // A' = Aᵀ = [[1, 2], [3, 4]], B' = Bᵀ = [[5, 6], [7, 8]]: A'B' = [[19, 22], [43, 50]].
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, 3, 2, 4});
  Tensor b = Tensor::from_vector<float>({2, 2}, {5, 7, 6, 8});
  Tensor c = Tensor::from_vector<float>({2}, {1, 2});  // [N], broadcast over rows
  auto y = run_node("Gemm", 13,
                    {{"transA", attr_i(1)},
                     {"transB", attr_i(1)},
                     {"alpha", attr_f(0.5f)},
                     {"beta", attr_f(2.0f)}},
                    {a, b, c});
  CHECK(y[0].to_float_vector() == std::vector<float>{11.5f, 15, 23.5f, 29});

  // No C (opset 11+), and a [M, 1] C.
  Tensor an = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor bn = Tensor::from_vector<float>({2, 2}, {5, 6, 7, 8});
  CHECK(run_node("Gemm", 13, {}, {an, bn, Tensor()})[0].to_float_vector() ==
        std::vector<float>{19, 22, 43, 50});
  Tensor cm = Tensor::from_vector<float>({2, 1}, {10, 100});
  CHECK(run_node("Gemm", 13, {}, {an, bn, cm})[0].to_float_vector() ==
        std::vector<float>{29, 32, 143, 150});

  Tensor bad = Tensor::from_vector<float>({3}, {1, 2, 3});
  CHECK_THROWS_WITH(run_node("Gemm", 13, {}, {an, bn, bad}),
                    doctest::Contains("C [3] does not broadcast to [2, 2]"));
}
