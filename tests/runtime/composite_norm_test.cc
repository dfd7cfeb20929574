// LRN and MeanVarianceNormalization, which run as expansions (runtime/composite/norm.cc): against
// direct double-precision loops over their ONNX definitions, for several window sizes (odd and
// even: the window is asymmetric), ranks and axes, in F64, F32 and F16, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor random_f64(const Shape& s, unsigned seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t(DType::F64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(rng);
  return t;
}

// square_sum over channels max(0, c − ⌊(size−1)/2⌋) .. min(C−1, c + ⌈(size−1)/2⌉), then
// Y = X · (bias + alpha/size · square_sum)^(−beta).
std::vector<double> lrn_reference(const Tensor& x, int64_t size, double alpha, double beta,
                                  double bias) {
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / (n * c);
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < inner; ++k) {
        double ss = 0;
        const int64_t lo = std::max<int64_t>(0, ch - (size - 1) / 2);
        const int64_t hi = std::min<int64_t>(c - 1, ch + (size - 1) - (size - 1) / 2);
        for (int64_t i = lo; i <= hi; ++i) {
          const double v = x.item_as_double((b * c + i) * inner + k);
          ss += v * v;
        }
        const int64_t at = (b * c + ch) * inner + k;
        y[at] = x.item_as_double(at) * std::pow(bias + alpha / size * ss, -beta);
      }
  return y;
}

// Mean and variance over `axes` of a rank-4 tensor, Y = (X − mean) / (√var + 1e-9).
std::vector<double> mvn_reference(const Tensor& x, const std::vector<int64_t>& axes) {
  const Shape& s = x.shape();
  std::vector<bool> reduced(4, false);
  for (int64_t a : axes) reduced[a < 0 ? a + 4 : a] = true;
  auto key = [&](int64_t i) {  // the index with reduced axes zeroed
    int64_t idx[4], r = i;
    for (int d = 3; d >= 0; --d) idx[d] = r % s[d], r /= s[d];
    int64_t k = 0;
    for (int d = 0; d < 4; ++d) k = k * s[d] + (reduced[d] ? 0 : idx[d]);
    return k;
  };
  std::map<int64_t, double> sum, sq, cnt;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.item_as_double(i);
    sum[key(i)] += v;
    sq[key(i)] += v * v;
    cnt[key(i)] += 1;
  }
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double m = sum[key(i)] / cnt[key(i)];
    const double var = sq[key(i)] / cnt[key(i)] - m * m;
    y[i] = (x.item_as_double(i) - m) / (std::sqrt(std::max(var, 0.0)) + 1e-9);
  }
  return y;
}

void check_close(const Tensor& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(got.item_as_double(i) - want[i]) / (1 + std::abs(want[i])));
  CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("LRN matches its definition: odd and even windows, ranks 3 to 5, defaults") {
  for (int64_t size : {1, 2, 3, 4, 5}) {
    CAPTURE(size);
    const Tensor x = random_f64({2, 6, 3, 2}, 7 + static_cast<unsigned>(size));
    auto y = run_node("LRN", 13,
                      {{"size", attr_i(size)}, {"alpha", attr_f(0.02f)}, {"beta", attr_f(0.6f)},
                       {"bias", attr_f(1.5f)}},
                      {x});
    check_close(y[0], lrn_reference(x, size, double(0.02f), double(0.6f), 1.5), 1e-12);
  }
  const Tensor x3 = random_f64({2, 4, 5}, 3);
  check_close(run_node("LRN", 1, {{"size", attr_i(3)}}, {x3})[0],
              lrn_reference(x3, 3, double(1e-4f), 0.75, 1.0), 1e-12);
  const Tensor x5 = random_f64({1, 5, 2, 2, 3}, 4);
  check_close(run_node("LRN", 13, {{"size", attr_i(3)}, {"alpha", attr_f(0.5f)}}, {x5})[0],
              lrn_reference(x5, 3, 0.5, 0.75, 1.0), 1e-12);
}

TEST_CASE("LRN in float32 and float16") {
  const Tensor x = random_f64({2, 5, 4, 4}, 11);
  const auto want = lrn_reference(x, 3, double(0.1f), 0.75, 1.0);
  const std::map<std::string, Attribute> a = {{"size", attr_i(3)}, {"alpha", attr_f(0.1f)}};
  check_close(run_node("LRN", 13, a, {cast_tensor(x, DType::F32)})[0], want, 1e-5);
  const Tensor h = cast_tensor(x, DType::F16);
  auto y = run_node("LRN", 13, a, {h})[0];
  CHECK(y.dtype() == DType::F16);
  check_close(y, lrn_reference(cast_tensor(h, DType::F64), 3, double(0.1f), 0.75, 1.0), 4e-3);
}

TEST_CASE("MeanVarianceNormalization matches its definition for default and given axes") {
  const Tensor x = random_f64({2, 3, 4, 5}, 21, -3.0, 5.0);
  check_close(run_node("MeanVarianceNormalization", 13, {}, {x})[0], mvn_reference(x, {0, 2, 3}),
              1e-9);
  for (std::vector<int64_t> axes : {std::vector<int64_t>{2, 3}, {1}, {-1}, {0, 1, 2, 3}}) {
    CAPTURE(axes.size());
    check_close(run_node("MeanVarianceNormalization", 9, {{"axes", attr_ints(axes)}}, {x})[0],
                mvn_reference(x, axes), 1e-9);
  }
  auto y = run_node("MeanVarianceNormalization", 13, {}, {cast_tensor(x, DType::F32)})[0];
  CHECK(y.dtype() == DType::F32);
  check_close(y, mvn_reference(x, {0, 2, 3}), 1e-5);
  // A constant slice: variance 0 (or a rounding below it), Y = 0 rather than NaN.
  Tensor c(DType::F32, {1, 2, 2, 2});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = 0.1f;
  auto z = run_node("MeanVarianceNormalization", 13, {}, {c})[0];
  for (int64_t i = 0; i < z.numel(); ++i) CHECK(z.item_as_double(i) == 0.0);
}

TEST_CASE("LRN and MeanVarianceNormalization errors name the node") {
  const Tensor x = random_f64({2, 4, 3}, 5);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([&] { run_node("LRN", 13, {}, {x}); }) ==
        "node 'n0' (LRN, opset 13): the size attribute is required");
  CHECK(message([&] { run_node("LRN", 13, {{"size", attr_i(0)}}, {x}); }) ==
        "node 'n0' (LRN, opset 13): size must be at least 1, got 0");
  CHECK(message([&] { run_node("LRN", 13, {{"size", attr_i(3)}}, {random_f64({4, 3}, 1)}); }) ==
        "node 'n0' (LRN, opset 13): X must be (N, C, D1, ...), got rank 2");
  CHECK(message([&] {
          run_node("MeanVarianceNormalization", 13, {{"axes", attr_ints({3})}}, {x});
        }) == "node 'n0' (MeanVarianceNormalization, opset 13): axis 3 is out of range for X of rank 3");
}

namespace {

// Per (n, group): mean and variance over the group's channels and spatial positions, then
// scale/bias per group (opset 18) or per channel (opset 21).
std::vector<double> group_norm_reference(const Tensor& x, int64_t groups, const Tensor& scale,
                                         const Tensor& bias, bool per_channel, double eps) {
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / (n * c), cg = c / groups;
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (b * c + g * cg) * inner, len = cg * inner;
      double m = 0, v = 0;
      for (int64_t i = 0; i < len; ++i) m += x.item_as_double(base + i);
      m /= static_cast<double>(len);
      for (int64_t i = 0; i < len; ++i) v += std::pow(x.item_as_double(base + i) - m, 2);
      v /= static_cast<double>(len);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t k = per_channel ? g * cg + i / inner : g;
        y[base + i] = (x.item_as_double(base + i) - m) / std::sqrt(v + eps) *
                          scale.item_as_double(k) + bias.item_as_double(k);
      }
    }
  return y;
}

}  // namespace

TEST_CASE("GroupNormalization matches its definition: per-group (18) and per-channel (21) affine") {
  const Tensor x = random_f64({2, 6, 3, 4}, 31, -2.0, 3.0);
  for (int64_t groups : {1, 2, 3, 6}) {
    CAPTURE(groups);
    const Tensor s18 = random_f64({groups}, 32), b18 = random_f64({groups}, 33);
    check_close(run_node("GroupNormalization", 18,
                         {{"num_groups", attr_i(groups)}, {"epsilon", attr_f(1e-3f)}},
                         {x, s18, b18})[0],
                group_norm_reference(x, groups, s18, b18, false, double(1e-3f)), 1e-10);
    const Tensor s21 = random_f64({6}, 34), b21 = random_f64({6}, 35);
    check_close(run_node("GroupNormalization", 21, {{"num_groups", attr_i(groups)}},
                         {x, s21, b21})[0],
                group_norm_reference(x, groups, s21, b21, true, double(1e-5f)), 1e-10);
  }
  const Tensor x3 = random_f64({3, 4, 5}, 36);  // rank 3, float32
  const Tensor s = random_f64({2}, 37), b = random_f64({2}, 38);
  auto y = run_node("GroupNormalization", 18, {{"num_groups", attr_i(2)}},
                    {cast_tensor(x3, DType::F32), cast_tensor(s, DType::F32),
                     cast_tensor(b, DType::F32)})[0];
  CHECK(y.dtype() == DType::F32);
  check_close(y, group_norm_reference(x3, 2, s, b, false, double(1e-5f)), 1e-5);
}

TEST_CASE("GroupNormalization errors name the node and what does not fit") {
  const Tensor x = random_f64({2, 6, 3}, 5), s = random_f64({2}, 6), b = random_f64({2}, 7);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([&] { run_node("GroupNormalization", 18, {}, {x, s, b}); }) ==
        "node 'n0' (GroupNormalization, opset 18): the num_groups attribute is required");
  CHECK(message([&] {
          run_node("GroupNormalization", 18, {{"num_groups", attr_i(4)}}, {x, s, b});
        }) == "node 'n0' (GroupNormalization, opset 18): the 6 channels of X do not split into 4 "
              "groups");
  CHECK(message([&] {
          run_node("GroupNormalization", 18, {{"num_groups", attr_i(3)}}, {x, s, b});
        }) == "node 'n0' (GroupNormalization, opset 18): scale has 2 elements, expected 3 (one per "
              "group, opset 18)");
  CHECK(message([&] {
          run_node("GroupNormalization", 21, {{"num_groups", attr_i(2)}}, {x, s, b});
        }) == "node 'n0' (GroupNormalization, opset 21): scale has 2 elements, expected 6 (one per "
              "channel, opset 21)");
}
