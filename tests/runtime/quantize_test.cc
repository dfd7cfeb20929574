// The quantization kernels (runtime/cpu/kernels/quantize.cc) on cases the ONNX conformance data
// does not cover: round half to even, saturation at both ends, NaN, int8 per-axis parameters with
// a negative axis, int32 dequantization, DynamicQuantizeLinear of an all-zero tensor, per-row and
// per-column zero points of MatMulInteger, grouped ConvInteger, and the errors that name the
// node and the shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "single_node.h"

using namespace oat;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::run_node;

namespace {

template <class T>
Tensor vec(Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(std::move(s), v);
}
Tensor u8(Shape s, std::vector<uint8_t> v) { return vec<uint8_t>(std::move(s), std::move(v)); }
Tensor i8(Shape s, std::vector<int8_t> v) { return vec<int8_t>(std::move(s), std::move(v)); }
Tensor f32(Shape s, std::vector<float> v) { return vec<float>(std::move(s), std::move(v)); }

template <class T>
std::vector<int64_t> ints_of(const Tensor& t) {
  REQUIRE(t.dtype() == dtype_of<T>());
  std::vector<int64_t> r;
  for (int64_t i = 0; i < t.numel(); ++i) r.push_back(t.data<T>()[i]);
  return r;
}

}  // namespace

TEST_CASE("QuantizeLinear rounds half to even and saturates; NaN gives the zero point") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = f32({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 300.f, -300.f, nan, 126.5f});
  auto y = run_node("QuantizeLinear", 13, {}, {x, f32({}, {1.f}), i8({}, {0})});
  CHECK(ints_of<int8_t>(y[0]) == std::vector<int64_t>{0, 2, 2, 0, -2, -2, 127, -128, 0, 126});
  // uint8 by default (no zero point), scale 0.5: x / 0.5 = 2x.
  y = run_node("QuantizeLinear", 10, {}, {f32({4}, {-1.f, 0.25f, 0.75f, 200.f}), f32({}, {0.5f})});
  CHECK(ints_of<uint8_t>(y[0]) == std::vector<int64_t>{0, 0, 2, 255});
  // int32 x (opsets 10 and 13).
  y = run_node("QuantizeLinear", 13, {},
               {vec<int32_t>({3}, {5, -7, 1000}), f32({}, {2.f}), u8({}, {10})});
  CHECK(ints_of<uint8_t>(y[0]) == std::vector<int64_t>{12, 6, 255});
}

TEST_CASE("QuantizeLinear and DequantizeLinear per axis, also with a negative axis") {
  // X [2, 3, 2], channels along axis 1 (= -2).
  std::vector<float> xv(12);
  for (int i = 0; i < 12; ++i) xv[i] = static_cast<float>(i) - 5.f;
  const Tensor x = f32({2, 3, 2}, xv);
  const Tensor s = f32({3}, {1.f, 2.f, 0.25f});
  const Tensor z = i8({3}, {0, -1, 3});
  const auto y = run_node("QuantizeLinear", 13, {{"axis", attr_i(-2)}}, {x, s, z})[0];
  // channel c of element i = (i / 2) % 3
  std::vector<int64_t> want;
  for (int i = 0; i < 12; ++i) {
    const int c = (i / 2) % 3;
    const float zc[] = {0, -1, 3}, sc[] = {1, 2, 0.25f};
    want.push_back(static_cast<int64_t>(
        std::clamp(std::nearbyint(xv[i] / sc[c]) + zc[c], -128.f, 127.f)));
  }
  CHECK(ints_of<int8_t>(y) == want);
  const auto back = run_node("DequantizeLinear", 13, {{"axis", attr_i(1)}}, {y, s, z})[0];
  REQUIRE(back.dtype() == DType::F32);
  for (int i = 0; i < 12; ++i) {
    const int c = (i / 2) % 3;
    const float zc[] = {0, -1, 3}, sc[] = {1, 2, 0.25f};
    CHECK(back.data<float>()[i] == (static_cast<float>(want[i]) - zc[c]) * sc[c]);
  }
}

TEST_CASE("DequantizeLinear of int32, and in the scale's float16") {
  auto y = run_node("DequantizeLinear", 13, {},
                    {vec<int32_t>({3}, {-70000, 0, 123456}), f32({}, {0.5f})})[0];
  CHECK(y.to_float_vector() == std::vector<float>{-35000.f, 0.f, 61728.f});
  y = run_node("DequantizeLinear", 13, {},
               {u8({2}, {0, 255}), cast_tensor(f32({}, {0.1f}), DType::F16), u8({}, {128})})[0];
  REQUIRE(y.dtype() == DType::F16);
  // (x - zp) * s in float, rounded once to float16.
  const float s = static_cast<float>(Eigen::half(0.1f));
  CHECK(y.to_float_vector()[0] == static_cast<float>(Eigen::half(-128.f * s)));
  CHECK(y.to_float_vector()[1] == static_cast<float>(Eigen::half(127.f * s)));
}

TEST_CASE("DynamicQuantizeLinear follows ONNX's formula; an all-zero input gets scale 1") {
  auto out = run_node("DynamicQuantizeLinear", 11, {}, {f32({4}, {0.f, 2.f, -3.f, 1.f})}, 3);
  const float scale = 5.f / 255.f;
  CHECK(out[1].data<float>()[0] == scale);
  const float zp = std::nearbyint(3.f / scale);  // 0 - min / scale = 153
  CHECK(out[2].data<uint8_t>()[0] == static_cast<uint8_t>(zp));
  CHECK(ints_of<uint8_t>(out[0]) ==
        std::vector<int64_t>{153, static_cast<int64_t>(std::nearbyint(2.f / scale) + zp), 0,
                             static_cast<int64_t>(std::nearbyint(1.f / scale) + zp)});
  out = run_node("DynamicQuantizeLinear", 11, {}, {f32({3}, {0.f, 0.f, 0.f})}, 3);
  CHECK(out[1].data<float>()[0] == 1.f);
  CHECK(out[2].data<uint8_t>()[0] == 0);
  CHECK(ints_of<uint8_t>(out[0]) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("MatMulInteger with per-row and per-column zero points, int32 accumulation") {
  // A [2, 3] uint8, zp per row {1, 2}; B [3, 2] int8, zp per column {0, -1}.
  const Tensor a = u8({2, 3}, {1, 2, 3, 4, 5, 255});
  const Tensor b = i8({3, 2}, {-128, 127, 1, 2, 3, -4});
  const auto y =
      run_node("MatMulInteger", 10, {}, {a, b, u8({2}, {1, 2}), i8({2}, {0, -1})})[0];
  REQUIRE(y.dtype() == DType::I32);
  std::vector<int64_t> want;
  const int az[] = {1, 2}, bz[] = {0, -1};
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) {
      int64_t s = 0;
      for (int k = 0; k < 3; ++k)
        s += (static_cast<int>(a.data<uint8_t>()[m * 3 + k]) - az[m]) *
             (static_cast<int>(b.data<int8_t>()[k * 2 + n]) - bz[n]);
      want.push_back(s);
    }
  CHECK(ints_of<int32_t>(y) == want);
  // Batched A [2, 1, 3] against B [3, 2], scalar zero points.
  const auto yb = run_node("MatMulInteger", 10, {}, {a.reshaped({2, 1, 3}), b})[0];
  CHECK(yb.shape() == Shape{2, 1, 2});
}

TEST_CASE("ConvInteger with groups and a per-channel weight zero point; padding adds 0") {
  // x [1, 2, 2, 2], w [2, 1, 1, 1] (group 2): y[c] = (x[c] - xzp) * (w[c] - wzp[c]).
  const Tensor x = u8({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor w = u8({2, 1, 1, 1}, {3, 10});
  const auto y = run_node("ConvInteger", 10, {{"group", attr_i(2)}, {"pads", attr_ints({1, 0, 0, 0})}},
                          {x, w, u8({}, {1}), u8({2}, {1, 4})})[0];
  REQUIRE(y.shape() == Shape{1, 2, 3, 2});
  // first row of each channel is padding: 0
  CHECK(ints_of<int32_t>(y) ==
        std::vector<int64_t>{0, 0, 0, 2, 4, 6, 0, 0, 24, 30, 36, 42});
}

TEST_CASE("quantization errors name the node, the shapes and the dtypes") {
  CHECK_THROWS_WITH_AS(run_node("QuantizeLinear", 13, {}, {f32({2, 3}, {1, 2, 3, 4, 5, 6}),
                                                          f32({2}, {1, 1})}),
                       doctest::Contains("node 'n0' (QuantizeLinear, opset 13): per-axis scale [2] "
                                         "must have X's dimension 1 (3)"),
                       Error);
  CHECK_THROWS_WITH_AS(
      run_node("QuantizeLinear", 13, {}, {f32({2}, {1, 2}), f32({}, {1}), vec<int32_t>({}, {0})}),
      doctest::Contains("y_zero_point has dtype int32: quantized values are uint8 or int8"), Error);
  CHECK_THROWS_WITH_AS(
      run_node("DequantizeLinear", 13, {}, {u8({2}, {1, 2}), f32({}, {1}), i8({}, {0})}),
      doctest::Contains("x_zero_point has dtype int8, expected uint8"), Error);
  CHECK_THROWS_WITH_AS(
      run_node("MatMulInteger", 10, {}, {u8({2, 3}, {1, 2, 3, 4, 5, 6}), u8({2, 2}, {1, 2, 3, 4})}),
      doctest::Contains("inner dimensions differ: [2, 3] x [2, 2]"), Error);
}
