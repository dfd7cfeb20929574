// Elementwise arithmetic, unary math and comparison kernels (runtime/cpu/kernels/binary.cc,
// unary.cc, compare.cc): hand-computed cases for the ONNX rules that are easy to get wrong
// (broadcasting, integer Div/Mod signs, Round half to even, Pow with mixed dtypes, variadic ops),
// error messages, and the collapsed/parallel broadcast loops against a naive index-by-index
// reference on shapes big enough to split across threads.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/threads.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

Tensor random_f32(Shape s, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  Tensor t(DType::F32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Element `flat` of `out` read from `in` under numpy broadcasting, by explicit multi-indices.
int64_t naive_broadcast_index(const Shape& in, const Shape& out, int64_t flat) {
  std::vector<int64_t> idx(out.size());
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    idx[d] = flat % out[d];
    flat /= out[d];
  }
  int64_t off = 0;
  const size_t shift = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) off = off * in[d] + (in[d] == 1 ? 0 : idx[d + shift]);
  return off;
}

std::string error_of(const std::string& op, const std::vector<Tensor>& inputs,
                     const std::map<std::string, Attribute>& attrs = {}, int64_t opset = 13) {
  try {
    run1(op, opset, attrs, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Add broadcasts [2,3,1] + [4] to [2,3,4]") {
  Tensor a = f32({2, 3, 1}, {0, 10, 20, 30, 40, 50});
  Tensor b = f32({4}, {1, 2, 3, 4});
  Tensor y = run1("Add", 14, {}, {a, b});
  REQUIRE(y.shape() == Shape{2, 3, 4});
  std::vector<float> want;
  for (float r : {0, 10, 20, 30, 40, 50})
    for (float c : {1, 2, 3, 4}) want.push_back(r + c);
  CHECK(fvec(y) == want);
}

TEST_CASE("Sub/Mul/Div with a scalar on either side") {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor s = Tensor::scalar<float>(2.0f);
  CHECK(fvec(run1("Sub", 14, {}, {x, s})) == std::vector<float>{-1, 0, 1, 2});
  CHECK(fvec(run1("Sub", 14, {}, {s, x})) == std::vector<float>{1, 0, -1, -2});
  CHECK(fvec(run1("Mul", 14, {}, {s, x})) == std::vector<float>{2, 4, 6, 8});
  CHECK(fvec(run1("Div", 14, {}, {x, s})) == std::vector<float>{0.5f, 1, 1.5f, 2});
  Tensor y = run1("Add", 14, {}, {s, s});
  CHECK(y.shape().empty());
  CHECK(y.data<float>()[0] == 4.0f);
}

TEST_CASE("incompatible shapes fail naming the node and both shapes") {
  const std::string msg = error_of("Add", {random_f32({2, 3}, 1), random_f32({4}, 2)});
  CHECK(msg.find("n0") != std::string::npos);
  CHECK(msg.find("Add") != std::string::npos);
  CHECK(msg.find("[2, 3]") != std::string::npos);
  CHECK(msg.find("[4]") != std::string::npos);
  const std::string msg2 = error_of("Where", {Tensor::from_vector<bool>({3}, {true, false, true}),
                                              random_f32({2}, 3), random_f32({3}, 4)});
  CHECK(msg2.find("[2]") != std::string::npos);
  CHECK(msg2.find("[3]") != std::string::npos);
}

TEST_CASE("mixed input dtypes fail naming both dtypes") {
  const std::string msg = error_of("Add", {random_f32({2}, 1), i64({1, 2})});
  CHECK(msg.find("int64") != std::string::npos);
  CHECK(msg.find("float32") != std::string::npos);
}

TEST_CASE("broadcast loops match a naive reference (collapsed dims, 1 and 2 threads)") {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      // Outputs above kElementwiseParallelMin (2^18) elements, so 2 threads split them.
      {{20, 64, 16, 16}, {20, 64, 16, 16}},    // same shape: one contiguous run
      {{20, 64, 16, 16}, {1, 64, 1, 1}},       // per-channel bias
      {{64, 16, 16}, {20, 1, 1, 1}},           // rank differs, outer broadcast
      {{1024, 300}, {300}},                    // row broadcast
      {{1024, 300}, {1024, 1}},                // column broadcast
      {{7, 1, 9, 1, 40}, {1, 13, 1, 11, 40}},  // both sides broadcast, alternating
      {{300000}, {1}},                         // scalar-like [1]
      {{1}, {3, 100000}},                      // scalar on the left
      {{0, 3}, {3}},                           // empty
      {{3, 1, 5}, {3, 7, 1}},                  // small: single-threaded path
  };
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const auto& c : cases) {
      CAPTURE(shape_str(c.a));
      CAPTURE(shape_str(c.b));
      CAPTURE(threads);
      Tensor a = random_f32(c.a, 11), b = random_f32(c.b, 12);
      const Shape out = cpu::broadcast_shapes({c.a, c.b});
      Tensor y = run1("Sub", 14, {}, {a, b});
      REQUIRE(y.shape() == out);
      int64_t bad = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const float want = a.data<float>()[naive_broadcast_index(c.a, out, i)] -
                           b.data<float>()[naive_broadcast_index(c.b, out, i)];
        bad += y.data<float>()[i] != want;
      }
      CHECK(bad == 0);
    }
  }
  set_num_threads(0);
}

TEST_CASE("broadcast_layout merges dimensions that move together") {
  auto L = cpu::broadcast_layout<2>({8, 64, 16, 16}, {Shape{8, 64, 16, 16}, Shape{1, 64, 1, 1}});
  CHECK(L.dims == Shape{8, 64, 256});
  CHECK(L.strides[0] == std::vector<int64_t>{16384, 256, 1});
  CHECK(L.strides[1] == std::vector<int64_t>{0, 1, 0});
  auto same = cpu::broadcast_layout<2>({4, 5, 6}, {Shape{4, 5, 6}, Shape{4, 5, 6}});
  CHECK(same.dims == Shape{120});
  auto scalar = cpu::broadcast_layout<2>({}, {Shape{}, Shape{}});
  CHECK(scalar.dims == Shape{1});
  CHECK(scalar.total == 1);
}

TEST_CASE("integer Div truncates toward zero; division by zero is an error") {
  Tensor a = i64({7, -7, 7, -7, 1});
  Tensor b = i64({2, 2, -2, -2, 3});
  CHECK(ivec(run1("Div", 14, {}, {a, b})) == std::vector<int64_t>{3, -3, -3, 3, 0});
  Tensor a32 = Tensor::from_vector<int32_t>({2}, {9, -9});
  Tensor b32 = Tensor::from_vector<int32_t>({1}, {4});
  CHECK(ivec(run1("Div", 14, {}, {a32, b32})) == std::vector<int64_t>{2, -2});
  const std::string msg = error_of("Div", {i64({1, 2}), i64({1, 0})});
  CHECK(msg.find("division by zero") != std::string::npos);
  // Float division by zero is IEEE: inf.
  Tensor q = run1("Div", 14, {}, {f32({1}, {1.0f}), f32({1}, {0.0f})});
  CHECK(std::isinf(q.data<float>()[0]));
}

TEST_CASE("Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's") {
  Tensor a = i64({5, -5, 5, -5, 6});
  Tensor b = i64({3, 3, -3, -3, 3});
  CHECK(ivec(run1("Mod", 13, {}, {a, b})) == std::vector<int64_t>{2, 1, -1, -2, 0});
  CHECK(ivec(run1("Mod", 13, {{"fmod", attr_i(1)}}, {a, b})) ==
        std::vector<int64_t>{2, -2, 2, -2, 0});
  Tensor fa = f32({4}, {5.5f, -5.5f, 5.5f, -5.5f});
  Tensor fb = f32({4}, {2.0f, 2.0f, -2.0f, -2.0f});
  CHECK(fvec(run1("Mod", 13, {{"fmod", attr_i(1)}}, {fa, fb})) ==
        std::vector<float>{1.5f, -1.5f, 1.5f, -1.5f});
  CHECK(fvec(run1("Mod", 13, {}, {fa, fb})) == std::vector<float>{1.5f, 0.5f, -0.5f, -1.5f});
  CHECK(error_of("Mod", {i64({4}), i64({0})}).find("modulo by zero") != std::string::npos);
}

TEST_CASE("Pow: exponent dtype may differ; output has the base dtype") {
  Tensor base = f32({4}, {2, 3, -2, 4});
  Tensor e64 = i64({3, 2, 3, -1});
  Tensor y = run1("Pow", 15, {}, {base, e64});
  CHECK(y.dtype() == DType::F32);
  CHECK(fvec(y) == std::vector<float>{8, 9, -8, 0.25f});
  Tensor ib = i64({2, 3, -2, 5});
  Tensor fe = f32({4}, {3.0f, 0.5f, 2.0f, -1.0f});
  Tensor yi = run1("Pow", 15, {}, {ib, fe});
  CHECK(yi.dtype() == DType::I64);
  CHECK(ivec(yi) == std::vector<int64_t>{8, 1, 4, 0});  // 3^0.5 and 5^-1 truncate
  CHECK(ivec(run1("Pow", 15, {}, {i64({3, -1, -1, 2}), i64({4, 3, -2, -1})})) ==
        std::vector<int64_t>{81, -1, 1, 0});
  // Scalar exponents take shortcuts (x*x, sqrt, 1/x); they must agree with pow.
  Tensor x = random_f32({50000}, 5, 0.1f, 3.0f);
  for (float e : {2.0f, 3.0f, 0.5f, -1.0f, 1.0f, 1.7f}) {
    CAPTURE(e);
    Tensor p = run1("Pow", 15, {}, {x, Tensor::scalar<float>(e)});
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double want = std::pow(static_cast<double>(x.data<float>()[i]), e);
      worst = std::max(worst, std::abs(p.data<float>()[i] - want) / std::abs(want));
    }
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("Sum/Max/Min take any number of inputs, broadcast together") {
  Tensor a = f32({3}, {1, 5, 3});
  Tensor b = f32({2, 1}, {2, 4});
  Tensor c = Tensor::scalar<float>(3.5f);
  Tensor s = run1("Sum", 13, {}, {a, b, c});
  REQUIRE(s.shape() == Shape{2, 3});
  CHECK(fvec(s) == std::vector<float>{6.5f, 10.5f, 8.5f, 8.5f, 12.5f, 10.5f});
  CHECK(fvec(run1("Max", 13, {}, {a, b, c})) == std::vector<float>{3.5f, 5, 3.5f, 4, 5, 4});
  CHECK(fvec(run1("Min", 13, {}, {a, b, c})) == std::vector<float>{1, 2, 2, 1, 3.5f, 3});
  // The first pair's broadcast is smaller than the result: the fold starts from a copy.
  Tensor m = run1("Max", 13, {}, {f32({1}, {0}), f32({1}, {2}), f32({2, 2}, {1, 3, -1, 5})});
  CHECK(fvec(m) == std::vector<float>{2, 3, 2, 5});
  CHECK(fvec(run1("Sum", 13, {}, {a})) == fvec(a));
  CHECK(ivec(run1("Max", 13, {}, {i64({1, 9}), i64({4, 2})})) == std::vector<int64_t>{4, 9});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor mn = run1("Max", 13, {}, {f32({2}, {nan, 1}), f32({2}, {1, nan})});
  CHECK(std::isnan(mn.data<float>()[0]));
  CHECK(std::isnan(mn.data<float>()[1]));
}

TEST_CASE("unary math: Round halves to even, Sign, Abs/Neg on integers, IsNaN/IsInf") {
  Tensor r = run1("Round", 11, {}, {f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.6f, -1.4f})});
  CHECK(fvec(r) == std::vector<float>{0, 2, 2, -0.0f, -2, 3, -1});
  CHECK(fvec(run1("Floor", 13, {}, {f32({2}, {-1.5f, 1.5f})})) == std::vector<float>{-2, 1});
  CHECK(fvec(run1("Ceil", 13, {}, {f32({2}, {-1.5f, 1.5f})})) == std::vector<float>{-1, 2});
  CHECK(fvec(run1("Sign", 13, {}, {f32({3}, {-3, 0, 0.1f})})) == std::vector<float>{-1, 0, 1});
  CHECK(ivec(run1("Sign", 13, {}, {i64({-3, 0, 7})})) == std::vector<int64_t>{-1, 0, 1});
  CHECK(ivec(run1("Abs", 13, {}, {i64({-3, 0, 7})})) == std::vector<int64_t>{3, 0, 7});
  CHECK(ivec(run1("Neg", 13, {}, {i64({-3, 0, 7})})) == std::vector<int64_t>{3, 0, -7});
  CHECK(fvec(run1("Reciprocal", 13, {}, {f32({2}, {4, -0.5f})})) == std::vector<float>{0.25f, -2});
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32({4}, {inf, -inf, nan, 1});
  Tensor isnan = run1("IsNaN", 13, {}, {x});
  CHECK(isnan.dtype() == DType::Bool);
  CHECK(ivec(isnan) == std::vector<int64_t>{0, 0, 1, 0});
  CHECK(ivec(run1("IsInf", 10, {}, {x})) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(ivec(run1("IsInf", 10, {{"detect_negative", attr_i(0)}}, {x})) ==
        std::vector<int64_t>{1, 0, 0, 0});
  CHECK(ivec(run1("IsInf", 10, {{"detect_positive", attr_i(0)}}, {x})) ==
        std::vector<int64_t>{0, 1, 0, 0});
}

TEST_CASE("Sqrt/Exp/Log/Sin/Cos agree with the C library over a large (parallel) input") {
  Tensor x = random_f32({70001}, 9, 0.01f, 10.0f);
  struct Fn {
    const char* op;
    double (*ref)(double);
  };
  for (const Fn& f : {Fn{"Sqrt", [](double v) { return std::sqrt(v); }},
                      Fn{"Exp", [](double v) { return std::exp(v); }},
                      Fn{"Log", [](double v) { return std::log(v); }},
                      Fn{"Sin", [](double v) { return std::sin(v); }},
                      Fn{"Cos", [](double v) { return std::cos(v); }}}) {
    CAPTURE(f.op);
    Tensor y = run1(f.op, 13, {}, {x});
    REQUIRE(y.shape() == x.shape());
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double want = f.ref(x.data<float>()[i]);
      worst = std::max(worst, std::abs(y.data<float>()[i] - want) / (std::abs(want) + 1.0));
    }
    CHECK(worst < 2e-6);
  }
  // float64 goes through the same templates.
  Tensor d = Tensor::from_vector<double>({3}, {0.0, 1.0, 2.0});
  Tensor e = run1("Exp", 13, {}, {d});
  CHECK(e.dtype() == DType::F64);
  CHECK(e.data<double>()[2] == doctest::Approx(std::exp(2.0)).epsilon(1e-14));
}

TEST_CASE("Mean: variadic with broadcasting, one input, float64 and F16") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3}, {10, 20, 30});
  Tensor c = f32({2, 1}, {-3, 3});
  Tensor y = run1("Mean", 13, {}, {a, b, c});
  CHECK(y.shape() == Shape{2, 3});
  const std::vector<float> want = {8.0f / 3, 19.0f / 3, 30.0f / 3, 17.0f / 3, 28.0f / 3, 13};
  for (int i = 0; i < 6; ++i) CHECK(y.data<float>()[i] == doctest::Approx(want[i]));
  CHECK(run1("Mean", 13, {}, {a}).data<float>()[4] == 5.0f);
  Tensor d = run1("Mean", 8, {}, {cast_tensor(a, DType::F64), cast_tensor(b, DType::F64)});
  CHECK(d.dtype() == DType::F64);
  CHECK(d.data<double>()[5] == 18.0);
  Tensor h = run1("Mean", 13, {}, {cast_tensor(a, DType::F16), cast_tensor(b, DType::F16)});
  CHECK(h.dtype() == DType::F16);
  CHECK(h.item_as_double(1) == 11.0);
  CHECK(error_of("Mean", {a, f32({4}, {1, 2, 3, 4})}).find("[2, 3]") != std::string::npos);
}

TEST_CASE("comparisons output bool with broadcasting; logic ops; Not") {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  Tensor b = f32({2}, {2, 3});
  Tensor eq = run1("Equal", 13, {}, {a, b});
  CHECK(eq.dtype() == DType::Bool);
  CHECK(ivec(eq) == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(ivec(run1("Less", 13, {}, {a, b})) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(ivec(run1("Greater", 13, {}, {a, b})) == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(ivec(run1("LessOrEqual", 16, {}, {a, b})) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(ivec(run1("GreaterOrEqual", 16, {}, {a, f32({1}, {2})})) ==
        std::vector<int64_t>{0, 1, 1, 1});
  CHECK(ivec(run1("Equal", 13, {}, {i64({1, 2, 3}), i64({2})})) == std::vector<int64_t>{0, 1, 0});
  Tensor p = Tensor::from_vector<bool>({2, 2}, {true, true, false, false});
  Tensor q = Tensor::from_vector<bool>({2}, {true, false});
  CHECK(ivec(run1("And", 7, {}, {p, q})) == std::vector<int64_t>{1, 0, 0, 0});
  CHECK(ivec(run1("Or", 7, {}, {p, q})) == std::vector<int64_t>{1, 1, 1, 0});
  CHECK(ivec(run1("Xor", 7, {}, {p, q})) == std::vector<int64_t>{0, 1, 1, 0});
  CHECK(ivec(run1("Not", 1, {}, {p})) == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(ivec(run1("Equal", 13, {}, {p, q})) == std::vector<int64_t>{1, 0, 0, 1});
}

TEST_CASE("Where broadcasts condition, x and y together") {
  Tensor c = Tensor::from_vector<bool>({2, 1}, {true, false});
  Tensor x = f32({3}, {1, 2, 3});
  Tensor y = Tensor::scalar<float>(-1.0f);
  Tensor z = run1("Where", 16, {}, {c, x, y});
  REQUIRE(z.shape() == Shape{2, 3});
  CHECK(fvec(z) == std::vector<float>{1, 2, 3, -1, -1, -1});
  Tensor zi = run1("Where", 16, {},
                   {Tensor::from_vector<bool>({2}, {false, true}), i64({1, 2}), i64({7, 8})});
  CHECK(ivec(zi) == std::vector<int64_t>{7, 2});
  // Large, same shapes: the contiguous parallel path.
  Tensor big_c(DType::Bool, {100000});
  for (int64_t i = 0; i < big_c.numel(); ++i) big_c.data<bool>()[i] = (i % 3) == 0;
  Tensor bx = random_f32({100000}, 21), by = random_f32({100000}, 22);
  Tensor bz = run1("Where", 16, {}, {big_c, bx, by});
  int64_t bad = 0;
  for (int64_t i = 0; i < bz.numel(); ++i)
    bad += bz.data<float>()[i] != (i % 3 == 0 ? bx.data<float>()[i] : by.data<float>()[i]);
  CHECK(bad == 0);
  CHECK(error_of("Where", {f32({1}, {1}), x, x}).find("bool") != std::string::npos);
}
