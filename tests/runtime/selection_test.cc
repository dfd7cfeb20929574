// Compress, Unique and NonZero (runtime/cpu/kernels/selection.cc), MaxUnpool (max_unpool.cc), Det (det.cc)
// and BitShift (bitshift.cc): hand-computed results and errors.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor bools(std::vector<bool> v) {
  Tensor t(DType::Bool, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}
Tensor u8(Shape s, std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(std::move(s), v); }

std::string error_of(const std::string& op, int64_t opset, std::map<std::string, Attribute> attrs,
                     const std::vector<Tensor>& in) {
  try {
    run1(op, opset, attrs, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

using F = std::vector<float>;
using I = std::vector<int64_t>;

}  // namespace

TEST_CASE("Compress keeps the slices whose condition is true") {
  const Tensor x = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor y = run1("Compress", 11, {{"axis", attr_i(0)}}, {x, bools({false, true, true})});
  CHECK(y.shape() == Shape{2, 2});
  CHECK(fvec(y) == F{3, 4, 5, 6});
  y = run1("Compress", 11, {{"axis", attr_i(-1)}}, {x, bools({false, true})});
  CHECK(y.shape() == Shape{3, 1});
  CHECK(fvec(y) == F{2, 4, 6});
  // No axis: the flattened input; a shorter condition selects nothing past its end.
  y = run1("Compress", 11, {}, {x, bools({false, true, false, false, true})});
  CHECK(y.shape() == Shape{2});
  CHECK(fvec(y) == F{2, 5});
  // Entries past the axis are ignored; nothing selected gives an empty axis.
  CHECK(run1("Compress", 11, {{"axis", attr_i(1)}}, {x, bools({true, false, true})}).shape() ==
        Shape{3, 1});
  CHECK(run1("Compress", 11, {{"axis", attr_i(0)}}, {x, bools({false})}).shape() == Shape{0, 2});
  // Any dtype.
  const Tensor xi = Tensor::from_vector<int64_t>({4}, {7, 8, 9, 10});
  CHECK(ivec(run1("Compress", 11, {}, {xi, bools({true, false, false, true})})) == I{7, 10});
  CHECK(error_of("Compress", 11, {{"axis", attr_i(2)}}, {x, bools({true})})
            .find("axis 2 is out of range for an input of rank 2") != std::string::npos);
  CHECK(error_of("Compress", 11, {}, {x, Tensor::from_vector<int64_t>({1}, {1})})
            .find("condition must be bool, got int64") != std::string::npos);
}

TEST_CASE("Unique: values, first indices, inverse indices and counts") {
  const Tensor x = Tensor::from_vector<float>({6}, {2, 1, 1, 3, 4, 3});
  std::vector<Tensor> o = run_node("Unique", 11, {{"sorted", attr_i(0)}}, {x}, 4);
  CHECK(fvec(o[0]) == F{2, 1, 3, 4});
  CHECK(ivec(o[1]) == I{0, 1, 3, 4});
  CHECK(ivec(o[2]) == I{0, 1, 1, 2, 3, 2});
  CHECK(ivec(o[3]) == I{1, 2, 2, 1});
  o = run_node("Unique", 11, {}, {x}, 4);  // sorted = 1
  CHECK(fvec(o[0]) == F{1, 2, 3, 4});
  CHECK(ivec(o[1]) == I{1, 0, 3, 4});
  CHECK(ivec(o[2]) == I{1, 0, 0, 2, 3, 2});
  CHECK(ivec(o[3]) == I{2, 1, 2, 1});
  // Rows (axis 0), sorted lexicographically; a 2-D input without axis is flattened.
  const Tensor m = Tensor::from_vector<float>({3, 3}, {2, 3, 4, 1, 0, 0, 1, 0, 0});
  o = run_node("Unique", 11, {{"axis", attr_i(0)}}, {m}, 4);
  CHECK(o[0].shape() == Shape{2, 3});
  CHECK(fvec(o[0]) == F{1, 0, 0, 2, 3, 4});
  CHECK(ivec(o[1]) == I{1, 0});
  CHECK(ivec(o[2]) == I{1, 0, 0});
  CHECK(ivec(o[3]) == I{2, 1});
  // Columns (axis -1): columns (2,1,1), (3,0,0), (4,0,0): sorted (2,1,1) < (3,0,0) < (4,0,0).
  o = run_node("Unique", 11, {{"axis", attr_i(-1)}}, {m}, 4);
  CHECK(o[0].shape() == Shape{3, 3});
  CHECK(ivec(o[3]) == I{1, 1, 1});
  CHECK(fvec(run1("Unique", 11, {}, {m})) == F{0, 1, 2, 3, 4});
  // NaNs are one value, after every number; integers and float16.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  o = run_node("Unique", 11, {}, {Tensor::from_vector<float>({4}, {nan, 1, nan, -1})}, 4);
  CHECK(o[0].numel() == 3);
  CHECK(ivec(o[3]) == I{1, 1, 2});
  CHECK(ivec(run1("Unique", 11, {}, {Tensor::from_vector<int64_t>({4}, {5, -2, 5, 0})})) ==
        I{-2, 0, 5});
  CHECK(fvec(run1("Unique", 11, {}, {cast_tensor(x, DType::F16)})) == F{1, 2, 3, 4});
  CHECK(error_of("Unique", 11, {{"sorted", attr_i(2)}}, {x}).find("sorted must be 0 or 1") !=
        std::string::npos);
}

TEST_CASE("MaxUnpool scatters X to its indices in a zero tensor") {
  // MaxPool 2x2 / 2 of a 4x4 plane picked flat positions 5, 7, 13, 15.
  const Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor idx = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  const std::map<std::string, Attribute> k2s2 = {{"kernel_shape", attr_ints({2, 2})},
                                                 {"strides", attr_ints({2, 2})}};
  Tensor y = run1("MaxUnpool", 11, k2s2, {x, idx});
  CHECK(y.shape() == Shape{1, 1, 4, 4});
  CHECK(fvec(y) == F{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4});
  // output_shape [1, 1, 5, 5]: the indices address that shape (ONNX Runtime, PyTorch): the same
  // flat positions in a 25-element plane.
  y = run1("MaxUnpool", 11, k2s2, {x, idx, i64({1, 1, 5, 5})});
  CHECK(y.shape() == Shape{1, 1, 5, 5});
  F want(25, 0.0f);
  want[5] = 1;
  want[7] = 2;
  want[13] = 3;
  want[15] = 4;
  CHECK(fvec(y) == want);
  // pads shrink the default output: (2 - 1)·2 + 2 − 1 − 0 = 3.
  // (Built element by element: GCC 12.2 -O3 -march=native has filled a braced {1, 1, 0, 0} here
  // as {1, 1, 1, 1}, first as a braced map initializer, later as a braced vector, depending on
  // the rest of this file; a standalone copy of the same lines compiles right.)
  std::map<std::string, Attribute> padded = k2s2;
  I pads(4, 0);
  pads[0] = 1;
  pads[1] = 1;
  padded["pads"] = attr_ints(pads);
  y = run1("MaxUnpool", 11, padded, {x, Tensor::from_vector<int64_t>({1, 1, 2, 2}, {0, 2, 6, 8})});
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  CHECK(fvec(y) == F{1, 0, 2, 0, 0, 0, 3, 0, 4});
  CHECK(error_of("MaxUnpool", 11, k2s2,
                 {x, Tensor::from_vector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 16})})
            .find("I[3] = 16 is out of range for the output [1, 1, 4, 4]") != std::string::npos);
  CHECK(error_of("MaxUnpool", 11, {}, {x, idx}).find("kernel_shape is required") !=
        std::string::npos);
}

TEST_CASE("Det of square matrices, batched") {
  CHECK(fvec(run1("Det", 11, {}, {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})})) == F{-2});
  // [[0,1],[1,0]] needs a pivot: −1; diag(2, 3): 6.
  // [[2,0,1],[1,3,2],[1,1,2]]: 2·(6 − 2) + 1·(1 − 3) = 6.
  const Tensor b = Tensor::from_vector<float>({2, 2, 2}, {0, 1, 1, 0, 2, 0, 0, 3});
  const Tensor y = run1("Det", 11, {}, {b});
  CHECK(y.shape() == Shape{2});
  CHECK(fvec(y) == F{-1, 6});
  const Tensor m3 = Tensor::from_vector<double>({3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2});
  CHECK(run1("Det", 11, {}, {m3}).item_as_double() == doctest::Approx(6.0).epsilon(1e-12));
  CHECK(fvec(run1("Det", 11, {}, {Tensor::from_vector<float>({2, 2}, {1, 2, 2, 4})})) == F{0});
  CHECK(fvec(run1("Det", 11, {}, {cast_tensor(b, DType::BF16)})) == F{-1, 6});
  CHECK(error_of("Det", 11, {}, {Tensor(DType::F32, {2, 3})})
            .find("X must be [*, M, M] (square matrices in the last two dims), got [2, 3]") !=
        std::string::npos);
}

TEST_CASE("BitShift on uint8, with broadcasting") {
  const Tensor x = u8({3}, {16, 4, 1});
  const Tensor s = u8({3}, {1, 2, 3});
  auto shift = [](const Tensor& a, const Tensor& b, const char* d) {
    return ivec(run1("BitShift", 11, {{"direction", attr_s(d)}}, {a, b}));
  };
  CHECK(shift(x, s, "RIGHT") == I{8, 1, 0});
  CHECK(shift(x, s, "LEFT") == I{32, 16, 8});
  // Truncated to 8 bits; a shift of 8 or more gives 0; a scalar Y broadcasts.
  CHECK(shift(u8({2}, {200, 255}), u8({}, {1}), "LEFT") == I{144, 254});
  CHECK(shift(u8({2}, {200, 255}), u8({2}, {8, 40}), "RIGHT") == I{0, 0});
  CHECK(shift(u8({2, 1}, {1, 2}), u8({3}, {0, 1, 2}), "LEFT") == I{1, 2, 4, 2, 4, 8});
  CHECK(error_of("BitShift", 11, {{"direction", attr_s("UP")}}, {x, s})
            .find("direction must be \"LEFT\" or \"RIGHT\", got \"UP\"") != std::string::npos);
  CHECK(error_of("BitShift", 11, {{"direction", attr_s("LEFT")}},
                 {Tensor::from_vector<int64_t>({1}, {1}), Tensor::from_vector<int64_t>({1}, {1})})
            .find("kernel for dtype int64") != std::string::npos);
}

TEST_CASE("NonZero lists the coordinates of the non-zero elements in row-major order") {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {0, 1, -0.0f, 2.5f, 0, -3});
  Tensor y = run1("NonZero", 13, {}, {x});
  CHECK(y.dtype() == DType::I64);
  CHECK(y.shape() == Shape{2, 3});
  CHECK(ivec(y) == I{0, 1, 1, 1, 0, 2});  // (0, 1), (1, 0), (1, 2)
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(ivec(run1("NonZero", 9, {}, {Tensor::from_vector<float>({3}, {nan, 0, 1})})) == I{0, 2});
  CHECK(run1("NonZero", 13, {}, {Tensor(DType::F32, {2, 0})}).shape() == Shape{2, 0});
  CHECK(run1("NonZero", 13, {}, {Tensor::from_vector<int64_t>({}, {7})}).shape() == Shape{0, 1});
  Tensor b(DType::Bool, {2, 2});
  for (int i = 0; i < 4; ++i) b.data<bool>()[i] = i % 3 == 0;
  CHECK(ivec(run1("NonZero", 13, {}, {b})) == I{0, 1, 0, 1});
}
