// `check --forward-only`: no loss and no backward pass; the inference model as `convert` writes it
// (FP16/BF16 initializers, Casts, FP32 inputs/outputs) against the FP32 model, node by node, and
// every graph output end to end. Chosen by itself for a model that has nothing to train (no float
// initializer) or no float output a loss could read.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/tensor_io.h"
#include "reference_models.h"

using namespace oat;
using namespace oat_test;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), path);
  return nlohmann::json::parse(f);
}

std::string zoo_file(const TempDir& dir, const std::string& name) {
  const std::string path = dir / (name + ".onnx");
  onnx_loader::save_graph(models::zoo_model(name, 1), path);
  return path;
}

// A forward-only report: no gradient anywhere, no loss, every compared node checked locally,
// and some node really ran in `precision`.
void expect_forward_report(const nlohmann::json& j, const std::string& precision) {
  CHECK(j["forward_only"] == true);
  CHECK(!j.contains("loss"));
  size_t low = 0;
  for (const auto& n : j["nodes"]) {
    CHECK_MESSAGE(n["grad"].is_null(), n["node"]);
    if (!n["out"].is_null()) CHECK_MESSAGE(!n["local"].is_null(), n["node"]);
    low += n["precision"] == precision;
  }
  if (precision != "fp32") CHECK(low > 0);
  REQUIRE(j["outputs"].is_array());
  CHECK(!j["outputs"].empty());
}

// x [N, 8] -> MatMul(x, xᵀ) [N, N] -> Softmax: no initializer, nothing to train.
std::string parameterless_model(const TempDir& dir) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"N", 8});
  mb.output("p", kFloat, {"N", "N"});
  auto* t = mb.node("Transpose", {"x"}, {"xt"}, "transpose");
  auto* perm = add_attr(t, "perm", onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  mb.node("MatMul", {"x", "xt"}, {"gram"}, "gram");
  mb.node("Softmax", {"gram"}, {"p"}, "softmax");
  return mb.save(dir.path / "gram.onnx");
}

}  // namespace

TEST_SUITE("cli check --forward-only") {
  TEST_CASE("a model with no initializer is checked forward only, saying why") {
    TempDir dir;
    const std::string json = dir / "r.json";
    CliResult r = run_cli(
        {"check", parameterless_model(dir), "--device", "cpu", "--batch", "4", "--json", json},
        dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(first_line(r.out), "CPU-vs-CPU"));
    CHECK(has(first_line(r.out), "forward only"));
    CHECK(has(r.out, "forward only: the model has no float initializer"));
    CHECK(has(r.out, "output 'p' end-to-end abs"));
    const nlohmann::json j = read_json(json);
    expect_forward_report(j, "fp16");
    // The Gram MatMul ran in fp16, the Softmax (deny list) in fp32.
    for (const auto& n : j["nodes"]) {
      if (n["node"] == "gram") CHECK(n["precision"] == "fp16");
      if (n["node"] == "softmax") CHECK(n["precision"] == "fp32");
    }
    REQUIRE(j["outputs"].size() == 1);
    CHECK(j["outputs"][0]["value"] == "p");
    CHECK(j["outputs"][0]["rel"].get<double>() < 1e-2);
  }

  TEST_CASE("an integer output (ArgMax) leaves no loss to attach: forward only") {
    // x [N, 8] -> Gemm(w [4, 8]ᵀ, b) -> ArgMax: trainable weights, but an int64 output.
    TempDir dir;
    ModelBuilder mb(13);
    mb.input("x", kFloat, {"N", 8});
    std::vector<float> w(32), b(4);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.03f * static_cast<float>(i % 7) - 0.09f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i);
    mb.init_f32("w", {4, 8}, w);
    mb.init_f32("b", {4}, b);
    mb.output("cls", kInt64, {"N", 1});
    auto* gemm = mb.node("Gemm", {"x", "w", "b"}, {"logits"}, "fc");
    add_attr(gemm, "transB", onnx::AttributeProto::INT)->set_i(1);
    auto* am = mb.node("ArgMax", {"logits"}, {"cls"}, "argmax");
    add_attr(am, "axis", onnx::AttributeProto::INT)->set_i(1);
    const std::string json = dir / "r.json";
    CliResult r = run_cli({"check", mb.save(dir.path / "argmax.onnx"), "--device", "cpu", "--batch",
                           "4", "--json", json},
                          dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "forward only: output 'cls' is int64, so no loss can be attached to it"));
    const nlohmann::json j = read_json(json);
    expect_forward_report(j, "fp16");
    // The int64 output is listed and not compared (no abs/rel).
    REQUIRE(j["outputs"].size() == 1);
    CHECK(j["outputs"][0]["value"] == "cls");
    CHECK(!j["outputs"][0].contains("rel"));
  }

  TEST_CASE("parameters that reach the loss only through Floor: forward only, saying why") {
    // y = Floor(x · w): w is a float parameter, but Floor's gradient is zero, so no parameter
    // reaches the loss and there is no gradient to compare.
    TempDir dir;
    ModelBuilder mb(13);
    mb.input("x", kFloat, {"N", 6});
    mb.init_f32("w", {6}, std::vector<float>(6, 2.5f));
    mb.output("y", kFloat, {"N", 6});
    mb.node("Mul", {"x", "w"}, {"xw"}, "scale");
    mb.node("Floor", {"xw"}, {"y"}, "floor");
    const std::string json = dir / "r.json";
    CliResult r = run_cli({"check", mb.save(dir.path / "floor.onnx"), "--device", "cpu", "--loss",
                           "mse", "--json", json},
                          dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "forward only: no trainable parameters reach the loss"));
    CHECK(has(first_line(r.out), "forward only"));
    expect_forward_report(read_json(json), "fp32");
  }

  TEST_CASE(
      "--forward-only on the zoo's LeNet-5 and torchvision ResNet-18 passes in fp16 and bf16") {
    TempDir dir;
    const std::vector<std::string> models = {
        zoo_file(dir, "lenet5"),
        (oat_test::reference_models() / "resnet18" / "model.onnx").string()};
    for (const std::string& model : models)
      for (const std::string p : {"fp16", "bf16"}) {
        CAPTURE(model);
        CAPTURE(p);
        const std::string json = dir / "r.json";
        CliResult r = run_cli({"check", model, "--forward-only", "--precision", p, "--device",
                               "cpu", "--batch", "2", "--json", json},
                              dir);
        INFO(r.out, r.err);
        CHECK(r.status == 0);
        CHECK(has(first_line(r.out), "forward only (the inference model)"));
        CHECK(has(r.out, " 0 failing"));
        const nlohmann::json j = read_json(json);
        expect_forward_report(j, p);
        // The logits of the converted model stay close to the FP32 model's.
        CHECK(j["outputs"][0]["rel"].get<double>() < (p == "fp16" ? 2e-2 : 1e-1));
      }
  }

  TEST_CASE("fp32 forward only on the CPU is exact") {
    TempDir dir;
    const std::string json = dir / "r.json";
    CliResult r = run_cli({"check", zoo_file(dir, "lenet5"), "--forward-only", "--precision",
                           "fp32", "--device", "cpu", "--json", json},
                          dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    const nlohmann::json j = read_json(json);
    expect_forward_report(j, "fp32");
    for (const auto& n : j["nodes"])
      for (const char* k : {"out", "local"})
        if (!n[k].is_null()) CHECK_MESSAGE(n[k]["abs"].get<double>() == 0.0, n["node"], k);
    CHECK(j["outputs"][0]["abs"].get<double>() == 0.0);
  }

  TEST_CASE("a broken kernel fails forward only and is named") {
    TempDir dir;
    const std::string json = dir / "r.json";
    CliResult r = run_cli({"check", zoo_file(dir, "lenet5"), "--forward-only", "--device", "cpu",
                           "--inject-error", "conv2", "--json", json},
                          dir);
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    CHECK(has(r.out, "out of tolerance: node 'conv2' (Conv, fp16)"));
    CHECK(has(r.out, " 1 failing, worst node 'conv2'"));
    const nlohmann::json j = read_json(json);
    CHECK(j["summary"]["ok"] == false);
  }

  TEST_CASE("an FP16 overflow in the inference model fails, naming the node and the range") {
    // y = x [N, 64] · w [64, 4] with w = 1e4 everywhere and x all ones: 6.4e5 per element, which
    // FP32 holds and FP16 (max 65504) cannot. w itself fits FP16, so the MatMul is painted fp16.
    TempDir dir;
    ModelBuilder mb(13);
    mb.input("x", kFloat, {"N", 64});
    mb.init_f32("w", {64, 4}, std::vector<float>(256, 1e4f));
    mb.output("y", kFloat, {"N", 4});
    mb.node("MatMul", {"x", "w"}, {"y"}, "big");
    Tensor ones(DType::F32, {2, 64});
    for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
    onnx_loader::write_npy(ones, dir / "x.npy");
    const std::string model = mb.save(dir.path / "big.onnx");
    CliResult r = run_cli(
        {"check", model, "--forward-only", "--device", "cpu", "--input", "x=" + dir / "x.npy"},
        dir);
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    CHECK(has(r.out, "out of tolerance: node 'big' (MatMul, fp16): overflow"));
    CHECK(has(r.out, "beyond fp16's range"));
    // BF16's range holds it.
    r = run_cli({"check", model, "--forward-only", "--precision", "bf16", "--device", "cpu",
                 "--input", "x=" + dir / "x.npy"},
                dir);
    CHECK(r.status == 0);
  }

  TEST_CASE("NaN and inf in the data: checked forward only, refused for a training check") {
    // y = Where(IsNaN(x) or IsInf(x), 0, x) · w: an inference model that cleans its input. Its
    // data may hold NaN and inf (ONNX's IsNaN/IsInf cases); a training check may not.
    TempDir dir;
    ModelBuilder mb(13);
    mb.input("x", kFloat, {"N", 4});
    mb.init_f32("w", {4, 3}, std::vector<float>(12, 0.5f));
    mb.init_f32("zero", {}, {0.0f});
    mb.output("y", kFloat, {"N", 3});
    mb.node("IsNaN", {"x"}, {"nan"}, "isnan");
    mb.node("IsInf", {"x"}, {"inf"}, "isinf");
    mb.node("Or", {"nan", "inf"}, {"bad"}, "bad");
    mb.node("Where", {"bad", "zero", "x"}, {"clean"}, "clean");
    mb.node("MatMul", {"clean", "w"}, {"y"}, "mm");
    const std::string model = mb.save(dir.path / "clean.onnx");
    Tensor x(DType::F32, {3, 4});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.25f * static_cast<float>(i);
    x.data<float>()[1 * 4 + 2] = std::numeric_limits<float>::quiet_NaN();
    x.data<float>()[2 * 4 + 0] = -std::numeric_limits<float>::infinity();
    onnx_loader::write_npy(x, dir / "x.npy");
    const std::string json = dir / "r.json";
    CliResult r = run_cli({"check", model, "--forward-only", "--device", "cpu", "--input",
                           "x=" + dir / "x.npy", "--json", json},
                          dir);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    const nlohmann::json j = read_json(json);
    expect_forward_report(j, "fp16");
    CHECK(j["summary"]["ok"] == true);
    // The same model and data in a training check: refused before anything runs, naming the
    // sample and the way out.
    r = run_cli({"check", model, "--device", "cpu", "--input", "x=" + dir / "x.npy"}, dir);
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    CHECK(has(r.err, "inputs: value NaN at sample 1 (element 2 of it); the data must be finite"));
    CHECK(has(r.err, "--forward-only accepts NaN and inf"));
    // A model with nothing to train is forward only by itself, and takes the data as it is.
    ModelBuilder mb2(13);
    mb2.input("x", kFloat, {"N", 4});
    mb2.output("nan", onnx::TensorProto_DataType_BOOL, {"N", 4});
    mb2.node("IsNaN", {"x"}, {"nan"}, "isnan");
    r = run_cli({"check", mb2.save(dir.path / "isnan.onnx"), "--device", "cpu", "--input",
                 "x=" + dir / "x.npy"},
                dir);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    CHECK(has(r.out, "forward only: "));
  }

  TEST_CASE("training options with a forward-only check: a clear error") {
    TempDir dir;
    CliResult r = run_cli({"check", zoo_file(dir, "mlp"), "--forward-only", "--loss", "mse"}, dir);
    CHECK(r.status == 1);
    CHECK(has(r.err, "error: "));
    CHECK(has(r.err, "--forward-only"));
    r = run_cli({"check", parameterless_model(dir), "--loss-scale", "128"}, dir);
    CHECK(r.status == 1);
    CHECK(has(r.err, "no float initializer"));
  }
}
