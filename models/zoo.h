// The model zoo: ONNX graphs built in C++ with PyTorch's default initialisation, deterministic
// by seed, with a dynamic batch dimension ("batch").
//
// PyTorch's default for nn.Linear and nn.Conv2d is kaiming_uniform_(a=√5) for the weight, i.e.
// W ~ U(-1/√fan_in, 1/√fan_in), and b ~ U(-1/√fan_in, 1/√fan_in) for the bias.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::models {

// MLP for 1×28×28 images: Flatten → Linear(784, 256) → ReLU → Linear(256, 128) → ReLU →
// Linear(128, 10) (fc1, relu1, fc2, relu2, fc3); `hidden` sets the hidden widths (one Linear +
// ReLU each). Input "input" [batch, 1, 28, 28] float, output "logits" [batch, 10].
struct MlpOptions {
  std::vector<int64_t> hidden = {256, 128};
};
Graph mlp(uint64_t seed = 0, const MlpOptions& options = {});

// LeNet-5 for 1×28×28 images: Conv(1→6, 5×5, pad 2) → ReLU → MaxPool 2 → Conv(6→16, 5×5) →
// ReLU → MaxPool 2 → Flatten → Linear(400, 120) → ReLU → Linear(120, 84) → ReLU →
// Linear(84, 10). Input "input" [batch, 1, 28, 28], output "logits" [batch, 10].
Graph lenet5(uint64_t seed = 0);

// torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2], torchvision's stem: conv 7×7/2 → BN → ReLU →
// max-pool 3×3/2; GlobalAveragePool; fc), with torchvision's initialisation: convolutions
// kaiming_normal_(fan_out, relu) without bias, BatchNorm weight 1 / bias 0 / running mean 0 / var
// 1 (eps 1e-5, PyTorch momentum 0.1), fc nn.Linear's default. Parameter names are torchvision's
// state_dict keys (conv1.weight, layer2.0.downsample.1.running_var, fc.bias...).
// Input "input" [batch, in_channels, image_size, image_size], output "logits"
// [batch, num_classes]. With image_size 32 the last stage is 1×1, exactly what
// torchvision.models.resnet18(num_classes=10) computes on CIFAR-size images.
struct ResNetOptions {
  int64_t image_size = 224;
  int64_t in_channels = 3;
  int64_t num_classes = 1000;
};
Graph resnet18(uint64_t seed = 0, const ResNetOptions& options = {});

// A transformer encoder classifier of sequences of vectors, the PyTorch module
//   h = input_proj(x) + pos_embedding                      x [N, S, d_in], pos_embedding [S, d]
//   h = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, ff, dropout=0,
//           activation="relu", batch_first=True), layers)(h)      (post-norm, eps 1e-5)
//   logits = fc(h.mean(dim=1))
// written with MatMul, Gemm, Split, Transpose, Reshape, Softmax, LayerNormalization, ReduceMean
// (opset 17). Parameter names are that module's state_dict keys (input_proj.weight,
// pos_embedding, encoder.layers.0.self_attn.in_proj_weight, encoder.layers.1.norm2.bias, fc.bias...),
// with PyTorch's initialisation (MultiheadAttention: in_proj xavier_uniform_, biases 0; LayerNorm
// 1 / 0; Linear's default) and pos_embedding ~ N(0, 0.02²). The defaults read a 28×28 image as
// 28 rows of 28 pixels, so it trains on Fashion-MNIST as it is.
// Input "input" [batch, seq_len, d_in], output "logits" [batch, num_classes].
struct TransformerOptions {
  int64_t seq_len = 28;
  int64_t d_in = 28;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t ff = 512;
  int64_t num_classes = 10;
};
Graph transformer(uint64_t seed = 0, const TransformerOptions& options = {});

// An LSTM classifier of sequences, the PyTorch module
//   h, _ = nn.LSTM(d_in, hidden, num_layers=layers, batch_first=True)(x);  logits = fc(h[:, -1])
// as one ONNX LSTM node per layer (a composite op: run unrolled, runtime/composite/rnn.cc) fed
// from the module's own parameters, by their state_dict names (lstm.weight_ih_l0 [4·hidden, d_in],
// lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0, ..., fc.weight, fc.bias) in PyTorch's
// gate order i, f, g, o: the graph reorders them into ONNX's i, o, f, c (Split + Concat), so
// training updates PyTorch's layout and a state_dict loads by name. PyTorch's initialisation:
// U(−1/√hidden, 1/√hidden) for every LSTM parameter, nn.Linear's default for fc. The defaults
// read a 28×28 image as 28 steps of 28 values. Input "input" [batch, seq_len, d_in], output
// "logits" [batch, num_classes].
struct LstmOptions {
  int64_t seq_len = 28;
  int64_t d_in = 28;
  int64_t hidden = 128;
  int64_t layers = 2;
  int64_t num_classes = 10;
};
Graph lstm(uint64_t seed = 0, const LstmOptions& options = {});

// The names `zoo_model` accepts: mlp, lenet5, resnet18 (3×224×224, 1000 classes),
// resnet18-cifar (3×32×32, 10 classes), transformer (28×28 as 28 tokens, 10 classes), lstm
// (28×28 as 28 steps, 10 classes), and two GEMM-heavy models for benchmarks (where FP16 tensor
// cores pay): mlp-wide (hidden 4096, 4096: 20M parameters) and transformer-base (BERT-base
// widths: 128 tokens of 768, d_model 768, 12 heads, ff 3072, 2 layers: 14M parameters).
std::vector<std::string> zoo_names();
// The model by name; throws Error listing the names for an unknown one.
Graph zoo_model(const std::string& name, uint64_t seed = 0);

}  // namespace oat::models
