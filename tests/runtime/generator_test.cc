// Generators and casts (runtime/cpu/kernels/generator.cc): Constant in each attribute form,
// ConstantOfShape, Cast (integer and opset-1 string 'to'), CastLike, Range for float and integer
// types, Dropout in inference and in training mode (numpy-compatible mask with a seed; the
// Philox stream without one).
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "runtime/cpu/kernels/philox.h"
#include "runtime/executor.h"
#include "tests/node_builder.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using namespace oat_test;

TEST_CASE("Constant: value tensor, value_float(s), value_int(s); sparse is Unsupported") {
  Tensor t = Tensor::from_vector<double>({2}, {1.5, -2});
  Tensor y = run_node("Constant", 13, {{"value", attr_t(t)}}, {}).at(0);
  CHECK(y.dtype() == DType::F64);
  CHECK(fvec(y) == std::vector<float>{1.5f, -2.0f});
  CHECK(run_node("Constant", 13, {{"value_float", attr_f(2.5f)}}, {}).at(0).item_as_double() ==
        2.5);
  y = run_node("Constant", 13, {{"value_ints", attr_ints({3, 4})}}, {}).at(0);
  CHECK(y.dtype() == DType::I64);
  CHECK(ivec(y) == std::vector<int64_t>{3, 4});
  CHECK(run_node("Constant", 13, {{"value_int", attr_i(7)}}, {}).at(0).rank() == 0);
  CHECK(run_node("Constant", 13, {{"value_floats", attr_floats({1, 2, 3})}}, {}).at(0).shape() ==
        Shape{3});
  Attribute sparse;
  sparse.kind = Attribute::Kind::SparseTensor;
  CHECK_THROWS_AS(run_node("Constant", 13, {{"sparse_value", sparse}}, {}), Unsupported);
}

TEST_CASE("ConstantOfShape: default float 0, or the value attribute's dtype") {
  Tensor z = run1("ConstantOfShape", 9, {}, {i64({2, 3})});
  CHECK(z.dtype() == DType::F32);
  CHECK(fvec(z) == std::vector<float>(6, 0.0f));
  Tensor v = run1("ConstantOfShape", 9, {{"value", attr_t(Tensor::from_vector<int32_t>({1}, {4}))}},
                  {i64({3})});
  CHECK(v.dtype() == DType::I32);
  CHECK(ivec(v) == std::vector<int64_t>{4, 4, 4});
  CHECK(run1("ConstantOfShape", 9, {}, {i64({0, 2})}).numel() == 0);
}

TEST_CASE("Cast and CastLike") {
  Tensor x = Tensor::from_vector<float>({4}, {-1.7f, 0.0f, 2.9f, 1.0f / 3});
  Tensor i = run1("Cast", 13, {{"to", attr_i(7)}}, {x});  // INT64 truncates toward zero
  CHECK(i.dtype() == DType::I64);
  CHECK(ivec(i) == std::vector<int64_t>{-1, 0, 2, 0});
  Tensor b = run1("Cast", 13, {{"to", attr_i(9)}}, {x});
  CHECK(b.dtype() == DType::Bool);
  CHECK(ivec(b) == std::vector<int64_t>{1, 0, 1, 1});
  Tensor h = run1("Cast", 13, {{"to", attr_i(10)}}, {x});
  CHECK(h.dtype() == DType::F16);
  CHECK(h.item_as_double(3) == doctest::Approx(1.0 / 3).epsilon(1e-3));
  CHECK(run1("Cast", 1, {{"to", attr_s("DOUBLE")}}, {x}).dtype() == DType::F64);
  CHECK_THROWS_AS(run1("Cast", 13, {{"to", attr_i(14)}}, {x}), Unsupported);  // COMPLEX64
  CHECK(run1("Cast", 13, {{"to", attr_i(8)}}, {x}).dtype() == DType::String);  // string_test.cc
  Tensor like = run1("CastLike", 15, {}, {x, Tensor::scalar<int32_t>(0)});
  CHECK(like.dtype() == DType::I32);
  CHECK(ivec(like) == std::vector<int64_t>{-1, 0, 2, 0});
}

TEST_CASE("Cast between floating types rounds exactly as cast_tensor, bit for bit") {
  // Every 16-bit pattern in the high half of a float (so all F16/BF16 rounding cases, NaN, Inf,
  // subnormals), plus low-bit noise; 2^17 elements also take the multi-threaded path.
  std::mt19937 gen(7);
  const int64_t n = int64_t{1} << 17;
  Tensor x(DType::F32, {n});
  auto* bits = static_cast<uint32_t*>(x.raw_data());
  for (int64_t i = 0; i < n; ++i)
    bits[i] = (static_cast<uint32_t>(i & 0xffff) << 16) | (gen() & 0xffff);
  auto same = [](const Tensor& a, const Tensor& b) {
    REQUIRE(a.dtype() == b.dtype());
    REQUIRE(a.numel() == b.numel());
    int64_t bad = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double u = a.item_as_double(i), v = b.item_as_double(i);
      if (std::isnan(u) && std::isnan(v)) continue;
      if (std::memcmp(static_cast<const char*>(a.raw_data()) + i * dtype_size(a.dtype()),
                      static_cast<const char*>(b.raw_data()) + i * dtype_size(b.dtype()),
                      dtype_size(a.dtype())) != 0)
        ++bad;
    }
    return bad;
  };
  for (int to : {10, 16, 11}) {  // F16, BF16, F64
    CAPTURE(to);
    Tensor y = run1("Cast", 13, {{"to", attr_i(to)}}, {x});
    CHECK(same(y, cast_tensor(x, y.dtype())) == 0);
    Tensor back = run1("Cast", 13, {{"to", attr_i(1)}}, {y});
    CHECK(same(back, cast_tensor(y, DType::F32)) == 0);
    if (to == 11)
      CHECK(same(run1("Cast", 13, {{"to", attr_i(10)}}, {y}), cast_tensor(y, DType::F16)) == 0);
  }
}

TEST_CASE("Range: ceil((limit - start) / delta) elements, float and integer") {
  Tensor f =
      run1("Range", 11, {},
           {Tensor::scalar<float>(1), Tensor::scalar<float>(2), Tensor::scalar<float>(0.3f)});
  REQUIRE(f.shape() == Shape{4});
  CHECK(f.item_as_double(3) == doctest::Approx(1.9));
  Tensor n =
      run1("Range", 11, {},
           {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)});
  CHECK(n.dtype() == DType::I32);
  CHECK(ivec(n) == std::vector<int64_t>{10, 7});
  Tensor e =
      run1("Range", 11, {},
           {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1)});
  CHECK(e.shape() == Shape{0});
  CHECK_THROWS_AS(
      run1("Range", 11, {},
           {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(0)}),
      Error);
}

TEST_CASE("Dropout: identity in inference, numpy-compatible mask in training") {
  Tensor x = iota_f({4, 5});
  auto out = run_node("Dropout", 13, {}, {x}, 2);
  CHECK(out[0].raw_data() == x.raw_data());
  CHECK(out[1].dtype() == DType::Bool);
  CHECK(ivec(out[1]) == std::vector<int64_t>(20, 1));
  // Opset 7-9: the mask has X's dtype; the ratio attribute does not apply at inference.
  auto old = run_node("Dropout", 7, {{"ratio", attr_f(0.3f)}}, {x}, 2);
  CHECK(old[1].dtype() == DType::F32);
  CHECK(fvec(old[0]) == fvec(x));

  // Training with seed 0 and ratio 0.25: keep u >= 0.25, where u comes from numpy's legacy
  // MT19937 stream (two 32-bit draws per double), then Y = X / 0.75.
  Tensor ratio = Tensor::scalar<float>(0.25f);
  Tensor on = Tensor::scalar<bool>(true);
  out = run_node("Dropout", 13, {{"seed", attr_i(0)}}, {x, ratio, on}, 2);
  std::mt19937 gen(0);
  int kept = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const uint32_t a = gen() >> 5, b = gen() >> 6;
    const bool keep = (a * 67108864.0 + b) / 9007199254740992.0 >= 0.25;
    kept += keep;
    CHECK(out[1].item_as_int(i) == keep);
    CHECK(out[0].data<float>()[i] == doctest::Approx(keep ? i / 0.75 : 0.0));
  }
  CHECK(kept > 5);
  CHECK(kept < 20);
  // numpy: np.random.seed(0); np.random.uniform(0, 1, 3) = [0.5488135, 0.71518937, 0.60276338].
  std::mt19937 np0(0);
  const uint32_t a = np0() >> 5, b = np0() >> 6;
  CHECK((a * 67108864.0 + b) / 9007199254740992.0 == doctest::Approx(0.5488135039273248));
  CHECK_THROWS_AS(run_node("Dropout", 13, {}, {x, Tensor::scalar<float>(1.5f), on}, 1), Error);
}

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors") {
  auto check = [](Philox4 c, uint32_t k0, uint32_t k1, std::array<uint32_t, 4> want) {
    const Philox4 r = philox4x32_10(c, k0, k1);
    for (int i = 0; i < 4; ++i) CHECK(r.v[i] == want[i]);
  };
  check({{0, 0, 0, 0}}, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  check({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  check({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("Dropout without a seed: Philox draws, fresh at every run, reproducible per node") {
  // One Dropout node "drop" (opset 13, ratio 0.3, training) in an executor that persists.
  Graph g;
  g.opsets[""] = 13;
  g.nodes.push_back(make_node_outputs("drop", "Dropout", {"x", "ratio", "training"}, {"y", "mask"}));
  g.inputs = {ValueInfo{"x", DType::F32, std::vector<Dim>{{1001, ""}}},
              ValueInfo{"ratio", DType::F32, std::vector<Dim>{}},
              ValueInfo{"training", DType::Bool, std::vector<Dim>{}}};
  g.outputs = {ValueInfo{"y", DType::Undefined, std::nullopt},
               ValueInfo{"mask", DType::Undefined, std::nullopt}};
  const Tensor x = iota_f({1001});
  const std::map<std::string, Tensor> feeds = {{"x", x},
                                               {"ratio", Tensor::scalar<float>(0.3f)},
                                               {"training", Tensor::scalar<bool>(true)}};
  Executor first(g), second(g);
  const uint64_t key = std::hash<std::string>{}("drop");
  std::vector<std::vector<int64_t>> masks;
  for (uint64_t draw = 0; draw < 3; ++draw) {
    CAPTURE(draw);
    const auto out = first.run(feeds);
    const std::vector<int64_t> mask = ivec(out[1]);
    // Element i is word i mod 4 of Philox((i / 4, draw), key), kept when (word >> 8) / 2^24 >= 0.3.
    int64_t kept = 0, wrong = 0;
    for (int64_t i = 0; i < 1001; ++i) {
      const Philox4 w = philox4x32_10(
          Philox4{{static_cast<uint32_t>(i / 4), 0, static_cast<uint32_t>(draw), 0}},
          static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
      const bool keep = (w.v[i % 4] >> 8) / 16777216.0 >= 0.3;
      wrong += mask[i] != keep;
      kept += keep;
      if (mask[i] != keep) continue;
      const float y = out[0].data<float>()[i];
      if (keep) CHECK(y == doctest::Approx(i / 0.7));
      else CHECK(y == 0.f);
    }
    CHECK(wrong == 0);
    CHECK(kept > 650);  // 1001 · 0.7 = 700.7 expected
    CHECK(kept < 750);
    masks.push_back(mask);
    CHECK(ivec(second.run(feeds)[1]) == mask);  // another executor: the same sequence
  }
  CHECK(masks[0] != masks[1]);
  CHECK(masks[1] != masks[2]);
}
