// Shape kernels (runtime/cpu/kernels/shape.cc): Reshape (0, -1, allowzero, opset<5 attribute),
// Flatten, Squeeze/Unsqueeze in both attribute and input forms, Shape with start/end, Size,
// Identity, Expand; views must share the input's storage.
#include <doctest/doctest.h>

#include "tests/runtime/single_node.h"

using namespace oat;
using namespace oat_test;

TEST_CASE("Reshape: 0 copies a dim, -1 is inferred, and the result is a view") {
  Tensor x = iota_f({2, 3, 4});
  Tensor y = run1("Reshape", 14, {}, {x, i64({0, -1, 2})});
  CHECK(y.shape() == Shape{2, 6, 2});
  CHECK(y.raw_data() == x.raw_data());
  CHECK(fvec(y) == fvec(x));
  // allowzero: a literal 0 dim (only valid for an empty input).
  Tensor e = Tensor::zeros(DType::F32, {0, 3});
  CHECK(run1("Reshape", 14, {{"allowzero", attr_i(1)}}, {e, i64({3, 0})}).shape() == Shape{3, 0});
  // Opset 1-4: the 'shape' attribute.
  CHECK(run1("Reshape", 4, {{"shape", attr_ints({4, -1})}}, {x}).shape() == Shape{4, 6});
  CHECK_THROWS_WITH_AS(run1("Reshape", 14, {}, {x, i64({5, -1})}), doctest::Contains("[2, 3, 4]"),
                       Error);
  CHECK_THROWS_AS(run1("Reshape", 14, {}, {x, i64({-1, -1})}), Error);
}

TEST_CASE("Flatten: axis splits the dims into two products") {
  Tensor x = iota_f({2, 3, 4, 5});
  CHECK(run1("Flatten", 13, {}, {x}).shape() == Shape{2, 60});
  CHECK(run1("Flatten", 13, {{"axis", attr_i(0)}}, {x}).shape() == Shape{1, 120});
  CHECK(run1("Flatten", 13, {{"axis", attr_i(-1)}}, {x}).shape() == Shape{24, 5});
  CHECK(run1("Flatten", 13, {{"axis", attr_i(4)}}, {x}).shape() == Shape{120, 1});
  CHECK_THROWS_AS(run1("Flatten", 13, {{"axis", attr_i(5)}}, {x}), Error);
}

TEST_CASE("Squeeze / Unsqueeze: axes as attribute (opset 11) and as input (opset 13)") {
  Tensor x = iota_f({1, 3, 1, 2});
  CHECK(run1("Squeeze", 11, {{"axes", attr_ints({0, -2})}}, {x}).shape() == Shape{3, 2});
  CHECK(run1("Squeeze", 13, {}, {x, i64({2})}).shape() == Shape{1, 3, 2});
  CHECK(run1("Squeeze", 13, {}, {x}).shape() == Shape{3, 2});  // no axes: every 1
  CHECK_THROWS_WITH_AS(run1("Squeeze", 13, {}, {x, i64({1})}), doctest::Contains("not 1"), Error);

  Tensor v = iota_f({3, 2});
  Tensor u = run1("Unsqueeze", 13, {}, {v, i64({0, -1})});
  CHECK(u.shape() == Shape{1, 3, 2, 1});
  CHECK(u.raw_data() == v.raw_data());
  CHECK(run1("Unsqueeze", 11, {{"axes", attr_ints({1, 3})}}, {v}).shape() == Shape{3, 1, 2, 1});
  CHECK_THROWS_AS(run1("Unsqueeze", 13, {}, {v, i64({0, 0})}), Error);
}

TEST_CASE("Shape (start/end clamped), Size, Identity") {
  Tensor x = iota_f({2, 3, 4});
  CHECK(ivec(run1("Shape", 13, {}, {x})) == std::vector<int64_t>{2, 3, 4});
  CHECK(ivec(run1("Shape", 15, {{"start", attr_i(-2)}}, {x})) == std::vector<int64_t>{3, 4});
  CHECK(ivec(run1("Shape", 15, {{"start", attr_i(1)}, {"end", attr_i(-1)}}, {x})) ==
        std::vector<int64_t>{3});
  CHECK(run1("Shape", 15, {{"start", attr_i(10)}}, {x}).shape() == Shape{0});
  Tensor s = run1("Size", 13, {}, {x});
  CHECK(s.dtype() == DType::I64);
  CHECK(s.rank() == 0);
  CHECK(s.item_as_int() == 24);
  Tensor id = run1("Identity", 16, {}, {x});
  CHECK(id.raw_data() == x.raw_data());
}

TEST_CASE("Expand broadcasts both ways") {
  // [3, 1] with shape [2, 1, 4] -> [2, 3, 4]: each row repeats its one value.
  Tensor x = Tensor::from_vector<int32_t>({3, 1}, {7, 8, 9});
  Tensor y = run1("Expand", 13, {}, {x, i64({2, 1, 4})});
  REQUIRE(y.shape() == Shape{2, 3, 4});
  CHECK(y.dtype() == DType::I32);
  for (int64_t i = 0; i < 24; ++i) CHECK(y.item_as_int(i) == 7 + (i / 4) % 3);
  // [1, 3] (a contiguous row) to [2, 3]; shape [1] keeps the input as it is.
  Tensor r = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  CHECK(fvec(run1("Expand", 13, {}, {r, i64({2, 1})})) == std::vector<float>{1, 2, 3, 1, 2, 3});
  CHECK(run1("Expand", 13, {}, {r, i64({1})}).shape() == Shape{1, 3});
  CHECK_THROWS_WITH_AS(run1("Expand", 13, {}, {r, i64({2})}), doctest::Contains("[1, 3]"), Error);
}
