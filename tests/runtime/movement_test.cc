// Data-movement kernels (runtime/cpu/kernels/{movement,transpose,slice,gather,pad}.cc), each
// against a hand-computed case or a naive index-by-index reference: Transpose over every
// permutation of a 4-D tensor (odd sizes, past the tile and the parallel threshold), Concat, Split
// in its three forms, Slice with negative steps and clamped ends, Gather/GatherElements with
// negative indices, Tile and Pad in each mode.
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>

#include "tests/runtime/single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

// Naive transpose: Y[i] = X[j], j[perm[k]] = i[k].
std::vector<float> naive_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  const int r = x.rank();
  Shape out(r);
  for (int k = 0; k < r; ++k) out[k] = x.shape()[perm[k]];
  std::vector<float> y(static_cast<size_t>(x.numel()));
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < x.numel(); ++o) {
    int64_t rem = o;
    for (int k = r - 1; k >= 0; --k) {
      idx[k] = rem % out[k];
      rem /= out[k];
    }
    int64_t src = 0;
    for (int d = 0; d < r; ++d) {
      int k = 0;
      while (perm[k] != d) ++k;
      src = src * x.shape()[d] + idx[k];
    }
    y[o] = x.data<float>()[src];
  }
  return y;
}

}  // namespace

TEST_CASE("Transpose matches a naive reference for every 4-D permutation") {
  for (const Shape& s : {Shape{2, 3, 1, 5}, Shape{3, 37, 41, 2}, Shape{2, 64, 70, 33}}) {
    Tensor x = iota_f(s);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      Tensor y = run1("Transpose", 13, {{"perm", attr_ints(perm)}}, {x});
      CAPTURE(shape_str(s));
      CAPTURE(shape_str(perm));
      REQUIRE(y.numel() == x.numel());
      CHECK(fvec(y) == naive_transpose(x, perm));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // Default perm reverses the axes; 1-byte elements take the same path.
  Tensor b = Tensor::from_vector<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor bt = run1("Transpose", 13, {}, {b});
  CHECK(bt.shape() == Shape{3, 2});
  CHECK(ivec(bt) == std::vector<int64_t>{1, 4, 2, 5, 3, 6});
  CHECK_THROWS_AS(run1("Transpose", 13, {{"perm", attr_ints({0, 0})}}, {b}), Error);
}

TEST_CASE("Concat along a negative axis, and shape mismatches name the shapes") {
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<float>({2, 1}, {5, 6});
  Tensor y = run1("Concat", 13, {{"axis", attr_i(-1)}}, {a, b});
  CHECK(y.shape() == Shape{2, 3});
  CHECK(fvec(y) == std::vector<float>{1, 2, 5, 3, 4, 6});
  Tensor z = run1("Concat", 13, {{"axis", attr_i(0)}}, {a, Tensor::zeros(DType::F32, {0, 2})});
  CHECK(fvec(z) == fvec(a));
  CHECK_THROWS_WITH_AS(run1("Concat", 13, {{"axis", attr_i(0)}}, {a, b}),
                       doctest::Contains("[2, 1]"), Error);
}

TEST_CASE("Split: attribute (opset 11), input (13), num_outputs with a short last chunk (18)") {
  Tensor x = iota_f({2, 5});
  auto parts = run_node("Split", 11, {{"axis", attr_i(1)}, {"split", attr_ints({2, 3})}}, {x}, 2);
  CHECK(fvec(parts[0]) == std::vector<float>{0, 1, 5, 6});
  CHECK(fvec(parts[1]) == std::vector<float>{2, 3, 4, 7, 8, 9});
  parts = run_node("Split", 13, {{"axis", attr_i(-1)}}, {x, i64({1, 0, 4})}, 3);
  CHECK(parts[1].shape() == Shape{2, 0});
  CHECK(fvec(parts[2]) == std::vector<float>{1, 2, 3, 4, 6, 7, 8, 9});
  parts = run_node("Split", 18, {{"axis", attr_i(1)}, {"num_outputs", attr_i(2)}}, {x}, 2);
  CHECK(parts[0].shape() == Shape{2, 3});
  CHECK(fvec(parts[1]) == std::vector<float>{3, 4, 8, 9});
  parts = run_node("Split", 13, {}, {x}, 2);  // equal parts along axis 0
  CHECK(fvec(parts[1]) == std::vector<float>{5, 6, 7, 8, 9});
  CHECK_THROWS_AS(run_node("Split", 13, {{"axis", attr_i(1)}}, {x}, 2), Error);
}

TEST_CASE("Slice: negative steps, clamped INT64 ends, opset 9 attributes") {
  Tensor x = iota_f({3, 4});
  // x[::-1, 1:INT64_MAX:2]
  Tensor y = run1("Slice", 13, {},
                  {x, i64({-1, 1}), i64({INT64_MIN, INT64_MAX}), i64({0, 1}), i64({-1, 2})});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(fvec(y) == std::vector<float>{9, 11, 5, 7, 1, 3});
  // Axes omitted; steps omitted; out-of-range starts give an empty axis.
  CHECK(fvec(run1("Slice", 13, {}, {x, i64({1, -2}), i64({2, 100})})) == std::vector<float>{6, 7});
  CHECK(run1("Slice", 13, {}, {x, i64({5}), i64({10}), i64({1})}).shape() == Shape{3, 0});
  Tensor old =
      run1("Slice", 9,
           {{"starts", attr_ints({1})}, {"ends", attr_ints({-1})}, {"axes", attr_ints({1})}}, {x});
  CHECK(fvec(old) == std::vector<float>{1, 2, 5, 6, 9, 10});
  // int32 starts/ends work like int64.
  Tensor s32 = Tensor::from_vector<int32_t>({1}, {2});
  Tensor e32 = Tensor::from_vector<int32_t>({1}, {3});
  CHECK(fvec(run1("Slice", 13, {}, {x, s32, e32})) == std::vector<float>{8, 9, 10, 11});
  CHECK_THROWS_AS(run1("Slice", 13, {}, {x, i64({0}), i64({1}), i64({0}), i64({0})}), Error);
}

TEST_CASE("Slice and SliceGrad: one geometry (slice_geometry.h) with the same checks") {
  using doctest::Contains;
  Tensor x = iota_f({3, 4});
  CHECK_THROWS_WITH_AS(run1("Slice", 13, {}, {x, i64({0, 0}), i64({1, 1}), i64({1, 1})}),
                       Contains("slice axis 1 is repeated in [1, 1]"), Error);
  CHECK_THROWS_WITH_AS(run1("Slice", 13, {}, {x, i64({0}), i64({1}), i64({0}), i64({0})}),
                       Contains("slice step for axis 0 is 0"), Error);
  CHECK_THROWS_WITH_AS(run1("Slice", 13, {}, {x, i64({0, 0}), i64({1})}),
                       Contains("differ in length"), Error);
  CHECK_THROWS_WITH_AS(run1("Slice", 13, {}, {x, i64({0}), i64({1}), i64({2})}),
                       Contains("slice axis 2 is out of range for rank 2"), Error);
  // dX = 0 with dY at X[:, 1::2].
  Tensor dy = iota_f({3, 2});
  Tensor dx = run1("SliceGrad", 1, {}, {dy, i64({3, 4}), i64({1}), i64({100}), i64({1}), i64({2})});
  CHECK(fvec(dx) == std::vector<float>{0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5});
  // SliceGrad does not check for repeated axes: the later entry wins (X[:, 1:3]).
  dx = run1("SliceGrad", 1, {}, {dy, i64({3, 4}), i64({0, 1}), i64({1, 3}), i64({1, 1})});
  CHECK(fvec(dx) == std::vector<float>{0, 0, 1, 0, 0, 2, 3, 0, 0, 4, 5, 0});
  CHECK_THROWS_WITH_AS(
      run1("SliceGrad", 1, {}, {dy, i64({3, 4}), i64({0}), i64({1}), i64({0}), i64({0})}),
      Contains("slice step for axis 0 is 0"), Error);
}

TEST_CASE("Gather: axis 1 with 2-D and negative indices; out-of-range indices fail") {
  Tensor x = iota_f({2, 3, 2});
  Tensor ind = Tensor::from_vector<int64_t>({2, 2}, {2, 0, -1, 1});
  Tensor y = run1("Gather", 13, {{"axis", attr_i(1)}}, {x, ind});
  REQUIRE(y.shape() == Shape{2, 2, 2, 2});
  CHECK(fvec(y) == std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3, 10, 11, 6, 7, 10, 11, 8, 9});
  Tensor s = run1("Gather", 13, {}, {x, Tensor::scalar<int32_t>(-1)});  // scalar index drops axis
  CHECK(s.shape() == Shape{3, 2});
  CHECK(fvec(s)[0] == 6.0f);
  CHECK_THROWS_WITH_AS(run1("Gather", 13, {}, {x, i64({2})}), doctest::Contains("index 2"), Error);
}

TEST_CASE("GatherElements on the last and first axes") {
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor ind = Tensor::from_vector<int64_t>({2, 2}, {0, 0, 1, 0});
  CHECK(fvec(run1("GatherElements", 13, {{"axis", attr_i(1)}}, {x, ind})) ==
        std::vector<float>{1, 1, 4, 3});
  Tensor x3 = iota_f({3, 3});
  Tensor ind3 = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 0, 2, 0, -3});
  CHECK(fvec(run1("GatherElements", 13, {{"axis", attr_i(0)}}, {x3, ind3})) ==
        std::vector<float>{3, 7, 2, 6, 1, 2});
}

TEST_CASE("Tile repeats each axis") {
  Tensor x = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor y = run1("Tile", 13, {}, {x, i64({2, 3})});
  REQUIRE(y.shape() == Shape{4, 6});
  CHECK(ivec(y) == std::vector<int64_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                                        1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  CHECK(run1("Tile", 13, {}, {x, i64({0, 1})}).shape() == Shape{0, 2});
  CHECK_THROWS_AS(run1("Tile", 13, {}, {x, i64({2})}), Error);
}

TEST_CASE("Pad: constant (with cropping), reflect, edge, wrap, opset 18 axes, opset 2 attributes") {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  // Constant 9: one row above, one column left, and crop the last column.
  Tensor c = run1("Pad", 13, {}, {x, i64({1, 1, 0, -1}), Tensor::scalar<float>(9)});
  CHECK(c.shape() == Shape{3, 3});
  CHECK(fvec(c) == std::vector<float>{9, 9, 9, 9, 1, 2, 9, 4, 5});
  Tensor r = run1("Pad", 13, {{"mode", attr_s("reflect")}}, {x, i64({0, 2, 0, 2})});
  CHECK(fvec(r) == std::vector<float>{3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4});
  Tensor e = run1("Pad", 13, {{"mode", attr_s("edge")}}, {x, i64({1, 1, 0, 0})});
  CHECK(fvec(e) == std::vector<float>{1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6});
  Tensor w = run1("Pad", 19, {{"mode", attr_s("wrap")}}, {x, i64({0, 1, 0, 2})});
  CHECK(fvec(w) == std::vector<float>{3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5});
  // Opset 18: pads only for axis -1; the constant input omitted means 0.
  Tensor a = run1("Pad", 18, {}, {x, i64({1, 0}), Tensor(), i64({-1})});
  CHECK(fvec(a) == std::vector<float>{0, 1, 2, 3, 0, 4, 5, 6});
  Tensor old = run1("Pad", 2, {{"pads", attr_ints({0, 0, 1, 0})}, {"value", attr_f(-1)}}, {x});
  CHECK(fvec(old) == std::vector<float>{1, 2, 3, 4, 5, 6, -1, -1, -1});
  // Integer data with an integer constant.
  Tensor xi = Tensor::from_vector<int32_t>({2}, {5, 6});
  CHECK(ivec(run1("Pad", 13, {}, {xi, i64({1, 1}), Tensor::scalar<int32_t>(-7)})) ==
        std::vector<int64_t>{-7, 5, 6, -7});
  CHECK_THROWS_AS(run1("Pad", 13, {}, {x, i64({0, -3, 0, -1})}), Error);
}

TEST_CASE("Big copies agree with the small path (parallel chunks)") {
  // 256 x 300 floats (300 KB) crosses kParallelBytes; check against a row-by-row reference.
  Tensor x = iota_f({256, 300});
  Tensor y = run1("Slice", 13, {}, {x, i64({1, 5}), i64({255, 299}), i64({0, 1}), i64({2, 3})});
  REQUIRE(y.shape() == Shape{127, 98});
  for (int64_t i = 0; i < 127; i += 7)
    for (int64_t j = 0; j < 98; j += 5)
      CHECK(y.data<float>()[i * 98 + j] == x.data<float>()[(1 + 2 * i) * 300 + 5 + 3 * j]);
  Tensor c = run1("Concat", 13, {{"axis", attr_i(1)}}, {x, x});
  CHECK(c.data<float>()[255 * 600 + 599] == x.data<float>()[255 * 300 + 299]);
  auto parts = run_node("Split", 13, {{"axis", attr_i(1)}}, {c}, 2);
  CHECK(fvec(parts[1]) == fvec(x));
}
