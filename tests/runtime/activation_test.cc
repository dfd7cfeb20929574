// Activation kernels (runtime/cpu/kernels/activation.cc): every op against its ONNX formula
// evaluated in double, over inputs that include the tails (|x| up to 100, where naive Softplus
// overflows and Sigmoid saturates) and a size that runs the parallel path; attribute defaults and
// overrides; Clip in both opset forms; Gelu's two forms; PRelu's broadcasting and its errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

// 40000 values: a dense sweep of [-8, 8] plus the tails ±20, ±50, ±100 and exact zeros.
Tensor sweep_f32() {
  Tensor t(DType::F32, {40000});
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = -8.0f + 16.0f * static_cast<float>(i) / 39999.0f;
  const float tails[] = {-100, -50, -20, 0, 20, 50, 100, 0};
  for (int k = 0; k < 8; ++k) p[k * 5000] = tails[k];
  return t;
}

// Max over elements of |got - want| / (|want| + 1): relative for large values, absolute near 0.
double worst_error(const Tensor& got, const Tensor& x, const std::function<double(double)>& f) {
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double want = f(x.item_as_double(i));
    const double g = got.item_as_double(i);
    if (std::isnan(g)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(g - want) / (std::abs(want) + 1.0));
  }
  return worst;
}

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

struct Formula {
  const char* op;
  std::map<std::string, Attribute> attrs;
  std::function<double(double)> f;
};

std::vector<Formula> formulas() {
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  return {
      {"Relu", {}, [](double x) { return x > 0 ? x : 0; }},
      {"LeakyRelu", {}, [](double x) { return x < 0 ? 0.01f * x : x; }},
      {"LeakyRelu", {{"alpha", attr_f(0.2f)}}, [](double x) { return x < 0 ? 0.2f * x : x; }},
      {"Sigmoid", {}, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"HardSigmoid", {}, [](double x) { return std::max(0.0, std::min(1.0, 0.2f * x + 0.5)); }},
      {"HardSigmoid",
       {{"alpha", attr_f(0.5f)}, {"beta", attr_f(0.25f)}},
       [](double x) { return std::max(0.0, std::min(1.0, 0.5 * x + 0.25)); }},
      {"HardSwish", {}, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
      {"Tanh", {}, [](double x) { return std::tanh(x); }},
      {"Erf", {}, [](double x) { return std::erf(x); }},
      {"Elu", {}, [](double x) { return x < 0 ? std::expm1(x) : x; }},
      {"Elu", {{"alpha", attr_f(2.0f)}}, [](double x) { return x < 0 ? 2 * std::expm1(x) : x; }},
      {"Selu", {}, [=](double x) { return selu_g * (x <= 0 ? selu_a * std::expm1(x) : x); }},
      {"Celu", {}, [](double x) { return std::max(0.0, x) + std::min(0.0, std::expm1(x)); }},
      {"Celu",
       {{"alpha", attr_f(0.5f)}},
       [](double x) { return std::max(0.0, x) + std::min(0.0, 0.5 * std::expm1(x / 0.5)); }},
      {"Softplus", {}, softplus},
      {"Softsign", {}, [](double x) { return x / (1 + std::abs(x)); }},
      {"ThresholdedRelu", {}, [](double x) { return x > 1 ? x : 0; }},
      {"ThresholdedRelu", {{"alpha", attr_f(-0.5f)}}, [](double x) { return x > -0.5f ? x : 0; }},
      {"Mish", {}, [](double x) { return x * std::tanh(softplus(x)); }},
      {"Shrink", {}, [](double x) { return x < -0.5 ? x : (x > 0.5 ? x : 0.0); }},
      {"Shrink",
       {{"lambd", attr_f(1.5f)}, {"bias", attr_f(1.5f)}},
       [](double x) { return x < -1.5 ? x + 1.5 : (x > 1.5 ? x - 1.5 : 0.0); }},
      {"Gelu", {}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"Gelu",
       {{"approximate", attr_s("tanh")}},
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       }},
  };
}

}  // namespace

TEST_CASE("activations match their ONNX formulas in float32 and float64") {
  const Tensor x32 = sweep_f32();
  const Tensor x64 = cast_tensor(x32, DType::F64);
  for (const Formula& f : formulas()) {
    CAPTURE(std::string(f.op));
    CAPTURE(f.attrs.size());
    Tensor y32 = run1(f.op, 20, f.attrs, {x32});
    REQUIRE(y32.dtype() == DType::F32);
    REQUIRE(y32.shape() == x32.shape());
    CHECK(worst_error(y32, x32, f.f) < 5e-6);
    Tensor y64 = run1(f.op, 20, f.attrs, {x64});
    REQUIRE(y64.dtype() == DType::F64);
    CHECK(worst_error(y64, x64, f.f) < 1e-12);
  }
}

TEST_CASE("Relu keeps NaN and works on integers") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = run1("Relu", 14, {}, {f32({3}, {nan, -1, 2})});
  CHECK(std::isnan(y.data<float>()[0]));
  CHECK(y.data<float>()[1] == 0.0f);
  CHECK(ivec(run1("Relu", 14, {}, {i64({-5, 0, 5})})) == std::vector<int64_t>{0, 0, 5});
}

TEST_CASE("Gelu rejects an unknown approximation, naming it") {
  std::string msg;
  try {
    run1("Gelu", 20, {{"approximate", attr_s("fast")}}, {f32({1}, {1})});
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("fast") != std::string::npos);
  CHECK(msg.find("Gelu") != std::string::npos);
}

TEST_CASE("Clip: attributes before opset 11, optional scalar inputs after") {
  Tensor x = f32({5}, {-3, -1, 0, 1, 3});
  CHECK(fvec(run1("Clip", 6, {{"min", attr_f(-1.5f)}, {"max", attr_f(2)}}, {x})) ==
        std::vector<float>{-1.5f, -1, 0, 1, 2});
  CHECK(fvec(run1("Clip", 6, {{"max", attr_f(0.5f)}}, {x})) ==
        std::vector<float>{-3, -1, 0, 0.5f, 0.5f});
  Tensor lo = Tensor::scalar<float>(-2.0f), hi = Tensor::scalar<float>(0.0f);
  CHECK(fvec(run1("Clip", 13, {}, {x, lo, hi})) == std::vector<float>{-2, -1, 0, 0, 0});
  CHECK(fvec(run1("Clip", 13, {}, {x, Tensor(), hi})) == std::vector<float>{-3, -1, 0, 0, 0});
  CHECK(fvec(run1("Clip", 13, {}, {x, lo})) == std::vector<float>{-2, -1, 0, 1, 3});
  CHECK(fvec(run1("Clip", 13, {}, {x})) == fvec(x));
  // min > max: everything becomes max.
  CHECK(fvec(run1("Clip", 13, {}, {x, Tensor::scalar<float>(2), Tensor::scalar<float>(1)})) ==
        std::vector<float>{1, 1, 1, 1, 1});
  Tensor xi = Tensor::from_vector<int8_t>({4}, {-128, -5, 5, 127});
  Tensor yi = run1("Clip", 13, {}, {xi, Tensor::scalar<int8_t>(-10), Tensor()});
  CHECK(ivec(yi) == std::vector<int64_t>{-10, -5, 5, 127});
  std::string msg;
  try {
    run1("Clip", 13, {}, {x, f32({2}, {0, 1})});
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("[2]") != std::string::npos);
  CHECK(msg.find("scalar") != std::string::npos);
}

TEST_CASE("PRelu: slope broadcasts to X; per-channel slope before opset 7") {
  Tensor x = f32({2, 3, 2}, {-1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6});
  Tensor slope = f32({3, 1}, {0.5f, 0.25f, 0.0f});
  Tensor y = run1("PRelu", 16, {}, {x, slope});
  CHECK(fvec(y) == std::vector<float>{-0.5f, 1, -0.5f, 2, 0, 3, -2, 4, -1.25f, 5, 0, 6});
  Tensor legacy = run1("PRelu", 6, {}, {x, f32({3}, {0.5f, 0.25f, 0.0f})});
  CHECK(fvec(legacy) == fvec(y));
  Tensor last = run1("PRelu", 16, {}, {x, f32({2}, {0.1f, 10.0f})});
  CHECK(fvec(last)[0] == doctest::Approx(-0.1f));
  CHECK(fvec(last)[1] == 1.0f);
  // The slope may not grow X.
  std::string msg;
  try {
    run1("PRelu", 16, {}, {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 1, 1, 1, 1, 1})});
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("[2, 3]") != std::string::npos);
  CHECK(msg.find("[3]") != std::string::npos);
}
