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
// Linear(128, 10). Input "input" [batch, 1, 28, 28] float, output "logits" [batch, 10].
Graph mlp(uint64_t seed = 0);

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

// The names `zoo_model` accepts: mlp, lenet5, resnet18 (3×224×224, 1000 classes),
// resnet18-cifar (3×32×32, 10 classes).
std::vector<std::string> zoo_names();
// The model by name; throws Error listing the names for an unknown one.
Graph zoo_model(const std::string& name, uint64_t seed = 0);

}  // namespace oat::models
