// RoiAlign (runtime/cpu/kernels/roi_align.cc) on X[h][w] = 4h + w (4 x 4), where bilinear
// interpolation is exact: a sample at (y, x) inside the plane reads 4y + x.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor roi(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size()) / 4;
  return Tensor::from_vector<float>({n, 4}, v);
}
Tensor batch(std::vector<int64_t> v) { return i64(std::move(v)); }

std::vector<float> roi_align(const Tensor& x, const Tensor& rois, const Tensor& b,
                             std::map<std::string, Attribute> attrs, int64_t opset = 16) {
  return fvec(run1("RoiAlign", opset, attrs, {x, rois, b}));
}

const std::map<std::string, Attribute> kOutputHalfPixel = {
    {"coordinate_transformation_mode", attr_s("output_half_pixel")}};

std::map<std::string, Attribute> with(std::map<std::string, Attribute> a,
                                      const std::map<std::string, Attribute>& more) {
  for (const auto& [k, v] : more) a[k] = v;
  return a;
}

}  // namespace

TEST_CASE("RoiAlign averages the bilinear samples of each bin") {
  const Tensor x = iota_f({1, 1, 4, 4});
  // ROI [0, 2]²: 2 x 2 samples at 0.5 and 1.5: 2.5, 3.5, 6.5, 7.5 -> 5.
  const auto two = with(kOutputHalfPixel, {{"sampling_ratio", attr_i(2)}});
  CHECK(roi_align(x, roi({0, 0, 2, 2}), batch({0}), two) == std::vector<float>{5});
  // Adaptive grid: ceil(2 / 1) = 2 samples per axis, the same.
  CHECK(roi_align(x, roi({0, 0, 2, 2}), batch({0}), kOutputHalfPixel) == std::vector<float>{5});
  // Opset 10 has no coordinate_transformation_mode: output_half_pixel.
  CHECK(roi_align(x, roi({0, 0, 2, 2}), batch({0}), {}, 10) == std::vector<float>{5});
  // half_pixel (opset 16's default) shifts the ROI by -0.5 pixel.
  CHECK(roi_align(x, roi({0.5f, 0.5f, 2.5f, 2.5f}), batch({0}), {}) == std::vector<float>{5});
  // spatial_scale 0.5 maps [0, 4]² to [0, 2]².
  CHECK(roi_align(x, roi({0, 0, 4, 4}), batch({0}),
                  with(two, {{"spatial_scale", attr_f(0.5f)}})) == std::vector<float>{5});
  // 2 x 2 bins of [0, 4]², one sample each at the bin centres 1 and 3: 4y + x.
  CHECK(roi_align(x, roi({0, 0, 4, 4}), batch({0}),
                  with(kOutputHalfPixel, {{"output_height", attr_i(2)},
                                          {"output_width", attr_i(2)},
                                          {"sampling_ratio", attr_i(1)}})) ==
        std::vector<float>{5, 7, 13, 15});
  // A sample beyond the plane (y > H) reads 0; one in [H - 1, H] reads the last row.
  CHECK(roi_align(x, roi({10, 10, 12, 12}), batch({0}),
                  with(kOutputHalfPixel, {{"sampling_ratio", attr_i(1)}})) ==
        std::vector<float>{0});
  CHECK(roi_align(x, roi({3, 3, 4, 4}), batch({0}),
                  with(kOutputHalfPixel, {{"sampling_ratio", attr_i(1)}})) ==
        std::vector<float>{15});
}

TEST_CASE("RoiAlign max mode, batches, channels and float16") {
  const Tensor x = iota_f({1, 1, 4, 4});
  // max: the largest weighted tap over the samples: the sample at (1.5, 1.5) weighs 10 by 1/4.
  CHECK(roi_align(x, roi({0, 0, 2, 2}), batch({0}),
                  with(kOutputHalfPixel, {{"mode", attr_s("max")}, {"sampling_ratio", attr_i(2)}})) ==
        std::vector<float>{2.5f});
  // Two images (the second is the first + 100) and two channels (+ 16 for channel 1); the ROIs
  // pick image 1 then image 0.
  Tensor x2(DType::F32, {2, 2, 4, 4});
  for (int64_t i = 0; i < x2.numel(); ++i)
    x2.data<float>()[i] = static_cast<float>((i / 32) * 100 + i % 32);
  CHECK(roi_align(x2, roi({0, 0, 2, 2, 0, 0, 2, 2}), batch({1, 0}), kOutputHalfPixel) ==
        std::vector<float>{105, 121, 5, 21});
  const Tensor h = cast_tensor(x, DType::F16);
  const Tensor y = run1("RoiAlign", 16, kOutputHalfPixel,
                        {h, cast_tensor(roi({0, 0, 2, 2}), DType::F16), batch({0})});
  CHECK(y.dtype() == DType::F16);
  CHECK(y.shape() == Shape{1, 1, 1, 1});
  CHECK(fvec(y) == std::vector<float>{5});
}

TEST_CASE("RoiAlign errors name the operand") {
  auto error_of = [](const std::vector<Tensor>& in,
                     std::map<std::string, Attribute> attrs = {}) -> std::string {
    try {
      run1("RoiAlign", 16, attrs, in);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const Tensor x = iota_f({2, 1, 4, 4});
  CHECK(error_of({x, roi({0, 0, 1, 1}), batch({2})})
            .find("batch_indices[0] = 2 is out of range for X [2, 1, 4, 4]") != std::string::npos);
  CHECK(error_of({x, Tensor(DType::F32, {1, 3}), batch({0})})
            .find("rois must be [num_rois, 4], got [1, 3]") != std::string::npos);
  CHECK(error_of({x, roi({0, 0, 1, 1}), batch({0, 0})})
            .find("batch_indices must be [num_rois] = [1], got [2]") != std::string::npos);
  CHECK(error_of({x, roi({0, 0, 1, 1}), batch({0})}, {{"mode", attr_s("min")}})
            .find("mode must be \"avg\" or \"max\", got \"min\"") != std::string::npos);
}

TEST_CASE("RoiAlignGrad spreads dY over the taps (the adjoint of RoiAlign avg)") {
  // ROI [0, 2]², 2 x 2 samples at 0.5 and 1.5, each tap weighs 1/4 and each sample 1/4: a pixel
  // gets 1/16 per sample that touches it ((1, 1) is touched by all four).
  const std::map<std::string, Attribute> attrs = {
      {"coordinate_transformation_mode", attr_s("output_half_pixel")},
      {"sampling_ratio", attr_i(2)}};
  const Tensor dy = Tensor::from_vector<float>({1, 1, 1, 1}, {16});
  const Tensor dx = run_node("RoiAlignGrad", 1, attrs,
                             {dy, i64({1, 1, 4, 4}), roi({0, 0, 2, 2}), batch({0})})
                        .at(0);
  CHECK(dx.shape() == Shape{1, 1, 4, 4});
  CHECK(fvec(dx) == std::vector<float>{1, 2, 1, 0, 2, 4, 2, 0, 1, 2, 1, 0, 0, 0, 0, 0});
  // Two ROIs on image 1 add up; image 0 gets nothing.
  const Tensor dy2 = Tensor::from_vector<float>({2, 1, 1, 1}, {16, 32});
  const Tensor dx2 = run_node("RoiAlignGrad", 1, attrs,
                              {dy2, i64({2, 1, 4, 4}), roi({0, 0, 2, 2, 0, 0, 2, 2}),
                               batch({1, 1})})
                         .at(0);
  std::vector<float> want(32, 0.0f);
  const std::vector<float> one = {1, 2, 1, 0, 2, 4, 2, 0, 1, 2, 1, 0, 0, 0, 0, 0};
  for (int i = 0; i < 16; ++i) want[16 + i] = 3 * one[i];
  CHECK(fvec(dx2) == want);
}
