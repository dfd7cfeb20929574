// Softmax family and loss forward cases: the opset-13 single-axis form (contiguous and strided),
// the opset < 13 2-D coercion, numerical stability with large inputs, Hardmax ties, and
// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss with weights, ignore_index and reductions.
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

// Softmax of x viewed as [outer, len, inner] along the middle axis, in double.
std::vector<double> reference_softmax(const std::vector<float>& x, int64_t outer, int64_t len,
                                      int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (int64_t l = 0; l < len; ++l) s += std::exp(double(x[(o * len + l) * inner + i]));
      for (int64_t l = 0; l < len; ++l) {
        const int64_t k = (o * len + l) * inner + i;
        y[k] = log ? x[k] - std::log(s) : std::exp(double(x[k])) / s;
      }
    }
  return y;
}

std::vector<float> sample(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 5 + 1) % 11) / 4.0f - 1.0f;
  return v;
}

}  // namespace

TEST_CASE("Softmax and LogSoftmax along one axis (opset 13)") {
  const auto v = sample(2 * 3 * 4);
  Tensor x = Tensor::from_vector<float>({2, 3, 4}, v);
  // axis 1 is strided (inner 4), axis -1 is contiguous.
  check_values(run_node("Softmax", 13, {{"axis", attr_i(1)}}, {x})[0],
               reference_softmax(v, 2, 3, 4, false));
  check_values(run_node("LogSoftmax", 13, {{"axis", attr_i(1)}}, {x})[0],
               reference_softmax(v, 2, 3, 4, true));
  check_values(run_node("Softmax", 13, {}, {x})[0], reference_softmax(v, 6, 4, 1, false));
  check_values(run_node("LogSoftmax", 13, {{"axis", attr_i(0)}}, {x})[0],
               reference_softmax(v, 1, 2, 12, true));
}

TEST_CASE("Softmax before opset 13 coerces the input to 2-D at axis") {
  const auto v = sample(2 * 3 * 4);
  Tensor x = Tensor::from_vector<float>({2, 3, 4}, v);
  // Default axis 1: rows of 3*4 = 12 elements.
  check_values(run_node("Softmax", 11, {}, {x})[0], reference_softmax(v, 2, 12, 1, false));
  check_values(run_node("LogSoftmax", 11, {{"axis", attr_i(2)}}, {x})[0],
               reference_softmax(v, 6, 4, 1, true));
}

TEST_CASE("Softmax is stable for large inputs") {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1000, 1001});
  const double l = std::log(1 + std::exp(-1.0));
  check_values(run_node("LogSoftmax", 13, {}, {x})[0], {-1 - l, -l});
  check_values(run_node("Softmax", 13, {}, {x})[0], {std::exp(-1 - l), std::exp(-l)});
}

TEST_CASE("Hardmax marks the first maximum") {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 3, 3, 0, -1, -2});
  check_values(run_node("Hardmax", 13, {}, {x})[0], {0, 1, 0, 1, 0, 0});
  // Along axis 0 (strided): columns {1, 0}, {3, -1}, {3, -2}.
  check_values(run_node("Hardmax", 13, {{"axis", attr_i(0)}}, {x})[0], {1, 1, 1, 0, 0, 0});
}

TEST_CASE("NegativeLogLikelihoodLoss: weights, ignore_index, reductions") {
  Tensor logp = Tensor::from_vector<float>({3, 2}, {-1, -2, -3, -4, -5, -6});
  Tensor target = Tensor::from_vector<int64_t>({3}, {0, 1, 1});
  Tensor weight = Tensor::from_vector<float>({2}, {2, 3});
  // losses -logp[n, t] * w[t] = [2, 12, 18]; weights [2, 3, 3].
  auto none = run_node("NegativeLogLikelihoodLoss", 13, {{"reduction", attr_s("none")}},
                       {logp, target, weight});
  CHECK(none[0].shape() == Shape{3});
  check_values(none[0], {2, 12, 18});
  auto sum = run_node("NegativeLogLikelihoodLoss", 13, {{"reduction", attr_s("sum")}},
                      {logp, target, weight});
  CHECK(sum[0].shape() == Shape{});
  check_values(sum[0], {32});
  check_values(run_node("NegativeLogLikelihoodLoss", 13, {}, {logp, target, weight})[0], {4});
  // Without weights the mean is over positions: (1 + 4 + 6) / 3.
  check_values(run_node("NegativeLogLikelihoodLoss", 13, {}, {logp, target})[0], {11.0 / 3});
  // ignore_index 1 leaves only n = 0: mean 2 / 2 = 1.
  check_values(run_node("NegativeLogLikelihoodLoss", 13, {{"ignore_index", attr_i(1)}},
                        {logp, target, weight})[0],
               {1});
  // Int32 targets and an out-of-range class.
  Tensor t32 = Tensor::from_vector<int32_t>({3}, {0, 1, 2});
  CHECK_THROWS_WITH(run_node("NegativeLogLikelihoodLoss", 13, {}, {logp, t32}),
                    doctest::Contains("target value 2 at position 2 is outside [0, 2)"));
}

TEST_CASE("SoftmaxCrossEntropyLoss with log_prob output, [N, C, D] layout") {
  // scores [1, 2, 2]: position 0 has class scores {0, 0}, position 1 has {1, 3}.
  Tensor scores = Tensor::from_vector<float>({1, 2, 2}, {0, 1, 0, 3});
  Tensor labels = Tensor::from_vector<int64_t>({1, 2}, {1, 0});
  const double l2 = std::log(2.0), lse1 = 3 + std::log(1 + std::exp(-2.0));
  auto y =
      run_node("SoftmaxCrossEntropyLoss", 13, {{"reduction", attr_s("none")}}, {scores, labels}, 2);
  CHECK(y[0].shape() == Shape{1, 2});
  check_values(y[0], {l2, lse1 - 1});
  CHECK(y[1].shape() == Shape{1, 2, 2});
  check_values(y[1], {-l2, 1 - lse1, -l2, 3 - lse1});
  // Mean over both positions; with ignore_index 0 only position 0 counts.
  check_values(run_node("SoftmaxCrossEntropyLoss", 13, {}, {scores, labels})[0],
               {(l2 + lse1 - 1) / 2});
  check_values(
      run_node("SoftmaxCrossEntropyLoss", 13, {{"ignore_index", attr_i(0)}}, {scores, labels})[0],
      {l2});
}
