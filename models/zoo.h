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

// The names `zoo_model` accepts.
std::vector<std::string> zoo_names();
// The model by name; throws Error listing the names for an unknown one.
Graph zoo_model(const std::string& name, uint64_t seed = 0);

}  // namespace oat::models
