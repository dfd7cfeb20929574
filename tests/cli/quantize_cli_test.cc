// A QAT-style model (fake quantization before every Gemm: tests/qdq_model.h) through the real
// binary: `train` on the CPU in FP32 and in FP16 mixed precision (dynamic loss scaling) lowers
// the loss that `eval` reports, the trained file keeps its QuantizeLinear/DequantizeLinear nodes,
// its scales and zero points unchanged, and `inspect --precision fp16` paints Q/DQ FP32.
#include <doctest/doctest.h>

#include "cli/cli_runner.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "qdq_model.h"

using namespace oat;
using namespace oat_test;

namespace {

double loss_of(const CliResult& r) {
  const auto at = r.out.find("\nloss ");
  REQUIRE_MESSAGE(at != std::string::npos, r.out);
  return std::stod(r.out.substr(at + 6));
}

}  // namespace

TEST_CASE("cli: a QDQ (fake-quantized) MLP trains in fp32 and fp16; scales stay as they were") {
  TempDir dir;
  const std::string model = dir / "mlp_qdq.onnx";
  onnx_loader::save_graph(qdq_mlp(), model);
  const train::Dataset data = band_data(512, 3);
  onnx_loader::write_npy(data.inputs, dir / "x.npy");
  onnx_loader::write_npy(data.targets, dir / "y.npy");
  auto eval = [&](const std::string& m) {
    CliResult r = run_cli({"eval", m, "--val-x", dir / "x.npy", "--val-y", dir / "y.npy"}, dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    return loss_of(r);
  };
  const double untrained = eval(model);
  const onnx_loader::Model before = onnx_loader::load_model(model);
  for (const std::string precision : {"fp32", "fp16"}) {
    CAPTURE(precision);
    const std::string out = dir / ("trained_" + precision + ".onnx");
    CliResult t = run_cli({"train", model, "--train-x", dir / "x.npy", "--train-y", dir / "y.npy",
                           "--precision", precision, "--epochs", "3", "--batch", "32", "-o", out},
                          dir);
    INFO(t.out, t.err);
    REQUIRE(t.status == 0);
    const double trained = eval(out);
    MESSAGE(precision, ": eval loss ", untrained, " -> ", trained);
    CHECK(trained < 0.7 * untrained);
    const onnx_loader::Model after = onnx_loader::load_model(out);
    CHECK(after.graph.nodes.size() == before.graph.nodes.size());
    for (const auto& [name, t0] : before.graph.initializers) {
      if (name.find("scale") == std::string::npos && name.find("_zp") == std::string::npos) continue;
      CAPTURE(name);
      const Tensor& t1 = after.graph.initializers.at(name);
      CHECK(t1.dtype() == t0.dtype());
      CHECK(t1.to_float_vector() == t0.to_float_vector());
    }
    CHECK(after.graph.initializers.at("fc1.weight").to_float_vector() !=
          before.graph.initializers.at("fc1.weight").to_float_vector());
  }
  CliResult plan = run_cli({"inspect", model, "--precision", "fp16"}, dir);
  INFO(plan.out, plan.err);
  REQUIRE(plan.status == 0);
  CHECK(plan.out.find("fc1.act_q") != std::string::npos);
  CHECK(plan.out.find("deny list") != std::string::npos);
}
