// The ai.onnx.ml kernels (runtime/cpu/kernels/ml_*.cc), one node at a time, against values
// worked out by hand from each op's formula (the file headers). scripts/compare_ml_ort.py checks
// the same ops against ONNX Runtime on random models.
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/cpu/kernels/ml_common.h"
#include "tests/runtime/single_node.h"

using namespace oat_test;
using oat::DType;
using oat::Shape;
using F = std::vector<float>;
using I = std::vector<int64_t>;
using S = std::vector<std::string>;

namespace {

const char* kMl = "ai.onnx.ml";

std::vector<Tensor> ml(const std::string& op, const std::map<std::string, Attribute>& attrs,
                       const std::vector<Tensor>& in, int outputs = 1, int64_t opset = 3) {
  return run_node(op, opset, attrs, in, outputs, kMl);
}

Tensor fm(Shape s, F v) { return Tensor::from_vector<float>(std::move(s), v); }

Tensor strs(Shape s, const S& v) {
  Tensor t(DType::String, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

S svec(const Tensor& t) {
  REQUIRE(t.dtype() == DType::String);
  return S(t.data<std::string>(), t.data<std::string>() + t.numel());
}

void close(const Tensor& t, const F& want, float tol = 1e-5f) {
  const F got = fvec(t);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
  }
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

TEST_CASE("ai.onnx.ml ops are found in their domain only") {
  CHECK(oat::ml_op_from_name("Scaler") == oat::OpId::Scaler);
  CHECK(oat::op_from_name("Scaler") == oat::OpId::Unknown);  // not a default-domain op
  CHECK(oat::op_from_domain("ai.onnx.ml", "TreeEnsembleClassifier") ==
        oat::OpId::TreeEnsembleClassifier);
  CHECK(oat::op_from_domain("ai.onnx.ml", "Relu") == oat::OpId::Unknown);
  CHECK(oat::op_from_domain("", "Relu") == oat::OpId::Relu);
  CHECK(oat::is_ml_op(oat::OpId::LabelEncoder));
  CHECK_FALSE(oat::is_ml_op(oat::OpId::Gemm));
}

TEST_CASE("Scaler: (x - offset) * scale per feature or shared, any numeric X") {
  Tensor y = ml("Scaler", {{"offset", attr_floats({1, 0})}, {"scale", attr_floats({2, 0.5f})}},
                {fm({2, 2}, {1, 2, 3, 4})})[0];
  CHECK(y.shape() == Shape{2, 2});
  CHECK(fvec(y) == F{0, 1, 4, 2});
  y = ml("Scaler", {{"offset", attr_floats({1.5f})}, {"scale", attr_floats({0.25f})}},
         {Tensor::from_vector<int64_t>({3}, {1, 3, 5})})[0];
  CHECK(y.dtype() == DType::F32);
  CHECK(fvec(y) == F{-0.125f, 0.375f, 0.875f});
  CHECK_THROWS_WITH(ml("Scaler", {{"offset", attr_floats({1, 2, 3})}}, {fm({1, 2}, {1, 2})}),
                    doctest::Contains("offset has 3 values; X has 2 features"));
}

TEST_CASE("Normalizer: MAX, L1, L2 per row; a zero row is copied") {
  const Tensor x = fm({3, 3}, {1, 2, 4, -3, 0, 1, 0, 0, 0});
  close(ml("Normalizer", {{"norm", attr_s("MAX")}}, {x})[0], {0.25f, 0.5f, 1, -3, 0, 1, 0, 0, 0});
  close(ml("Normalizer", {{"norm", attr_s("L1")}}, {x})[0],
        {1 / 7.f, 2 / 7.f, 4 / 7.f, -0.75f, 0, 0.25f, 0, 0, 0});
  const float r1 = std::sqrt(21.f), r2 = std::sqrt(10.f);
  close(ml("Normalizer", {{"norm", attr_s("L2")}}, {x})[0],
        {1 / r1, 2 / r1, 4 / r1, -3 / r2, 0, 1 / r2, 0, 0, 0});
  CHECK_THROWS_WITH(ml("Normalizer", {{"norm", attr_s("L3")}}, {x}),
                    doctest::Contains("norm must be MAX, L1 or L2"));
}

TEST_CASE("Binarizer keeps the type: x > threshold") {
  Tensor y = ml("Binarizer", {{"threshold", attr_f(0.5f)}}, {fm({4}, {0.2f, 0.5f, 0.7f, NAN})})[0];
  CHECK(fvec(y) == F{0, 0, 1, 0});
  y = ml("Binarizer", {}, {Tensor::from_vector<int64_t>({3}, {-1, 0, 4})})[0];
  CHECK(y.dtype() == DType::I64);
  CHECK(ivec(y) == I{0, 0, 1});
}

TEST_CASE("Imputer replaces NaN or a value, per feature or shared") {
  Tensor y = ml("Imputer",
                {{"imputed_value_floats", attr_floats({10, 20})},
                 {"replaced_value_float", attr_f(NAN)}},
                {fm({2, 2}, {NAN, 1, 2, NAN})})[0];
  CHECK(fvec(y) == F{10, 1, 2, 20});
  y = ml("Imputer", {{"imputed_value_int64s", attr_ints({7})}, {"replaced_value_int64", attr_i(-1)}},
         {Tensor::from_vector<int64_t>({3}, {-1, 3, -1})})[0];
  CHECK(ivec(y) == I{7, 3, 7});
  CHECK_THROWS_WITH(ml("Imputer", {{"imputed_value_int64s", attr_ints({7})}}, {fm({1}, {0})}),
                    doctest::Contains("X is float but the imputed values are imputed_value_int64s"));
}

TEST_CASE("ArrayFeatureExtractor picks last-axis columns of any type") {
  Tensor z = ml("ArrayFeatureExtractor", {}, {fm({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2, 0})})[0];
  CHECK(z.shape() == Shape{2, 2});
  CHECK(fvec(z) == F{3, 1, 6, 4});
  z = ml("ArrayFeatureExtractor", {}, {fm({3}, {1, 2, 3}), i64({1})})[0];
  CHECK(z.shape() == Shape{1, 1});  // a 1-D X gives one row
  CHECK(fvec(z) == F{2});
  z = ml("ArrayFeatureExtractor", {}, {strs({1, 3}, {"a", "b", "c"}), i64({2, 2, 1})})[0];
  CHECK(svec(z) == S{"c", "c", "b"});
  CHECK_THROWS_WITH(ml("ArrayFeatureExtractor", {}, {fm({3}, {1, 2, 3}), i64({3})}),
                    doctest::Contains("index 3 (Y[0]) is out of range for X's last dimension of 3"));
}

TEST_CASE("FeatureVectorizer puts rows side by side, cut or zero-padded") {
  Tensor y = ml("FeatureVectorizer", {{"inputdimensions", attr_ints({2, 2})}},
                {fm({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::from_vector<int64_t>({2, 1}, {7, 8})})[0];
  CHECK(y.shape() == Shape{2, 4});
  CHECK(fvec(y) == F{1, 2, 7, 0, 4, 5, 8, 0});
  CHECK_THROWS_WITH(ml("FeatureVectorizer", {{"inputdimensions", attr_ints({1, 1})}},
                       {fm({2, 1}, {1, 2}), fm({3, 1}, {1, 2, 3})}),
                    doctest::Contains("has 3 rows; input 0 has 2"));
}

TEST_CASE("LabelEncoder opset 1: classes_strings both ways, with defaults") {
  const Attribute classes = attr_strings({"a", "b"});
  Tensor y = ml("LabelEncoder", {{"classes_strings", classes}}, {strs({3}, {"b", "z", "a"})}, 1, 1)[0];
  CHECK(ivec(y) == I{1, -1, 0});
  y = ml("LabelEncoder", {{"classes_strings", classes}, {"default_string", attr_s("?")}},
         {i64({1, 5, 0})}, 1, 1)[0];
  CHECK(svec(y) == S{"b", "?", "a"});
}

TEST_CASE("LabelEncoder opset 2: keys to values of any kind; NaN matches NaN") {
  Tensor y = ml("LabelEncoder",
                {{"keys_floats", attr_floats({0.5f, NAN})}, {"values_strings", attr_strings({"half", "nan"})},
                 {"default_string", attr_s("-")}},
                {fm({3}, {NAN, 0.5f, 2})}, 1, 2)[0];
  CHECK(svec(y) == S{"nan", "half", "-"});
  y = ml("LabelEncoder", {{"keys_strings", attr_strings({"x", "y"})}, {"values_floats", attr_floats({1.5f, 2.5f})}},
         {strs({2, 1}, {"y", "q"})}, 1, 2)[0];
  CHECK(y.shape() == Shape{2, 1});
  const F f = fvec(y);
  CHECK(f[0] == 2.5f);
  CHECK((f[1] == 0.0f && std::signbit(f[1])));  // default_float is -0.0
  CHECK_THROWS_WITH(ml("LabelEncoder", {{"keys_int64s", attr_ints({1, 2})}, {"values_int64s", attr_ints({1})}},
                       {i64({1})}, 1, 2),
                    doctest::Contains("has 2 keys and 1 values"));
  CHECK_THROWS_WITH(ml("LabelEncoder", {{"keys_int64s", attr_ints({1})}, {"values_int64s", attr_ints({1})}},
                       {fm({1}, {1})}, 1, 2),
                    doctest::Contains("X must be int64 (the keys' type)"));
}

TEST_CASE("CategoryMapper maps strings to int64 and back") {
  const std::map<std::string, Attribute> a = {{"cats_strings", attr_strings({"lo", "hi"})},
                                              {"cats_int64s", attr_ints({3, 9})},
                                              {"default_int64", attr_i(0)}};
  CHECK(ivec(ml("CategoryMapper", a, {strs({3}, {"hi", "mid", "lo"})})[0]) == I{9, 0, 3});
  CHECK(svec(ml("CategoryMapper", a, {i64({3, 4, 9})})[0]) == S{"lo", "_Unused", "hi"});
}

TEST_CASE("OneHotEncoder adds a category axis; zeros = 0 makes an unknown an error") {
  Tensor y = ml("OneHotEncoder", {{"cats_int64s", attr_ints({1, 2, 3})}},
                {Tensor::from_vector<int64_t>({1, 3}, {1, 3, 5})})[0];
  CHECK(y.shape() == Shape{1, 3, 3});
  CHECK(fvec(y) == F{1, 0, 0, 0, 0, 1, 0, 0, 0});
  y = ml("OneHotEncoder", {{"cats_strings", attr_strings({"a", "b"})}}, {strs({2}, {"b", "a"})})[0];
  CHECK(fvec(y) == F{0, 1, 1, 0});
  CHECK_THROWS_WITH(ml("OneHotEncoder", {{"cats_int64s", attr_ints({1})}, {"zeros", attr_i(0)}},
                       {i64({2})}),
                    doctest::Contains("element 0 of X is in no category"));
}

TEST_CASE("LinearRegressor: x W^T + b per target") {
  Tensor y = ml("LinearRegressor",
                {{"coefficients", attr_floats({1, 1, 2, -1})}, {"intercepts", attr_floats({0.5f, 0})},
                 {"targets", attr_i(2)}},
                {fm({2, 2}, {1, 2, 3, 0})})[0];
  CHECK(y.shape() == Shape{2, 2});
  CHECK(fvec(y) == F{3.5f, 0, 3.5f, 6});
  CHECK_THROWS_WITH(ml("LinearRegressor", {{"coefficients", attr_floats({1, 1, 1})}}, {fm({1, 2}, {1, 2})}),
                    doctest::Contains("coefficients has 3 values; 1 targets of X's 2 features need 2"));
}

TEST_CASE("LinearClassifier: argmax labels, post-transformed scores, the binary rule") {
  const std::map<std::string, Attribute> a = {
      {"coefficients", attr_floats({1, 0, 0, 1, 0.5f, 0.5f})},
      {"intercepts", attr_floats({0, 0, 0})},
      {"classlabels_ints", attr_ints({7, 8, 9})},
      {"post_transform", attr_s("SOFTMAX")}};
  auto out = ml("LinearClassifier", a, {fm({2, 2}, {1, 0, 0, 2})}, 2);
  CHECK(ivec(out[0]) == I{7, 8});
  const float e = std::exp(0.5f), d0 = e * e + 1 + e;  // row 0 scores (1, 0, 0.5)
  const float f = std::exp(1.0f), d1 = 1 + f * f + f;  // row 1 scores (0, 2, 1)
  close(out[1], {e * e / d0, 1 / d0, e / d0, 1 / d1, f * f / d1, f / d1});
  // one row of coefficients and two labels: label = s > 0 ? labels[1] : labels[0], Z = [1-s, s]
  out = ml("LinearClassifier",
           {{"coefficients", attr_floats({1, -1})}, {"intercepts", attr_floats({0})},
            {"classlabels_strings", attr_strings({"no", "yes"})}, {"post_transform", attr_s("LOGISTIC")}},
           {fm({2, 2}, {2, 1, 0, 1})}, 2);
  CHECK(svec(out[0]) == S{"yes", "no"});
  CHECK(out[1].shape() == Shape{2, 2});
  // scores s = 1, -1: LOGISTIC gives [1 - σ(s), σ(s)] (ONNX Runtime 1.32)
  close(out[1], {1 - sigmoid(1), sigmoid(1), 1 - sigmoid(-1), sigmoid(-1)});
  // without a post-transform (or with SOFTMAX, which leaves one score) [1 - s, s]
  out = ml("LinearClassifier",
           {{"coefficients", attr_floats({1, -1})}, {"intercepts", attr_floats({0})},
            {"classlabels_ints", attr_ints({3, 8})}, {"post_transform", attr_s("SOFTMAX")}},
           {fm({2, 2}, {2, 1, 0, 1})}, 2);
  CHECK(ivec(out[0]) == I{8, 3});
  CHECK(fvec(out[1]) == F{0, 1, 2, -1});
}

TEST_CASE("SVMRegressor: kernels over support vectors, linear mode, one class") {
  // one support vector v = (1, 0), coefficient 2, rho 0.5, RBF gamma 0.5
  const std::map<std::string, Attribute> rbf = {
      {"coefficients", attr_floats({2})}, {"support_vectors", attr_floats({1, 0})},
      {"n_supports", attr_i(1)}, {"rho", attr_floats({0.5f})}, {"kernel_type", attr_s("RBF")},
      {"kernel_params", attr_floats({0.5f, 0, 0})}};
  close(ml("SVMRegressor", rbf, {fm({2, 2}, {1, 0, 0, 1})})[0],
        {2 + 0.5f, 2 * std::exp(-0.5f * 2) + 0.5f});
  auto poly = rbf;
  poly["kernel_type"] = attr_s("POLY");
  poly["kernel_params"] = attr_floats({2, 1, 2});  // (2 x.v + 1)^2
  close(ml("SVMRegressor", poly, {fm({1, 2}, {3, 5})})[0], {2 * 49.f + 0.5f});
  close(ml("SVMRegressor", {{"coefficients", attr_floats({1, -2})}, {"rho", attr_floats({0.25f})}},
           {fm({1, 2}, {3, 1})})[0],
        {1.25f});
  auto one = rbf;
  one["one_class"] = attr_i(1);
  one["rho"] = attr_floats({-1.0f});
  close(ml("SVMRegressor", one, {fm({2, 2}, {1, 0, 5, 5})})[0], {1, -1});
}

TEST_CASE("SVMClassifier: one-vs-one votes and the linear mode") {
  // three classes, one LINEAR support vector each: v0 = (1, 0), v1 = (0, 1), v2 = (-1, 0).
  // coefficient rows (K-1 = 2 rows of 3): row 0 = [., c(1 vs 0 for v1)...]; chosen so that
  // d(0,1) = k0 - k1, d(0,2) = k0 - k2, d(1,2) = k1 - k2 (rho 0), k_i = x . v_i.
  // d(i,j) = coef[j-1][v_i] k_i + coef[i][v_j] k_j: coef[0] = [., -1, -1], coef[1] = [1, 1, .]
  const std::map<std::string, Attribute> a = {
      {"vectors_per_class", attr_ints({1, 1, 1})},
      {"support_vectors", attr_floats({1, 0, 0, 1, -1, 0})},
      {"coefficients", attr_floats({1, -1, -1, 1, 1, -1})},
      {"rho", attr_floats({0, 0, 0})},
      {"classlabels_ints", attr_ints({10, 11, 12})}};
  // x = (0, 2): k = (0, 2, 0): d01 = -2 (vote 1), d02 = 0 (vote 2), d12 = 2 (vote 1) -> class 11
  // x = (3, 0): k = (3, 0, -3): d01 = 3 (0), d02 = 6 (0), d12 = 3 (1) -> class 10
  auto out = ml("SVMClassifier", a, {fm({2, 2}, {0, 2, 3, 0})}, 2);
  CHECK(ivec(out[0]) == I{11, 10});
  CHECK(out[1].shape() == Shape{2, 3});
  CHECK(fvec(out[1]) == F{-2, 0, 2, 3, 6, 3});
  // counts that would overflow (or read past support_vectors) are refused, naming the attribute
  auto huge = a;
  huge["vectors_per_class"] = attr_ints({int64_t{1} << 62, int64_t{1} << 62, 1});
  CHECK_THROWS_WITH(ml("SVMClassifier", huge, {fm({1, 2}, {0, 0})}, 2),
                    doctest::Contains("vectors_per_class counts more support vectors"));
  out = ml("SVMClassifier",
           {{"coefficients", attr_floats({1, 0, 0, 1})}, {"rho", attr_floats({0.5f})},
            {"classlabels_strings", attr_strings({"a", "b"})}},
           {fm({1, 2}, {1, 3})}, 2);
  CHECK(fvec(out[1]) == F{1.5f, 3.5f});
  CHECK(svec(out[0]) == S{"b"});
}

namespace {

// One depth-1 tree: node 0 tests feature 0 with `mode` at `v`; node 1 (true) and node 2 (false)
// are leaves with the given weights for `prefix` id 0. `tracks` = missing_value_tracks_true.
std::map<std::string, Attribute> stump(const std::string& prefix, const std::string& mode, float v,
                                       float w_true, float w_false, int64_t tracks = 0) {
  return {{"nodes_treeids", attr_ints({0, 0, 0})},
          {"nodes_nodeids", attr_ints({0, 1, 2})},
          {"nodes_featureids", attr_ints({0, 0, 0})},
          {"nodes_values", attr_floats({v, 0, 0})},
          {"nodes_modes", attr_strings({mode, "LEAF", "LEAF"})},
          {"nodes_truenodeids", attr_ints({1, 0, 0})},
          {"nodes_falsenodeids", attr_ints({2, 0, 0})},
          {"nodes_missing_value_tracks_true", attr_ints({tracks, 0, 0})},
          {prefix + "_treeids", attr_ints({0, 0})},
          {prefix + "_nodeids", attr_ints({1, 2})},
          {prefix + "_ids", attr_ints({0, 0})},
          {prefix + "_weights", attr_floats({w_true, w_false})}};
}

}  // namespace

TEST_CASE("TreeEnsembleRegressor: branch modes, missing values, aggregates, base values") {
  const Tensor x = fm({4, 1}, {0.2f, 0.5f, 0.9f, NAN});
  CHECK(fvec(ml("TreeEnsembleRegressor", stump("target", "BRANCH_LEQ", 0.5f, 1, 2, 1), {x})[0]) ==
        F{1, 1, 2, 1});  // NaN goes to the true branch
  CHECK(fvec(ml("TreeEnsembleRegressor", stump("target", "BRANCH_LT", 0.5f, 1, 2), {x})[0]) ==
        F{1, 2, 2, 2});  // NaN compares false
  CHECK(fvec(ml("TreeEnsembleRegressor", stump("target", "BRANCH_GTE", 0.5f, 1, 2), {x})[0]) ==
        F{2, 1, 1, 2});
  CHECK(fvec(ml("TreeEnsembleRegressor", stump("target", "BRANCH_EQ", 0.5f, 1, 2), {x})[0]) ==
        F{2, 1, 2, 2});
  CHECK(fvec(ml("TreeEnsembleRegressor", stump("target", "BRANCH_NEQ", 0.5f, 1, 2), {x})[0]) ==
        F{1, 2, 1, 1});
  // two trees (the second: feature 1 > 0 -> 10 else 20), SUM / AVERAGE / MIN / MAX, base 0.5
  auto two = stump("target", "BRANCH_LEQ", 0.5f, 1, 2);
  auto cat_ints = [&](const std::string& k, I more) {
    I v = two[k].ints;
    v.insert(v.end(), more.begin(), more.end());
    two[k] = attr_ints(v);
  };
  cat_ints("nodes_treeids", {1, 1, 1});
  cat_ints("nodes_nodeids", {0, 1, 2});
  cat_ints("nodes_featureids", {1, 0, 0});
  two["nodes_values"] = attr_floats({0.5f, 0, 0, 0, 0, 0});
  two["nodes_modes"] = attr_strings({"BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_GT", "LEAF", "LEAF"});
  cat_ints("nodes_truenodeids", {1, 0, 0});
  cat_ints("nodes_falsenodeids", {2, 0, 0});
  two["nodes_missing_value_tracks_true"] = attr_ints({0, 0, 0, 0, 0, 0});
  cat_ints("target_treeids", {1, 1});
  cat_ints("target_nodeids", {1, 2});
  cat_ints("target_ids", {0, 0});
  two["target_weights"] = attr_floats({1, 2, 10, 20});
  two["base_values"] = attr_floats({0.5f});
  const Tensor x2 = fm({2, 2}, {0, 1, 1, -1});  // leaves: (1, 10) and (2, 20)
  auto with = [&](const char* agg) {
    auto a = two;
    a["aggregate_function"] = attr_s(agg);
    return fvec(ml("TreeEnsembleRegressor", a, {x2})[0]);
  };
  CHECK(with("SUM") == F{11.5f, 22.5f});
  CHECK(with("AVERAGE") == F{6, 11.5f});
  CHECK(with("MIN") == F{1.5f, 2.5f});
  CHECK(with("MAX") == F{10.5f, 20.5f});
}

TEST_CASE("TreeEnsembleClassifier: multiclass argmax, binary LOGISTIC as gradient boosting") {
  // three classes: the stump's true leaf votes class 2 (weight 1), the false leaf class 0 (0.5)
  auto a = stump("class", "BRANCH_LEQ", 0.5f, 1, 0.5f);
  a["class_ids"] = attr_ints({2, 0});
  a["classlabels_strings"] = attr_strings({"r", "g", "b"});
  auto out = ml("TreeEnsembleClassifier", a, {fm({2, 1}, {0, 1})}, 2);
  CHECK(svec(out[0]) == S{"b", "r"});
  CHECK(fvec(out[1]) == F{0, 0, 1, 0.5f, 0, 0});
  // binary, weights for class 0 only, one base value: Z = [σ(-s), σ(s)], label s > 0
  auto g = stump("class", "BRANCH_LEQ", 0.5f, -0.5f, 0.7f);
  g["classlabels_int64s"] = attr_ints({3, 5});
  g["base_values"] = attr_floats({0.3f});
  g["post_transform"] = attr_s("LOGISTIC");
  out = ml("TreeEnsembleClassifier", g, {fm({2, 1}, {0, 1})}, 2);
  CHECK(ivec(out[0]) == I{3, 5});  // s = -0.2, then 1.0
  close(out[1], {sigmoid(0.2f), sigmoid(-0.2f), sigmoid(-1.0f), sigmoid(1.0f)});
  // binary, positive weights (probabilities of class 1): Z = [1 - p, p], label p > 0.5
  auto rf = stump("class", "BRANCH_LEQ", 0.5f, 0.25f, 0.75f);
  rf["class_ids"] = attr_ints({1, 1});
  rf["classlabels_int64s"] = attr_ints({0, 1});
  out = ml("TreeEnsembleClassifier", rf, {fm({2, 1}, {0, 1})}, 2);
  CHECK(ivec(out[0]) == I{0, 1});
  close(out[1], {0, 0.25f, 0, 0.75f});
}

TEST_CASE("tree ensembles refuse malformed trees, naming the node") {
  auto a = stump("target", "BRANCH_LEQ", 0.5f, 1, 2);
  a["nodes_truenodeids"] = attr_ints({7, 0, 0});
  CHECK_THROWS_WITH(ml("TreeEnsembleRegressor", a, {fm({1, 1}, {0})}),
                    doctest::Contains("node (tree 0, node 0) branches to node 7, which tree 0 does not have"));
  a = stump("target", "BRANCH_LEQ", 0.5f, 1, 2);
  a["nodes_modes"] = attr_strings({"BRANCH_LEQ", "BRANCH_LEQ", "LEAF"});
  a["nodes_truenodeids"] = attr_ints({1, 0, 0});
  a["nodes_falsenodeids"] = attr_ints({2, 2, 0});  // node 1 points back at the root
  CHECK_THROWS_WITH(ml("TreeEnsembleRegressor", a, {fm({1, 1}, {0})}), doctest::Contains("tree 0"));
  a = stump("target", "BRANCH_LEQ", 0.5f, 1, 2);
  a["nodes_featureids"] = attr_ints({3, 0, 0});
  CHECK_THROWS_WITH(ml("TreeEnsembleRegressor", a, {fm({1, 2}, {0, 0})}),
                    doctest::Contains("X has 2 features; the trees read feature 3"));
  a = stump("target", "BRANCH_LEQ", 0.5f, 1, 2);
  a["nodes_featureids"] = attr_ints({int64_t{1} << 62, 0, 0});  // no overflow of the width check
  CHECK_THROWS_WITH(ml("TreeEnsembleRegressor", a, {fm({1, 1}, {0})}),
                    doctest::Contains("reads feature 4611686018427387904"));
  a = stump("target", "BRANCH_LEQ", 0.5f, 1, 2);
  a["nodes_modes"] = attr_strings({"BRANCH_MAYBE", "LEAF", "LEAF"});
  CHECK_THROWS_WITH(ml("TreeEnsembleRegressor", a, {fm({1, 1}, {0})}),
                    doctest::Contains("nodes_modes holds \"BRANCH_MAYBE\""));
}

TEST_CASE("opset 3's *_as_tensor attributes hold double thresholds") {
  auto a = stump("target", "BRANCH_LEQ", 0, 1, 2);
  a.erase("nodes_values");
  // a threshold between two floats: float X compares in float (the threshold rounds to 0.1f),
  // double X in double
  a["nodes_values_as_tensor"] = attr_t(Tensor::from_vector<double>({3}, {0.1, 0, 0}));
  CHECK(fvec(ml("TreeEnsembleRegressor", a, {fm({1, 1}, {0.1f})})[0]) == F{1});
  CHECK(fvec(ml("TreeEnsembleRegressor", a, {Tensor::from_vector<double>({1, 1}, {0.1000001})})[0]) ==
        F{2});
  a["nodes_values"] = attr_floats({0, 0, 0});
  CHECK_THROWS_WITH(ml("TreeEnsembleRegressor", a, {fm({1, 1}, {0})}),
                    doctest::Contains("has both nodes_values and nodes_values_as_tensor"));
}

TEST_CASE("post-transforms are ONNX Runtime's") {
  using namespace oat::cpu::ml;
  CHECK(logistic(0) == 0.5f);
  CHECK(logistic(-100) == doctest::Approx(0).epsilon(1e-6));
  CHECK(probit(0.5f) == doctest::Approx(0).epsilon(1e-6));
  CHECK(probit(0.975f) == doctest::Approx(1.96f).epsilon(3e-3));  // Winitzki's approximation
  float s[3] = {0, 1, 2};
  post_transform_row(PostTransform::SoftmaxZero, s, 3);
  CHECK(s[0] == 0);  // a zero score is skipped
  CHECK(s[1] == doctest::Approx(1 / (1 + std::exp(1.0f))));
  float one[1] = {0.3f};
  post_transform_row(PostTransform::Logistic, one, 1);
  CHECK(one[0] == 0.3f);  // one score: PROBIT only
}
