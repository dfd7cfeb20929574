// Classical-ML models (domain ai.onnx.ml) through the real binary: a scikit-learn-style pipeline
// written with the protobuf classes (MatMul -> Scaler -> LinearClassifier with string labels, and
// a TreeEnsembleRegressor beside it), as skl2onnx lays one out with zipmap off.
//   infer:   labels and scores as worked out by hand;
//   inspect: the ai.onnx.ml nodes count, and none is listed as unsupported;
//   convert: MatMul goes to FP16, the ai.onnx.ml nodes stay FP32 (libonnx's checker accepts the
//            result), and the converted model gives the same labels;
//   ZipMap (a map output) and train (no gradient through the classifier) are named errors.
#include <doctest/doctest.h>

#include <cmath>

#include "cli/cli_runner.h"
#include "onnx_loader/model_builder.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

onnx::NodeProto* ml_node(ModelBuilder& b, const std::string& op, const std::vector<std::string>& in,
                         const std::vector<std::string>& out) {
  onnx::NodeProto* n = b.node(op, in, out, op);
  n->set_domain("ai.onnx.ml");
  return n;
}
void floats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
void ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void strings(onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}
void string1(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  add_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}

// x [N, 2] -> m = x · W (W = [[1, 0], [0, 2]]) -> s = Scaler(m - (1, 0)) ->
// (label, p) = LinearClassifier(s): scores (s0, s1, -s0 - s1 + 0.5), labels a/b/c, SOFTMAX;
// t = TreeEnsembleRegressor(s): s1 <= 1 ? -1 : 1.
ModelBuilder pipeline(bool zipmap = false) {
  ModelBuilder b(13);
  auto* o = b.m.add_opset_import();
  o->set_domain("ai.onnx.ml");
  o->set_version(3);
  b.input("x", kFloat, {std::string("N"), int64_t{2}});
  b.init_f32("W", {2, 2}, {1, 0, 0, 2});
  b.node("MatMul", {"x", "W"}, {"m"}, "matmul");
  auto* sc = ml_node(b, "Scaler", {"m"}, {"s"});
  floats(sc, "offset", {1, 0});
  floats(sc, "scale", {1, 1});
  auto* lc = ml_node(b, "LinearClassifier", {"s"}, {"label", "p"});
  floats(lc, "coefficients", {1, 0, 0, 1, -1, -1});
  floats(lc, "intercepts", {0, 0, 0.5f});
  strings(lc, "classlabels_strings", {"a", "b", "c"});
  string1(lc, "post_transform", "SOFTMAX");
  auto* tr = ml_node(b, "TreeEnsembleRegressor", {"s"}, {"t"});
  ints(tr, "nodes_treeids", {0, 0, 0});
  ints(tr, "nodes_nodeids", {0, 1, 2});
  ints(tr, "nodes_featureids", {1, 0, 0});
  floats(tr, "nodes_values", {1, 0, 0});
  strings(tr, "nodes_modes", {"BRANCH_LEQ", "LEAF", "LEAF"});
  ints(tr, "nodes_truenodeids", {1, 0, 0});
  ints(tr, "nodes_falsenodeids", {2, 0, 0});
  ints(tr, "target_treeids", {0, 0});
  ints(tr, "target_nodeids", {1, 2});
  ints(tr, "target_ids", {0, 0});
  floats(tr, "target_weights", {-1, 1});
  b.output("label", onnx::TensorProto_DataType_STRING, {std::string("N")});
  if (zipmap) {
    auto* z = ml_node(b, "ZipMap", {"p"}, {"probs"});
    strings(z, "classlabels_strings", {"a", "b", "c"});
    auto* v = b.g()->add_output();
    v->set_name("probs");
    auto* map = v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_map_type();
    map->set_key_type(onnx::TensorProto_DataType_STRING);
    map->mutable_value_type()->mutable_tensor_type()->set_elem_type(kFloat);
  } else {
    b.output("p", kFloat, {std::string("N"), int64_t{3}});
  }
  b.output("t", kFloat, {std::string("N"), int64_t{1}});
  return b;
}

std::vector<std::string> string_values(const Tensor& t) {
  REQUIRE(t.dtype() == DType::String);
  return {t.data<std::string>(), t.data<std::string>() + t.numel()};
}

}  // namespace

TEST_CASE("infer, inspect and convert run an ai.onnx.ml pipeline") {
  TempDir dir;
  const std::string model = pipeline().save(dir.path / "pipe.onnx");
  const std::string xf = dir / "x.npy";
  // m = (2, 1), (0, 3), (0.5, 0) -> s = (1, 1), (-1, 3), (-0.5, 0)
  onnx_loader::write_npy(Tensor::from_vector<float>({3, 2}, {2, 0.5f, 0, 1.5f, 0.5f, 0}), xf);
  CliResult r = run_cli({"infer", model, "-i", xf, "-o", dir / "out"}, dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const Tensor label = onnx_loader::read_tensor_file(dir / "out/output_0.pb").tensor;
  const Tensor p = onnx_loader::read_tensor_file(dir / "out/output_1.pb").tensor;
  const Tensor t = onnx_loader::read_tensor_file(dir / "out/output_2.pb").tensor;
  // scores: (1, 1, -1.5), (-1, 3, -1.5), (-0.5, 0, 1)
  CHECK(string_values(label) == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(p.shape() == Shape{3, 3});
  const float d0 = 2 * std::exp(1.0f) + std::exp(-1.5f);
  CHECK(p.to_float_vector()[0] == doctest::Approx(std::exp(1.0f) / d0));
  CHECK(p.to_float_vector()[2] == doctest::Approx(std::exp(-1.5f) / d0));
  CHECK(t.to_float_vector() == std::vector<float>{-1, 1, -1});

  r = run_cli({"inspect", model}, dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(has(r.out, "ai.onnx.ml.TreeEnsembleRegressor"), r.out);
  CHECK_MESSAGE(!has(r.out, "not supported"), r.out);

  const std::string fp16 = dir / "pipe16.onnx";
  r = run_cli({"convert", model, "-o", fp16, "--keep-io-types"}, dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(std::filesystem::exists(fp16));
  r = run_cli({"inspect", model, "--precision", "fp16"}, dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(has(r.out, "ai.onnx.ml op: kept fp32"), r.out);
  r = run_cli({"infer", fp16, "-i", xf, "-o", dir / "out16"}, dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(string_values(onnx_loader::read_tensor_file(dir / "out16/output_0.pb").tensor) ==
        std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("ZipMap and training through a classifier are named errors") {
  TempDir dir;
  const std::string model = pipeline(true).save(dir.path / "zip.onnx");
  const std::string xf = dir / "x.npy";
  onnx_loader::write_npy(Tensor::from_vector<float>({1, 2}, {1, 1}), xf);
  CliResult r = run_cli({"infer", model, "-i", xf, "-o", dir / "out"}, dir);
  CHECK(r.status == 1);
  CHECK_MESSAGE(has(r.err, "ZipMap"), r.err);
  CHECK_MESSAGE(has(r.err, "zipmap"), r.err);
  CHECK_FALSE(std::filesystem::exists(dir / "out/output_0.pb"));

  const std::string plain = pipeline().save(dir.path / "pipe.onnx");
  const std::string yf = dir / "y.npy";
  onnx_loader::write_npy(Tensor::from_vector<float>({1, 1}, {0.5f}), yf);
  r = run_cli({"train", plain, "--train-x", xf, "--train-y", yf, "--loss", "mse", "--loss-output",
               "t", "--steps", "1", "--batch", "1"},
              dir);
  CHECK(r.status == 1);
  CHECK_MESSAGE(has(r.err, "TreeEnsembleRegressor"), r.err);
}
