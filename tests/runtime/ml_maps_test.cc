// Map values (runtime/tensor.h) and ai.onnx.ml's map ops (runtime/cpu/kernels/ml_maps.cc), one
// node at a time, against values worked out from the formulas in the kernel file's header.
// scripts/compare_ml_ort.py checks the same ops against ONNX Runtime on random models.
#include <doctest/doctest.h>

#include "tests/runtime/single_node.h"

using namespace oat_test;
using oat::DType;
using oat::Shape;
using oat::ValueKind;
using F = std::vector<float>;
using I = std::vector<int64_t>;
using S = std::vector<std::string>;

namespace {

const char* kMl = "ai.onnx.ml";

Tensor strs(const S& v) {
  Tensor t(DType::String, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

S svec(const Tensor& t) {
  REQUIRE(t.dtype() == DType::String);
  return S(t.data<std::string>(), t.data<std::string>() + t.numel());
}

Tensor fvals(const F& v) { return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v); }

std::vector<Tensor> ml(const std::string& op, const std::map<std::string, Attribute>& attrs,
                       const std::vector<Tensor>& in) {
  return run_node(op, 1, attrs, in, 1, kMl);
}

// What a failing run says (the executor's error names the node and the problem).
std::string failure(const std::string& op, const std::map<std::string, Attribute>& attrs,
                    const std::vector<Tensor>& in) {
  try {
    ml(op, attrs, in);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a map keeps its keys ascending, one value each (the last of a repeated key)") {
  const Tensor m = Tensor::map(i64({3, 1, 3, 2}), fvals({0.5f, 1.5f, 7, -2}));
  CHECK(m.kind() == ValueKind::Map);
  CHECK(m.key_dtype() == DType::I64);
  CHECK(m.dtype() == DType::F32);
  CHECK(ivec(m.map_keys()) == I{1, 2, 3});
  CHECK(fvec(m.map_values()) == F{1.5f, -2, 7});
  CHECK(m.describe() == "map(int64, float32) of 3");

  const Tensor t = Tensor::map(strs({"b", "a"}), strs({"x", "y"}));
  CHECK(svec(t.map_keys()) == S{"a", "b"});
  CHECK(svec(t.map_values()) == S{"y", "x"});

  const Tensor seq = Tensor::sequence(DType::F32, {m, m});
  CHECK(seq.inner_kind() == ValueKind::Map);
  CHECK(seq.describe() == "sequence(map(int64, float32)) of 2");
  CHECK(Tensor::map_sequence(DType::String, DType::F32, {}).describe() ==
        "sequence(map(string, float32)) of 0");

  CHECK_THROWS_WITH_AS(Tensor::map(fvals({1}), fvals({1})),
                       doctest::Contains("integers or strings"), oat::Error);
  CHECK_THROWS_WITH_AS(Tensor::map(i64({1, 2}), fvals({1})), doctest::Contains("one length"),
                       oat::Error);
  CHECK_THROWS_WITH_AS(Tensor::sequence(DType::F32, {m, fvals({1})}),
                       doctest::Contains("cannot hold a tensor"), oat::Error);
  CHECK_THROWS_WITH_AS((void)m.data<float>(), doctest::Contains("is not a tensor"), oat::Error);
}

TEST_CASE("ZipMap: one map per row, labels to the row's scores") {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.25f, 0.25f});
  const Tensor z = ml("ZipMap", {{"classlabels_strings", attr_strings({"cat", "ant", "bee"})}},
                      {x})[0];
  REQUIRE(z.kind() == ValueKind::Sequence);
  REQUIRE(z.inner_kind() == ValueKind::Map);
  REQUIRE(z.items().size() == 2);
  CHECK(svec(z.items()[0].map_keys()) == S{"ant", "bee", "cat"});
  CHECK(fvec(z.items()[0].map_values()) == F{0.7f, 0.2f, 0.1f});
  CHECK(fvec(z.items()[1].map_values()) == F{0.25f, 0.25f, 0.5f});

  // int64 labels; a 1-D X is one row; a repeated label keeps its last column
  const Tensor w = ml("ZipMap", {{"classlabels_int64s", attr_ints({5, -1, 5})}},
                      {fvals({1, 2, 3})})[0];
  REQUIRE(w.items().size() == 1);
  CHECK(w.key_dtype() == DType::I64);
  CHECK(ivec(w.items()[0].map_keys()) == I{-1, 5});
  CHECK(fvec(w.items()[0].map_values()) == F{2, 3});

  // zero rows: an empty sequence that still knows its map type
  const Tensor e = ml("ZipMap", {{"classlabels_int64s", attr_ints({0, 1})}},
                      {Tensor(DType::F32, {0, 2})})[0];
  CHECK(e.describe() == "sequence(map(int64, float32)) of 0");
}

TEST_CASE("ZipMap refuses a label count unlike X's columns, and both or no label lists") {
  const Tensor x = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  std::string err = failure("ZipMap", {{"classlabels_int64s", attr_ints({0, 1})}}, {x});
  CHECK_MESSAGE(has(err, "3 columns but 2 class labels"), err);
  err = failure("ZipMap", {}, {x});
  CHECK_MESSAGE(has(err, "neither"), err);
  err = failure("ZipMap",
                {{"classlabels_int64s", attr_ints({0, 1, 2})},
                 {"classlabels_strings", attr_strings({"a", "b", "c"})}},
                {x});
  CHECK_MESSAGE(has(err, "both"), err);
  err = failure("ZipMap", {{"classlabels_int64s", attr_ints({0})}},
                {Tensor::from_vector<float>({1, 1, 1}, {1})});
  CHECK_MESSAGE(has(err, "[N, C] or [C]"), err);
}

TEST_CASE("DictVectorizer: the vocabulary's values, 0 or \"\" where the map lacks a key") {
  const Tensor m = Tensor::map(strs({"b", "a", "z"}), fvals({2, 1, 9}));
  const Tensor y = ml("DictVectorizer", {{"string_vocabulary", attr_strings({"a", "c", "b"})}},
                      {m})[0];
  CHECK(y.shape() == Shape{1, 3});
  CHECK(fvec(y) == F{1, 0, 2});

  const Tensor n = Tensor::map(i64({7, 3}), strs({"seven", "three"}));
  const Tensor t = ml("DictVectorizer", {{"int64_vocabulary", attr_ints({3, 4, 7})}}, {n})[0];
  CHECK(svec(t) == S{"three", "", "seven"});

  const Tensor d = Tensor::map(i64({1}), Tensor::from_vector<double>({1}, {2.5}));
  CHECK(ml("DictVectorizer", {{"int64_vocabulary", attr_ints({1, 2})}}, {d})[0].dtype() ==
        DType::F64);

  std::string err = failure("DictVectorizer", {{"int64_vocabulary", attr_ints({1})}}, {m});
  CHECK_MESSAGE(has(err, "int64_vocabulary (integer keys)"), err);
  err = failure("DictVectorizer", {{"string_vocabulary", attr_strings({"a"})}}, {fvals({1})});
  CHECK_MESSAGE(has(err, "DictVectorizer"), err);
}

TEST_CASE("CastMap: DENSE in key order, SPARSE by key with ONNX Runtime's padding") {
  const Tensor s = Tensor::map(i64({3, 1}), strs({"1.5", " 2"}));
  Tensor y = ml("CastMap", {}, {s})[0];  // TO_FLOAT, DENSE
  CHECK(y.shape() == Shape{1, 2});
  CHECK(fvec(y) == F{2, 1.5f});
  y = ml("CastMap", {{"cast_to", attr_s("TO_INT64")}}, {s})[0];
  CHECK(ivec(y) == I{2, 1});  // strtoll reads the leading "1" of "1.5"
  y = ml("CastMap", {{"cast_to", attr_s("TO_STRING")}}, {s})[0];
  CHECK(svec(y) == S{" 2", "1.5"});

  const Tensor f = Tensor::map(i64({0, 2, 9}), fvals({1.5f, -3.7f, 1}));
  y = ml("CastMap",
         {{"cast_to", attr_s("TO_INT64")}, {"map_form", attr_s("SPARSE")}, {"max_map", attr_i(4)}},
         {f})[0];
  CHECK(y.shape() == Shape{1, 4});
  CHECK(ivec(y) == I{1, 0, -3, 0});  // key 9 lies past max_map: dropped
  y = ml("CastMap",
         {{"cast_to", attr_s("TO_STRING")}, {"map_form", attr_s("SPARSE")}, {"max_map", attr_i(3)}},
         {f})[0];
  CHECK(svec(y) == S{"1.500000", "0.f", "-3.700000"});
  y = ml("CastMap", {{"map_form", attr_s("SPARSE")}, {"max_map", attr_i(2)}}, {f})[0];
  CHECK(fvec(y) == F{1.5f, 0});
}

TEST_CASE("CastMap refuses negative SPARSE keys, non-numbers and unknown attributes") {
  const Tensor neg = Tensor::map(i64({-1, 0}), fvals({1, 2}));
  std::string err = failure("CastMap", {{"map_form", attr_s("SPARSE")}, {"max_map", attr_i(2)}},
                            {neg});
  CHECK_MESSAGE(has(err, "key -1"), err);
  err = failure("CastMap", {}, {Tensor::map(i64({4}), strs({"abc"}))});
  CHECK_MESSAGE(has(err, "\"abc\" of key 4 is not a number"), err);
  err = failure("CastMap", {{"cast_to", attr_s("TO_DOUBLE")}}, {neg});
  CHECK_MESSAGE(has(err, "TO_DOUBLE"), err);
  err = failure("CastMap", {{"map_form", attr_s("SPARSE")}, {"max_map", attr_i(0)}}, {neg});
  CHECK_MESSAGE(has(err, "max_map must be > 0"), err);
  err = failure("CastMap", {}, {Tensor::map(strs({"a"}), fvals({1}))});
  CHECK_MESSAGE(has(err, "map(int64, string) or map(int64, float32)"), err);
}

// ONNX's schemas give SequenceAt & co. sequences of tensors only (libonnx's checker refuses a
// model that feeds them ZipMap's output); the runtime's kernels still move maps without harm.
TEST_CASE("the runtime's sequence kernels move maps: SequenceAt, SequenceLength, SequenceErase") {
  const Tensor m0 = Tensor::map(i64({0, 1}), fvals({0.25f, 0.75f}));
  const Tensor m1 = Tensor::map(i64({0, 1}), fvals({0.5f, 0.5f}));
  const Tensor seq = Tensor::sequence(DType::F32, {m0, m1});
  const Tensor at = run_node("SequenceAt", 11, {}, {seq, i64({-1})})[0];
  REQUIRE(at.kind() == ValueKind::Map);
  CHECK(fvec(at.map_values()) == F{0.5f, 0.5f});
  CHECK(ivec(run_node("SequenceLength", 11, {}, {seq})[0]) == I{2});
  const Tensor erased = run_node("SequenceErase", 11, {}, {Tensor::sequence(DType::F32, {m0})})[0];
  CHECK(erased.describe() == "sequence(map(int64, float32)) of 0");
}
