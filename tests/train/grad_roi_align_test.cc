// Gradient of RoiAlign (avg mode: RoiAlignGrad, the adjoint of the bilinear taps): double-precision
// finite-difference checks. RoiAlign is linear in X for fixed ROIs, so central differences are
// exact up to rounding; rois and batch_indices are fixed (not differentiable). Max mode is refused.
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;

namespace {

Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}
Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute flt(float v) { return train::GradientContext::attr_float(v); }

GradCheckCase roi_align(int64_t opset, std::map<std::string, Attribute> attrs) {
  GradCheckCase c;
  c.op = "RoiAlign";
  c.opset = opset;
  c.attrs = std::move(attrs);
  // Three ROIs over two images: inside, partly outside the plane, and one overlapping the first.
  c.inputs = {test::in({2, 3, 6, 5}),
              test::fixed(Tensor::from_vector<double>(
                  {3, 4}, {0.5, 1, 4, 5.5, -1, 2, 6.5, 7, 1, 0, 3, 2.5})),
              test::fixed(Tensor::from_vector<int64_t>({3}, {1, 0, 1}))};
  return c;
}

}  // namespace

TEST_CASE("gradients: RoiAlign avg") {
  SUBCASE("half_pixel, adaptive sampling, 3 x 2 bins") {
    test::check_gradients(roi_align(16, {{"output_height", int1(3)}, {"output_width", int1(2)}}));
  }
  SUBCASE("output_half_pixel (opset 10), sampling_ratio 2, spatial_scale") {
    test::check_gradients(roi_align(10, {{"output_height", int1(2)},
                                         {"output_width", int1(2)},
                                         {"sampling_ratio", int1(2)},
                                         {"spatial_scale", flt(0.75f)}}));
  }
}

TEST_CASE("gradients: RoiAlign max is refused, naming the node") {
  std::string what;
  try {
    test::check_gradients(roi_align(16, {{"mode", str("max")}}));
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(what.find("RoiAlign with mode \"max\" has no gradient") != std::string::npos);
  CHECK(what.find("node 'op'") != std::string::npos);
}
