// Real models against ONNX Runtime: torchvision CNNs (ResNet-18, MobileNetV2, ShuffleNetV2,
// SqueezeNet 1.1, EfficientNet-B0 at 64x64; small ViT, ConvNeXt, DenseNet and Swin), an
// nn.TransformerEncoder and nn.LSTM / GRU / RNN
// classifiers (ONNX LSTM/GRU/RNN nodes, run unrolled as composite ops), a torch.jit.script-ed
// module with Python loops and an if (ONNX Loop and If), exported by torch.onnx
// (opsets 13, 14, 17 and 18) and run by our CPU FP32 executor on the same batch ONNX Runtime ran.
//
// scripts/make_reference_models.py writes the cases once into <build>/model_refs (it is skipped
// when that folder is up to date with the script). It needs PyTorch + torchvision and
// onnxruntime + onnx + numpy; without them these tests FAIL rather than skip, because CI
// installs them (scripts/setup.sh).
//
// Agreement: |ours - ort| <= 1e-4 * max(1, max|ort|) + 1e-3 * |ort| element-wise. Both sides are
// float32 with different summation orders (Eigen vs MLAS, im2col vs direct, fused vs unfused),
// so rounding differences grow with the magnitude of the activations, hence the absolute term
// scaled by the output's range. Each case prints its max absolute error and that error
// relative to max|ort|.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "runtime/threads.h"
#include "reference_models.h"

namespace fs = std::filesystem;
using namespace oat;

namespace {

constexpr double kAtol = 1e-4;  // times max(1, max|ort|)
constexpr double kRtol = 1e-3;

struct Agreement {
  double max_abs = 0;  // max |ours - ort|
  double max_ref = 0;  // max |ort|
  double scale = 1;    // max(1, max|ort|)
  int64_t worst = -1;  // element with the largest error / tolerance ratio
  int64_t violations = 0;
};

Agreement agree(const std::vector<float>& got, const std::vector<float>& want) {
  Agreement a;
  for (float w : want) a.max_ref = std::max(a.max_ref, static_cast<double>(std::abs(w)));
  a.scale = std::max(1.0, a.max_ref);
  double worst_ratio = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    const double tol = kAtol * a.scale + kRtol * std::abs(want[i]);
    a.max_abs = std::max(a.max_abs, std::isnan(d) ? INFINITY : d);
    if (!(d <= tol)) ++a.violations;
    const double ratio = std::isnan(d) ? INFINITY : d / tol;
    if (ratio > worst_ratio) worst_ratio = ratio, a.worst = static_cast<int64_t>(i);
  }
  return a;
}

void check_against_ort(const std::string& name) {
  const fs::path dir = oat_test::reference_models() / name;
  REQUIRE_MESSAGE(fs::exists(dir / "model.onnx"), dir.string(), " was not generated");

  onnx_loader::Model model = onnx_loader::load_model((dir / "model.onnx").string());
  for (const std::string& w : model.warnings) MESSAGE(name, ": load warning: ", w);
  const auto unsupported = unsupported_nodes(model.graph, Device::CPU, default_registry());
  if (!unsupported.empty()) {
    std::ostringstream os;
    for (const auto& [node, why] : unsupported) os << "\n  " << node << ": " << why;
    FAIL(name, ": ", unsupported.size(), " node(s) this build cannot run:", os.str());
  }
  REQUIRE(model.graph.inputs.size() == 1);
  REQUIRE(model.graph.outputs.size() == 1);

  const fs::path data = dir / "test_data_set_0";
  Tensor input = onnx_loader::read_tensor_pb((data / "input_0.pb").string()).tensor;
  Tensor want = onnx_loader::read_tensor_pb((data / "output_0.pb").string()).tensor;

  set_num_threads(0);
  Executor exec(model.graph);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = exec.run({{model.graph.inputs[0].name, input}});
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(outputs.size() == 1);
  const Tensor& got = outputs[0];
  REQUIRE_MESSAGE(got.dtype() == DType::F32, name, ": output dtype ", dtype_name(got.dtype()));
  REQUIRE_MESSAGE(got.shape() == want.shape(), name, ": output shape ", shape_str(got.shape()),
                  " != ONNX Runtime's ", shape_str(want.shape()));

  const std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  const Agreement a = agree(g, w);
  std::cout << std::left << std::setw(30) << name << " input " << std::setw(16)
            << shape_str(input.shape()) << " max_abs " << std::scientific << std::setprecision(2)
            << a.max_abs << "  max_abs/max|ort| " << a.max_abs / a.max_ref << "  max|ort| "
            << a.max_ref << std::defaultfloat << "  " << std::fixed << std::setprecision(1) << ms
            << " ms (one run)" << std::defaultfloat << std::endl;
  CHECK_MESSAGE(a.violations == 0, name, ": ", a.violations, " of ", w.size(),
                " elements differ from ONNX Runtime beyond tolerance; worst element ", a.worst,
                ": ours ", g[a.worst], " vs ort ", w[a.worst], " (max_abs ", a.max_abs, ")");
  // Guards against a degenerate reference (all zeros would hide most bugs).
  CHECK_MESSAGE(a.max_ref > 1e-3, name, ": reference output is all ~0");
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("resnet18 (opset 13, fixed batch 1 file, batch 3) agrees with ONNX Runtime") {
    check_against_ort("resnet18");
  }
  TEST_CASE("mobilenet_v2 (BatchNormalization kept) agrees with ONNX Runtime") {
    check_against_ort("mobilenet_v2");
  }
  TEST_CASE("shufflenet_v2_x0_5 (dynamic batch) agrees with ONNX Runtime") {
    check_against_ort("shufflenet_v2_x0_5");
  }
  TEST_CASE("squeezenet1_1 agrees with ONNX Runtime") { check_against_ort("squeezenet1_1"); }
  TEST_CASE("efficientnet_b0 (BatchNormalization kept) agrees with ONNX Runtime") {
    check_against_ort("efficientnet_b0");
  }
  TEST_CASE("vit_tiny_32 (torchvision VisionTransformer: class token, MultiheadAttention) agrees with ONNX Runtime") {
    check_against_ort("vit_tiny_32");
  }
  TEST_CASE("convnext_tiny_64 (torchvision ConvNeXt: permute + LayerNorm, layer scale) agrees with ONNX Runtime") {
    check_against_ort("convnext_tiny_64");
  }
  TEST_CASE("densenet_small_64 (torchvision DenseNet: BatchNormalization before Conv) agrees with ONNX Runtime") {
    check_against_ort("densenet_small_64");
  }
  TEST_CASE("transformer_encoder (opset 13) agrees with ONNX Runtime") {
    check_against_ort("transformer_encoder");
  }
  TEST_CASE("transformer_encoder_opset17 (LayerNormalization) agrees with ONNX Runtime") {
    check_against_ort("transformer_encoder_opset17");
  }
  TEST_CASE("transformer_encoder_opset18 (Reduce* axes as inputs) agrees with ONNX Runtime") {
    check_against_ort("transformer_encoder_opset18");
  }
  TEST_CASE("lstm_bidirectional_2layer (nn.LSTM, two ONNX LSTM nodes) agrees with ONNX Runtime") {
    check_against_ort("lstm_bidirectional_2layer");
  }
  TEST_CASE("gru_opset14 (nn.GRU: linear_before_reset = 1) agrees with ONNX Runtime") {
    check_against_ort("gru_opset14");
  }
  TEST_CASE("rnn_relu_bidirectional_2layer (nn.RNN, Relu activations) agrees with ONNX Runtime") {
    check_against_ort("rnn_relu_bidirectional_2layer");
  }
  TEST_CASE("einsum_mixer (torch.einsum: four Einsum nodes) agrees with ONNX Runtime") {
    check_against_ort("einsum_mixer");
  }
  TEST_CASE("script_loop_if (torch.jit.script: Loop with a data-dependent trip count, a while Loop, If) agrees with ONNX Runtime") {
    check_against_ort("script_loop_if");
  }
  TEST_CASE("swin_small_64 (Swin: attention mask by ScatterND on folded shapes) agrees with ONNX Runtime") {
    check_against_ort("swin_small_64");
  }
  TEST_CASE("resnet18_opset18 agrees with ONNX Runtime") { check_against_ort("resnet18_opset18"); }
  TEST_CASE("shufflenet_v2_x0_5_opset18 (ReduceMean axes input) agrees with ONNX Runtime") {
    check_against_ort("shufflenet_v2_x0_5_opset18");
  }
}
