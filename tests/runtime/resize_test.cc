// Resize, Upsample and ResizeGrad on the CPU (runtime/cpu/kernels/resize.cc). ONNX's conformance
// cases (tests/conformance) cover Resize-11/13 in every mode; here: the legacy forms (Resize-10,
// Upsample-7/9: asymmetric, ONNX Runtime's "simple" nearest rule), the F64 kernel, ResizeGrad as
// the exact adjoint (<Resize(x), g> = <x, ResizeGrad(g)> in double) in every mode, and errors.
#include <doctest/doctest.h>

#include <limits>
#include <random>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor f32v(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64v(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}
Tensor none() { return Tensor(); }

Tensor random_f64(const Shape& s, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(DType::F64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(g);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.data<double>()[i] * b.data<double>()[i];
  return s;
}

std::vector<float> values(const Tensor& t) { return t.to_float_vector(); }

}  // namespace

TEST_CASE("Resize-10 and Upsample: asymmetric, nearest floors when upsampling, ceils when not") {
  const Tensor x = f32v({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // ONNX's Resize-10 example: scales 0.6 ⇒ 1 x 2, x_original = o / 0.6 = 0, 1.67 ⇒ ceil ⇒ 0, 2.
  auto y =
      run_node("Resize", 10, {{"mode", attr_s("nearest")}}, {x, f32v({4}, {1, 1, 0.6f, 0.6f})});
  CHECK(y[0].shape() == Shape{1, 1, 1, 2});
  CHECK(values(y[0]) == std::vector<float>{1, 3});
  // Upsample-7 (scales attribute) and -9 (input): Y[o] = X[floor(o / s)].
  const Tensor x2 = f32v({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<float> want = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                   3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  y = run_node("Upsample", 7, {{"scales", attr_floats({1, 1, 2, 3})}}, {x2});
  CHECK(y[0].shape() == Shape{1, 1, 4, 6});
  CHECK(values(y[0]) == want);
  y = run_node("Upsample", 9, {{"mode", attr_s("nearest")}}, {x2, f32v({4}, {1, 1, 2, 3})});
  CHECK(values(y[0]) == want);
  // Upsample linear (asymmetric): x_original = o / 2 ⇒ 1, 1.5, 2, 2 (clamped) along the row.
  y = run_node("Upsample", 9, {{"mode", attr_s("linear")}},
               {f32v({1, 2}, {1, 2}), f32v({2}, {1, 2})});
  CHECK(values(y[0]) == std::vector<float>{1, 1.5f, 2, 2});
}

TEST_CASE("Resize in float64 matches float32 on a linear downsample") {
  const Tensor x = random_f64({2, 3, 7, 5}, 3);
  const std::map<std::string, Attribute> attrs = {{"mode", attr_s("linear")}};
  const auto y64 = run_node("Resize", 13, attrs, {x, none(), f32v({4}, {1, 1, 0.5f, 0.8f})});
  const auto y32 = run_node("Resize", 13, attrs,
                            {cast_tensor(x, DType::F32), none(), f32v({4}, {1, 1, 0.5f, 0.8f})});
  REQUIRE(y64[0].shape() == Shape{2, 3, 3, 4});
  const auto a = values(y64[0]), b = values(y32[0]);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6));
}

TEST_CASE("ResizeGrad is the adjoint of Resize in every mode") {
  struct Mode {
    std::string label;
    std::map<std::string, Attribute> attrs;
    Tensor roi, scales;
    Shape x;
    std::vector<int64_t> sizes;  // instead of scales when not empty
  };
  const std::vector<Mode> modes = {
      {"nearest half_pixel up",
       {{"mode", attr_s("nearest")}},
       none(),
       f32v({4}, {1, 1, 2, 1.5f}),
       {2, 3, 3, 4},
       {}},
      {"nearest round_prefer_ceil asymmetric down",
       {{"mode", attr_s("nearest")},
        {"nearest_mode", attr_s("round_prefer_ceil")},
        {"coordinate_transformation_mode", attr_s("asymmetric")}},
       none(),
       Tensor(),
       {1, 2, 7, 5},
       {1, 2, 3, 4}},
      {"linear half_pixel",
       {{"mode", attr_s("linear")}},
       none(),
       f32v({4}, {1, 1, 1.7f, 0.6f}),
       {2, 2, 4, 5},
       {}},
      {"linear align_corners 3-D",
       {{"mode", attr_s("linear")}, {"coordinate_transformation_mode", attr_s("align_corners")}},
       none(),
       Tensor(),
       {2, 3, 4, 5},
       {3, 5, 7, 2}},
      {"linear pytorch_half_pixel to 1",
       {{"mode", attr_s("linear")},
        {"coordinate_transformation_mode", attr_s("pytorch_half_pixel")}},
       none(),
       Tensor(),
       {1, 1, 4, 6},
       {1, 1, 1, 9}},
      {"cubic exclude_outside",
       {{"mode", attr_s("cubic")},
        {"exclude_outside", attr_i(1)},
        {"cubic_coeff_a", attr_f(-0.5f)}},
       none(),
       f32v({4}, {1, 1, 2.5f, 0.7f}),
       {1, 2, 4, 6},
       {}},
      {"linear tf_crop_and_resize",
       {{"mode", attr_s("linear")},
        {"coordinate_transformation_mode", attr_s("tf_crop_and_resize")},
        {"extrapolation_value", attr_f(7.f)}},
       f32v({8}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f}),
       Tensor(),
       {1, 2, 5, 6},
       {1, 2, 6, 5}},
  };
  for (const Mode& m : modes) {
    CAPTURE(m.label);
    const Tensor x = random_f64(m.x, 11);
    const Tensor sizes = m.sizes.empty() ? Tensor() : i64v(m.sizes);
    const Tensor roi = m.roi.defined() ? m.roi : Tensor();
    const Tensor y = run_node("Resize", 13, m.attrs, {x, roi, m.scales, sizes})[0];
    const Tensor g = random_f64(y.shape(), 12);
    // ResizeGrad(dY, shape(X), roi, scales) with the forward's attributes.
    std::vector<Tensor> ins = {g, i64v(m.x), roi.defined() ? roi : f32v({0}, {}), m.scales};
    if (!m.scales.defined()) ins.pop_back();
    const Tensor dx = run_node("ResizeGrad", 1, m.attrs, ins)[0];
    REQUIRE(dx.shape() == m.x);
    // tf_crop_and_resize: Y = A·x + c (c: the extrapolated elements), so remove c first.
    Tensor y0 = y;
    if (m.attrs.count("extrapolation_value")) {
      const Tensor c = run_node("Resize", 13, m.attrs,
                                {Tensor::zeros(DType::F64, m.x), roi, m.scales, sizes})[0];
      y0 = Tensor(DType::F64, y.shape());
      for (int64_t i = 0; i < y.numel(); ++i)
        y0.data<double>()[i] = y.data<double>()[i] - c.data<double>()[i];
    }
    CHECK(dot(y0, g) == doctest::Approx(dot(x, dx)).epsilon(1e-12));
  }
}

TEST_CASE("Resize errors name the node and the problem") {
  const Tensor x = f32v({1, 1, 2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH(
      run_node("Resize", 13, {}, {x, none(), f32v({4}, {1, 1, 2, 2}), i64v({1, 1, 4, 4})}),
      doctest::Contains("only one of scales and sizes"));
  CHECK_THROWS_WITH(run_node("Resize", 13, {}, {x, none(), f32v({3}, {1, 2, 2})}),
                    doctest::Contains("scales has 3 values"));
  CHECK_THROWS_WITH(
      run_node("Resize", 13, {{"mode", attr_s("area")}}, {x, none(), f32v({4}, {1, 1, 2, 2})}),
      doctest::Contains("unknown mode 'area'"));
  CHECK_THROWS_WITH(run_node("Resize", 13, {}, {x, none(), f32v({4}, {1, 1, 0, 2})}),
                    doctest::Contains("must be a positive"));
  CHECK_THROWS_WITH(
      run_node("Resize", 13, {{"coordinate_transformation_mode", attr_s("tf_crop_and_resize")}},
               {x, none(), f32v({4}, {1, 1, 2, 2})}),
      doctest::Contains("tf_crop_and_resize needs roi"));
  CHECK_THROWS_WITH(
      run_node("Resize", 10, {{"mode", attr_s("cubic")}}, {x, f32v({4}, {1, 1, 2, 2})}),
      doctest::Contains("expected nearest, linear)"));
  // Outputs too large to count or to allocate: named, not a standard-library message (found by
  // the fuzz suite: sizes [1, 1, 3, 2^63 - 1] made a vector of that length).
  const int64_t huge = std::numeric_limits<int64_t>::max();
  CHECK_THROWS_WITH(run_node("Resize", 13, {}, {x, none(), none(), i64v({1, 1, 3, huge})}),
                    doctest::Contains("the output [1, 1, 3, 9223372036854775807] has more than "
                                      "2^63 elements"));
  CHECK_THROWS_WITH(run_node("Resize", 13, {}, {x, none(), f32v({4}, {1, 1, 1, 5e18f})}),
                    doctest::Contains("scales[3] = 5e+18 resizes axis 3 of X [1, 1, 2, 2] to more "
                                      "than 2^63 elements"));
  CHECK_THROWS_WITH(run_node("Resize", 13, {}, {x, none(), none(), i64v({1, 1, 1, 1ll << 44})}),
                    doctest::Contains("node 'n0' (Resize, opset 13): out of memory"));
}
