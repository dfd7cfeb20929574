// `check MODEL`: the mixed-precision path against the FP32 CPU reference, run through the real
// binary. A correct mixed path passes (exit 0) on the zoo in fp16 and bf16 and on torchvision
// ResNet-18; a deliberately broken kernel (the hidden --inject-error hook multiplies one node's
// outputs by 1.25 on the checked path) fails with exit 1 naming exactly that node; bad input
// gives one clear error line. Without a CUDA device (or with --device cpu) the first line says
// the comparison is CPU-vs-CPU.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/cuda/device.h"
#include "reference_models.h"

using namespace oat;
using namespace oat_test;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string zoo_file(const TempDir& dir, const std::string& name) {
  const std::string path = dir / (name + ".onnx");
  onnx_loader::save_graph(models::zoo_model(name, 1), path);
  return path;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), path);
  return nlohmann::json::parse(f);
}

// The rows of the JSON report that failed, by node name.
std::vector<std::string> failing(const nlohmann::json& j) {
  std::vector<std::string> r;
  for (const auto& n : j["nodes"])
    if (!n["ok"].get<bool>()) r.push_back(n["node"].get<std::string>());
  return r;
}

// Every row was checked locally, and the mixed path really ran in low precision somewhere.
void expect_sane_report(const nlohmann::json& j, const std::string& precision) {
  CHECK(j["summary"]["ok"].get<bool>());
  CHECK(j["summary"]["failing"].get<int>() == 0);
  size_t low = 0, with_grad = 0;
  for (const auto& n : j["nodes"]) {
    // Every node with a compared float output has its local error (shape arithmetic on int64,
    // as in torch's exports of recurrent models, has neither).
    if (!n["out"].is_null()) CHECK_MESSAGE(!n["local"].is_null(), n["node"]);
    low += n["precision"] == precision;
    with_grad += !n["grad"].is_null();
    if (n["precision"] == precision && !n["out"].is_null())
      // Rounding to 16 bits changes the outputs of a low-precision node a little, never hugely.
      CHECK_MESSAGE(n["out"]["rel"].get<double>() < 0.25, n["node"]);
  }
  CHECK(low > 0);
  CHECK(with_grad > 0);
}

}  // namespace

TEST_SUITE("cli check") {
  TEST_CASE("zoo LeNet-5 and MLP pass in fp16 and bf16 on the CPU path, first line CPU-vs-CPU") {
    TempDir dir;
    for (const std::string model : {"lenet5", "mlp"})
      for (const std::string p : {"fp16", "bf16"}) {
        CAPTURE(model);
        CAPTURE(p);
        const std::string json = dir / (model + p + ".json");
        CliResult r = run_cli({"check", zoo_file(dir, model), "--precision", p, "--device", "cpu",
                               "--batch", "8", "--json", json},
                              dir);
        INFO(r.out, r.err);
        CHECK(r.status == 0);
        CHECK(has(first_line(r.out), "CPU-vs-CPU"));
        CHECK(has(first_line(r.out), "--device cpu"));
        CHECK(has(r.out, "summary: "));
        CHECK(has(r.out, " 0 failing"));
        nlohmann::json j = read_json(json);
        expect_sane_report(j, p);
        CHECK(j["loss_scale"].get<double>() == (p == "fp16" ? 65536.0 : 1.0));
      }
  }

  TEST_CASE("the default device: CUDA when one answers, else CPU-vs-CPU saying why") {
    TempDir dir;
    CliResult r = run_cli({"check", zoo_file(dir, "mlp"), "--batch", "4"}, dir);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    if (cuda::device_count() > 0) {
      CHECK(has(first_line(r.out), "CUDA-vs-CPU"));
    } else {
      CHECK(has(first_line(r.out), "CPU-vs-CPU"));
      CHECK(has(first_line(r.out), "no CUDA device"));
    }
  }

  TEST_CASE("fp32 CPU-vs-CPU is exact") {
    TempDir dir;
    const std::string json = dir / "r.json";
    CliResult r = run_cli({"check", zoo_file(dir, "lenet5"), "--precision", "fp32", "--device",
                           "cpu", "--json", json},
                          dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    for (const auto& n : read_json(json)["nodes"]) {
      for (const char* k : {"out", "grad", "local"})
        if (!n[k].is_null()) CHECK_MESSAGE(n[k]["abs"].get<double>() == 0.0, n["node"], k);
    }
  }

  TEST_CASE("a broken forward kernel fails with exit 1 and names exactly that node") {
    TempDir dir;
    for (const std::string p : {"fp16", "bf16"}) {
      CAPTURE(p);
      const std::string json = dir / "broken.json";
      CliResult r = run_cli({"check", zoo_file(dir, "lenet5"), "--precision", p, "--device", "cpu",
                             "--inject-error", "conv2", "--json", json},
                            dir);
      INFO(r.out, r.err);
      CHECK(r.status == 1);
      CHECK(has(r.out, "out of tolerance: node 'conv2' (Conv, " + p + ")"));
      CHECK(has(r.out, " 1 failing, worst node 'conv2'"));
      nlohmann::json j = read_json(json);
      CHECK(failing(j) == std::vector<std::string>{"conv2"});
      CHECK(j["summary"]["ok"] == false);
      // The error propagates downstream end to end, but every later node is locally correct.
      for (const auto& n : j["nodes"])
        if (n["node"] == "conv2") CHECK(n["local"]["rel"].get<double>() > 0.2);
    }
  }

  TEST_CASE("a broken gradient kernel fails and is reported on its forward node's row") {
    TempDir dir;
    // fc2's gradient nodes are named after it ("fc2_grad/..."); break the first of them.
    const std::string model = zoo_file(dir, "mlp");
    const std::string json = dir / "g.json";
    CliResult ok = run_cli({"check", model, "--device", "cpu", "--json", json}, dir);
    REQUIRE(ok.status == 0);
    CliResult r = run_cli({"check", model, "--device", "cpu", "--inject-error", "fc2_grad/GemmGrad",
                           "--json", json},
                          dir);
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    nlohmann::json j = read_json(json);
    CHECK(failing(j) == std::vector<std::string>{"fc2"});
    for (const auto& n : j["nodes"])
      if (n["node"] == "fc2") {
        CHECK(n["out"]["rel"].get<double>() < 1e-2);  // the forward output is untouched
        CHECK(n["local"]["rel"].get<double>() > 0.2);
        CHECK(n["local"]["value"].get<std::string>().rfind("fc2_grad/", 0) == 0);
      }
  }

  TEST_CASE("the zoo's ResNet-18 (CIFAR, BatchNormalization in training mode) passes in fp16") {
    TempDir dir;
    CliResult r = run_cli({"check", zoo_file(dir, "resnet18-cifar"), "--device", "cpu", "--batch", "2"},
                          dir);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    CHECK(has(r.out, " 0 failing"));
  }

  TEST_CASE("torchvision ResNet-18 exported by torch.onnx passes in fp16 and bf16") {
    TempDir dir;
    const std::string model = (oat_test::reference_models() / "resnet18" / "model.onnx").string();
    for (const std::string p : {"fp16", "bf16"}) {
      CAPTURE(p);
      const std::string json = dir / "resnet.json";
      CliResult r = run_cli({"check", model, "--precision", p, "--device", "cpu", "--batch", "2",
                             "--json", json},
                            dir);
      INFO(r.out, r.err);
      CHECK(r.status == 0);
      expect_sane_report(read_json(json), p);
    }
  }

  TEST_CASE("composite ops in torch exports (LSTM, GRU, Einsum) pass through their expansions") {
    // Autodiff, painting and the per-node comparison all run on the expansion; the einsum model
    // also divides by x.shape[1] (Shape -> Gather -> Cast), a path that carries no gradient.
    TempDir dir;
    for (const auto& [name, p] : std::vector<std::pair<std::string, std::string>>{
             {"lstm_bidirectional_2layer", "fp16"}, {"gru_opset14", "bf16"}, {"einsum_mixer", "fp16"}}) {
      CAPTURE(name);
      const std::string model = (oat_test::reference_models() / name / "model.onnx").string();
      const std::string json = dir / (name + ".json");
      CliResult r = run_cli({"check", model, "--precision", p, "--device", "cpu", "--batch", "2",
                             "--json", json},
                            dir);
      INFO(r.out, r.err);
      CHECK(r.status == 0);
      CHECK(has(r.out, " 0 failing"));
      expect_sane_report(read_json(json), p);
    }
  }

  TEST_CASE("--inject-error naming a composite op perturbs the nodes that write its outputs") {
    TempDir dir;
    const std::string model =
        (oat_test::reference_models() / "gru_opset14" / "model.onnx").string();
    CliResult r = run_cli({"check", model, "--device", "cpu", "--batch", "2", "--inject-error",
                           "/rnn/GRU"},
                          dir);
    INFO(r.out, r.err);
    CHECK(r.status == 1);
    // Y_h is the last step's state and Y the steps' Concat: the two expansion nodes that write
    // the GRU's outputs, and nothing else, are out of tolerance.
    CHECK(has(r.out, " 2 failing"));
    CHECK(has(r.out, "/rnn/GRU/d0/Y_steps"));
  }

  TEST_CASE("bad input: clear one-line errors, no JSON written") {
    TempDir dir;
    const std::string json = dir / "r.json";
    CliResult missing = run_cli({"check", dir / "nope.onnx", "--json", json}, dir);
    CHECK(missing.status == 1);
    CHECK(has(missing.err, "error: "));
    CHECK(has(missing.err, "nope.onnx"));
    CHECK(!fs::exists(json));

    CliResult prec = run_cli({"check", zoo_file(dir, "mlp"), "--precision", "fp8"}, dir);
    CHECK(prec.status == 2);
    CHECK(has(prec.err, "error: "));
    CHECK(has(prec.err, "fp8"));

    CliResult node = run_cli({"check", zoo_file(dir, "mlp"), "--device", "cpu", "--inject-error",
                              "no_such_node"},
                             dir);
    CHECK(node.status == 1);
    CHECK(has(node.err, "no_such_node"));

    CliResult data = run_cli({"check", zoo_file(dir, "mlp"), "--data", dir / "missing_dir"}, dir);
    CHECK(data.status == 1);
    CHECK(has(data.err, "missing_dir"));
    if (cuda::device_count() == 0) {
      CliResult dev = run_cli({"check", zoo_file(dir, "mlp"), "--device", "cuda"}, dir);
      CHECK(dev.status == 1);
      CHECK(has(dev.err, "no CUDA device"));
    }
  }

  TEST_CASE("the first batch of Fashion-MNIST") {
    if (!fs::is_directory("/usr/share/datasets/fashion-mnist")) {
      FAIL("Debian's dataset-fashion-mnist is not installed (scripts/setup.sh installs it)");
    }
    TempDir dir;
    CliResult r = run_cli({"check", zoo_file(dir, "lenet5"), "--device", "cpu", "--data",
                           "fashion-mnist", "--batch", "16"},
                          dir);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    CHECK(has(r.out, "first batch of fashion-mnist"));
  }
}

TEST_CASE("an output with one unit on its class axis: check uses mse, train's error suggests it") {
  // A one-channel image-to-image model (a denoiser): y [N, 1, 6, 6] = Conv3x3(x [N, 1, 6, 6]).
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"N", 1, 6, 6});
  std::vector<float> w(9);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i) - 0.2f;
  mb.init_f32("w", {1, 1, 3, 3}, w);
  mb.output("y", kFloat, {"N", 1, 6, 6});
  auto* n = mb.node("Conv", {"x", "w"}, {"y"}, "conv");
  auto* p = add_attr(n, "pads", onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) p->add_ints(1);
  const std::string model = mb.save(dir.path / "denoise.onnx");
  // Before: cross-entropy over one class, loss 0 and every gradient 0, "0 failing".
  CliResult r = run_cli({"check", model, "--batch", "2"}, dir);
  INFO(r.out, r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("loss mse: output 'y' [N, 1, 6, 6] has one unit on its class axis 1") !=
        std::string::npos);
  CHECK(r.out.find("cross-entropy over") == std::string::npos);
  // --loss still decides.
  r = run_cli({"check", model, "--batch", "2", "--loss", "l1"}, dir);
  CHECK(r.status == 0);
  CHECK(r.out.find("loss mse") == std::string::npos);
  // train: float targets of the output's shape with the default cross-entropy name the way out.
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {4, 1, 6, 6}), dir / "x.npy");
  r = run_cli({"train", model, "--train-x", dir / "x.npy", "--train-y", dir / "x.npy", "--steps",
               "1", "-o", dir / "t.onnx"},
              dir);
  CHECK(r.status == 1);
  CHECK(r.err.find("targets of the output's own shape are a regression or a mask: --loss mse") !=
        std::string::npos);
}
