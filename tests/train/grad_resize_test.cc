// Gradients of Resize and Upsample (ResizeGrad, the adjoint of the sampling): double-precision
// finite-difference checks in every mode. Resize is linear in X, so central differences are exact
// up to rounding; roi, scales and sizes are fixed (not differentiable).
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;

namespace {

Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}
Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute flt(float v) { return train::GradientContext::attr_float(v); }

GradCheckInput floats(Shape s, std::vector<float> v) {
  return test::fixed(Tensor::from_vector<float>(std::move(s), v));
}
GradCheckInput sizes(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return test::fixed(Tensor::from_vector<int64_t>({n}, v));
}

// Resize-13 (X, roi, scales, sizes); an omitted input is test::omitted().
GradCheckCase resize(Shape x, std::map<std::string, Attribute> attrs, GradCheckInput roi,
                     GradCheckInput scales, GradCheckInput sz = test::omitted()) {
  GradCheckCase c;
  c.op = "Resize";
  c.opset = 13;
  c.attrs = std::move(attrs);
  c.inputs = {test::in(std::move(x)), roi, scales, sz};
  return c;
}

}  // namespace

TEST_CASE("gradients: Resize nearest") {
  SUBCASE("upsample by scales, round_prefer_floor, half_pixel") {
    test::check_gradients(resize({2, 2, 3, 4}, {{"mode", str("nearest")}}, test::omitted(),
                                 floats({4}, {1, 1, 2, 1.5f})));
  }
  SUBCASE("downsample by sizes, floor, align_corners: some inputs get no gradient") {
    test::check_gradients(resize({1, 2, 7, 6},
                                 {{"mode", str("nearest")},
                                  {"nearest_mode", str("floor")},
                                  {"coordinate_transformation_mode", str("align_corners")}},
                                 test::omitted(), test::omitted(), sizes({1, 2, 3, 4})));
  }
}

TEST_CASE("gradients: Resize linear and cubic") {
  SUBCASE("bilinear half_pixel, up and down") {
    test::check_gradients(resize({2, 2, 4, 6}, {{"mode", str("linear")}}, test::omitted(),
                                 floats({4}, {1, 1, 1.75f, 0.5f})));
  }
  SUBCASE("trilinear align_corners by sizes") {
    test::check_gradients(
        resize({1, 3, 4, 5},
               {{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}},
               test::omitted(), test::omitted(), sizes({1, 5, 7, 3})));
  }
  SUBCASE("pytorch_half_pixel") {
    test::check_gradients(resize(
        {1, 1, 5, 4},
        {{"mode", str("linear")}, {"coordinate_transformation_mode", str("pytorch_half_pixel")}},
        test::omitted(), test::omitted(), sizes({1, 1, 1, 7})));
  }
  SUBCASE("tf_crop_and_resize with extrapolation") {
    test::check_gradients(resize({1, 2, 5, 6},
                                 {{"mode", str("linear")},
                                  {"coordinate_transformation_mode", str("tf_crop_and_resize")},
                                  {"extrapolation_value", flt(3.f)}},
                                 floats({8}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f}),
                                 test::omitted(), sizes({1, 2, 6, 5})));
  }
  SUBCASE("cubic, exclude_outside, A = -0.5") {
    test::check_gradients(resize(
        {1, 2, 4, 6},
        {{"mode", str("cubic")}, {"exclude_outside", int1(1)}, {"cubic_coeff_a", flt(-0.5f)}},
        test::omitted(), floats({4}, {1, 1, 2.5f, 0.7f})));
  }
}

TEST_CASE("gradients: Resize-10 and Upsample") {
  GradCheckCase c;
  c.op = "Resize";
  c.opset = 10;
  c.attrs = {{"mode", str("nearest")}};
  c.inputs = {test::in({1, 2, 4, 5}), floats({4}, {1, 1, 0.6f, 2.f})};
  test::check_gradients(c);
  c.op = "Upsample";
  c.opset = 9;
  c.attrs = {{"mode", str("linear")}};
  c.inputs = {test::in({1, 2, 3, 4}), floats({4}, {1, 1, 2.f, 3.f})};
  test::check_gradients(c);
  c.opset = 7;
  Attribute s;
  s.kind = Attribute::Kind::Floats;
  s.floats = {1, 1, 3, 2};
  c.attrs = {{"mode", str("nearest")}, {"scales", s}};
  c.inputs = {test::in({1, 2, 3, 4})};
  test::check_gradients(c);
}
