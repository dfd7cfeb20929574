// Normalisation forward cases: BatchNormalization in inference mode, training mode (batch
// statistics and running-statistics update as the ONNX spec defines them), the legacy
// five-output form and spatial=0; LayerNormalization with its Mean/InvStdDev outputs;
// InstanceNormalization. Expected values are computed by hand in the comments.
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

Tensor vec(std::vector<float> v) { return Tensor::from_vector<float>({(int64_t)v.size()}, v); }

// X [N=2, C=2, 1, 2]: channel 0 holds {1, 3, 5, 7} (mean 4, population variance 5),
// channel 1 holds {2, 2, 2, 2} (mean 2, variance 0).
Tensor bn_input() { return Tensor::from_vector<float>({2, 2, 1, 2}, {1, 3, 2, 2, 5, 7, 2, 2}); }

// Y for scale [1, 2], B [0, 0.5] normalised with mean [4, 2], var [5, 0], epsilon 1e-5.
std::vector<double> bn_expected_y() {
  const double s = std::sqrt(5.0 + 1e-5);
  return {-3 / s, -1 / s, 0.5, 0.5, 1 / s, 3 / s, 0.5, 0.5};
}

}  // namespace

TEST_CASE("BatchNormalization inference mode") {
  auto y = run_node("BatchNormalization", 15, {},
                    {bn_input(), vec({1, 2}), vec({0, 0.5f}), vec({4, 2}), vec({5, 0})});
  REQUIRE(y[0].shape() == Shape{2, 2, 1, 2});
  check_values(y[0], bn_expected_y());
}

TEST_CASE("BatchNormalization training mode uses batch statistics and updates running ones") {
  // running = input * momentum + current * (1 - momentum), momentum 0.9 (the default):
  //   mean: [0 * 0.9 + 4 * 0.1, 1 * 0.9 + 2 * 0.1] = [0.4, 1.1]
  //   var:  [1 * 0.9 + 5 * 0.1, 1 * 0.9 + 0 * 0.1] = [1.4, 0.9]
  auto y = run_node("BatchNormalization", 15, {{"training_mode", attr_i(1)}},
                    {bn_input(), vec({1, 2}), vec({0, 0.5f}), vec({0, 1}), vec({1, 1})}, 3);
  check_values(y[0], bn_expected_y());
  check_values(y[1], {0.4, 1.1});
  check_values(y[2], {1.4, 0.9});
  CHECK(y[1].shape() == Shape{2});

  // Another momentum: running_mean = 0 * 0.5 + 4 * 0.5 = 2.
  auto z =
      run_node("BatchNormalization", 14, {{"training_mode", attr_i(1)}, {"momentum", attr_f(0.5f)}},
               {bn_input(), vec({1, 2}), vec({0, 0.5f}), vec({0, 1}), vec({1, 1})}, 3);
  check_values(z[1], {2.0, 1.5});
  check_values(z[2], {3.0, 0.5});
}

TEST_CASE("BatchNormalization opset 9 training outputs running and saved statistics") {
  auto y = run_node("BatchNormalization", 9, {},
                    {bn_input(), vec({1, 2}), vec({0, 0.5f}), vec({0, 1}), vec({1, 1})}, 5);
  check_values(y[0], bn_expected_y());
  check_values(y[1], {0.4, 1.1});
  check_values(y[2], {1.4, 0.9});
  check_values(y[3], {4, 2});
  check_values(y[4], {5, 0});
}

TEST_CASE("BatchNormalization opset 7 spatial=0 normalises every activation separately") {
  // scale 1, var 1, mean = X: Y = (X - mean) / sqrt(1 + eps) + B = B.
  Tensor x = Tensor::from_vector<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor p = [] { return Tensor::from_vector<float>({2, 1, 2}, {1, 1, 1, 1}); }();
  Tensor b = Tensor::from_vector<float>({2, 1, 2}, {0, 1, 2, 3});
  Tensor m = Tensor::from_vector<float>({2, 1, 2}, {1, 2, 3, 4});
  auto y = run_node("BatchNormalization", 7, {{"spatial", attr_i(0)}}, {x, p, b, m, p});
  check_values(y[0], {0, 1, 2, 3});
}

TEST_CASE("LayerNormalization with Mean and InvStdDev outputs") {
  // Rows {1, 2, 3}: mean 2, var 2/3; {2, 4, 6}: mean 4, var 8/3. Scale [1, 1, 2], no bias.
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 2, 4, 6});
  auto y = run_node("LayerNormalization", 17, {{"epsilon", attr_f(0.0f)}},
                    {x, vec({1, 1, 2}), Tensor()}, 3);
  const double i0 = std::sqrt(1.5), i1 = std::sqrt(3.0 / 8.0);
  check_values(y[0], {-i0, 0, 2 * i0, -2 * i1, 0, 4 * i1});
  CHECK(y[1].shape() == Shape{2, 1});
  check_values(y[1], {2, 4});
  check_values(y[2], {i0, i1});

  // axis 0: the whole tensor is one row (mean 3, var 8/3), with a bias.
  auto z = run_node("LayerNormalization", 17, {{"axis", attr_i(0)}, {"epsilon", attr_f(0)}},
                    {x, Tensor::from_vector<float>({2, 3}, {1, 1, 1, 1, 1, 1}),
                     Tensor::from_vector<float>({2, 3}, {1, 1, 1, 1, 1, 1})},
                    2);
  const double inv = 1.0 / std::sqrt(8.0 / 3.0);
  check_values(z[0], {1 - 2 * inv, 1 - inv, 1, 1 - inv, 1 + inv, 1 + 3 * inv});
  CHECK(z[1].shape() == Shape{1, 1});
}

TEST_CASE("LayerNormalization matches a two-pass double reference on wide rows") {
  const int64_t rows = 64, n = 768;
  std::vector<float> v(rows * n);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 100.0f + static_cast<float>((i * 37) % 101) / 10.0f;
  Tensor x = Tensor::from_vector<float>({rows, n}, v);
  std::vector<float> ones(n, 1.0f);
  auto y = run_node("LayerNormalization", 17, {}, {x, Tensor::from_vector<float>({n}, ones)});
  const float* yp = y[0].data<float>();
  for (int64_t r = 0; r < rows; r += 9) {
    double m = 0, q = 0;
    for (int64_t k = 0; k < n; ++k) m += v[r * n + k];
    m /= n;
    for (int64_t k = 0; k < n; ++k) q += (v[r * n + k] - m) * (v[r * n + k] - m);
    const double inv = 1.0 / std::sqrt(q / n + 1e-5);
    for (int64_t k = 0; k < n; k += 17)
      CHECK(yp[r * n + k] == doctest::Approx((v[r * n + k] - m) * inv).epsilon(1e-4));
  }
}

TEST_CASE("InstanceNormalization normalises each (n, c) plane") {
  // c0 {1, 3}: mean 2, var 1 -> {-1, 1}; c1 {2, 6}: mean 4, var 4 -> {-1, 1} * 2 + 1.
  Tensor x = Tensor::from_vector<float>({1, 2, 2}, {1, 3, 2, 6});
  auto y =
      run_node("InstanceNormalization", 6, {{"epsilon", attr_f(0)}}, {x, vec({1, 2}), vec({0, 1})});
  check_values(y[0], {-1, 1, -1, 3});
}

TEST_CASE("normalisation errors name the parameter and its shape") {
  CHECK_THROWS_WITH(run_node("BatchNormalization", 15, {},
                             {bn_input(), vec({1, 2, 3}), vec({0, 0}), vec({0, 0}), vec({1, 1})}),
                    doctest::Contains("scale (input 1) has shape [3], expected 2 elements"));
}
