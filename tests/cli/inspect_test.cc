// `inspect MODEL` (text and --json): inputs and outputs with shapes and types, node count by op,
// parameter count and bytes, opsets, the nodes this build cannot run, loader warnings.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;

namespace {

// x [batch, 4] -> Gemm(W [4, 3], B [3]) -> Relu -> Reshape(shape) -> FooBar -> y
ModelBuilder sample_model() {
  ModelBuilder mb(13);
  mb.m.set_producer_name("oat-test");
  mb.m.set_producer_version("2.0");
  auto* ml = mb.m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  mb.input("x", kFloat, {"batch", 4});
  mb.init_f32("W", {4, 3}, std::vector<float>(12, 0.5f));
  mb.init_f32("B", {3}, {0, 0, 0});
  mb.init_i64("shape", {2}, {-1, 3});
  mb.node("Gemm", {"x", "W", "B"}, {"h"}, "fc");
  mb.node("Relu", {"h"}, {"r"}, "act");
  mb.node("Relu", {"r"}, {"r2"}, "act2");
  mb.node("Reshape", {"r2", "shape"}, {"flat"}, "reshape");
  mb.node("FooBar", {"flat"}, {"y"}, "mystery");
  mb.output("y", kFloat, {"batch", 3});
  return mb;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("inspect prints the model's interface, ops, parameters, opsets and unsupported nodes") {
  TempDir dir;
  const std::string model = sample_model().save(dir.path / "sample.onnx");
  CliResult r = run_cli({"inspect", model}, dir);
  CAPTURE(r.out);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "producer   oat-test 2.0  (IR version 8)"));
  CHECK(has(r.out, "ai.onnx:13"));
  CHECK(has(r.out, "ai.onnx.ml:3"));
  CHECK(has(r.out, "  x  float32 [batch, 4]"));
  CHECK(has(r.out, "  y  float32 [batch, 3]"));
  CHECK(has(r.out, "nodes      5"));
  CHECK(has(r.out, "  Relu                        2"));
  CHECK(has(r.out, "  Gemm                        1"));
  CHECK(has(r.out, "parameters 15 (60 bytes"));
  CHECK(has(r.out, "in 2 tensors"));
  CHECK(has(r.out, "1 integer/bool/string initializers, 2 elements (16 bytes)"));
  CHECK(has(r.out, "1 node(s) this build cannot run:"));
  CHECK(has(r.out, "node 'mystery' (FooBar, opset 13): op FooBar (opset 13) is not supported"));
}

TEST_CASE("inspect --json carries the same report as data") {
  TempDir dir;
  const std::string model = sample_model().save(dir.path / "sample.onnx");
  CliResult r = run_cli({"inspect", model, "--json"}, dir);
  REQUIRE(r.status == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["ir_version"] == 8);
  CHECK(j["producer"]["name"] == "oat-test");
  CHECK(j["opsets"]["ai.onnx"] == 13);
  CHECK(j["opsets"]["ai.onnx.ml"] == 3);
  REQUIRE(j["inputs"].size() == 1);
  CHECK(j["inputs"][0]["name"] == "x");
  CHECK(j["inputs"][0]["dtype"] == "float32");
  CHECK(j["inputs"][0]["shape"] == "[batch, 4]");
  CHECK(j["inputs"][0]["dims"] == nlohmann::json::array({"batch", 4}));
  CHECK(j["outputs"][0]["dims"] == nlohmann::json::array({"batch", 3}));
  CHECK(j["nodes"] == 5);
  CHECK(j["op_counts"]["Relu"] == 2);
  CHECK(j["op_counts"]["FooBar"] == 1);
  CHECK(j["parameters"] == 15);
  CHECK(j["parameter_bytes"] == 60);
  CHECK(j["parameter_tensors"] == 2);
  CHECK(j["other_initializer_bytes"] == 16);
  REQUIRE(j["unsupported"].size() == 1);
  CHECK(j["unsupported"][0]["node"] == "node 'mystery' (FooBar, opset 13)");
  CHECK(j["warnings"].empty());
}

TEST_CASE("inspect counts the parameters training unties from Identity copies") {
  // torch.onnx's eval-mode export of two equal layers: B2 = Identity(B) stands for a second bias.
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"batch", 4});
  mb.init_f32("W", {4, 3}, std::vector<float>(12, 0.5f));
  mb.init_f32("B", {3}, {0, 0, 0});
  mb.init_f32("W2", {3, 3}, std::vector<float>(9, 0.5f));
  mb.node("Identity", {"B"}, {"B2"}, "alias");
  mb.node("Gemm", {"x", "W", "B"}, {"h"}, "fc");
  mb.node("Gemm", {"h", "W2", "B2"}, {"y"}, "fc2");
  mb.output("y", kFloat, {"batch", 3});
  const std::string model = mb.save(dir.path / "aliased.onnx");
  CliResult r = run_cli({"inspect", model}, dir);
  CAPTURE(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "parameters 24 (96 bytes"));
  CHECK(has(r.out, "aliases    1 copies of merged initializers"));
  CHECK(has(r.out, "training unties them: 27 parameters in 4 tensors"));
  CliResult rj = run_cli({"inspect", model, "--json"}, dir);
  REQUIRE(rj.status == 0);
  nlohmann::json j = nlohmann::json::parse(rj.out);
  CHECK(j["aliased_parameter_tensors"] == 1);
  CHECK(j["trained_parameters"] == 27);
  // Without aliases the line is absent.
  CliResult plain = run_cli({"inspect", sample_model().save(dir.path / "s.onnx")}, dir);
  CHECK(!has(plain.out, "aliases"));
}

TEST_CASE("inspect of a fully supported model, and of an opset-18 model") {
  TempDir dir;
  ModelBuilder ok = sample_model();
  ok.g()->mutable_node(4)->set_op_type("Relu");
  CliResult r = run_cli({"inspect", ok.save(dir.path / "ok.onnx")}, dir);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "every node can run on the CPU"));

  // Opset 18: ReduceMean takes axes as an input; libonnx 1.12 knows opsets up to 17.
  ModelBuilder mb(18);
  mb.input("x", kFloat, {2, 6});
  mb.init_i64("axes", {1}, {1});
  mb.output("m", kFloat, {2, 1});
  mb.node("ReduceMean", {"x", "axes"}, {"m"}, "mean");
  r = run_cli({"inspect", mb.save(dir.path / "op18.onnx")}, dir);
  CAPTURE(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "ai.onnx:18"));
  CHECK(has(r.out, "  ReduceMean                  1"));
  CHECK(has(r.out, "warning: opset 18 is newer than libonnx knows"));
  r = run_cli({"inspect", dir / "op18.onnx", "--json"}, dir);
  REQUIRE(r.status == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["opsets"]["ai.onnx"] == 18);
  REQUIRE(j["warnings"].size() == 1);
  CHECK(j["unsupported"].empty());
  // ...and it runs through infer, with a batch other than the declared one.
  onnx_loader::write_npy(Tensor::from_vector<float>({1, 6}, {1, 2, 3, 4, 5, 6}), dir / "x.npy");
  r = run_cli({"infer", dir / "op18.onnx", "-i", dir / "x.npy", "-o", dir / "out"}, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  auto m = onnx_loader::read_tensor_pb(dir / "out/output_0.pb");
  CHECK(m.name == "m");
  CHECK(m.tensor.to_float_vector() == std::vector<float>{3.5f});
}

TEST_CASE("inspect of a bad file is one error line") {
  TempDir dir;
  write_bytes(dir / "bad.onnx", "not a model");
  CliResult r = run_cli({"inspect", dir / "bad.onnx"}, dir);
  CHECK(r.status == 1);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(has(r.err, "error: "));
  CHECK(has(r.err, "bad.onnx"));
}
