// Gelu's and GeluGrad's `approximate` attribute, read the same way by the CPU and CUDA kernels:
// "none" (the default: x·Φ(x) with erf) or "tanh" (½x(1 + tanh(√(2/π)(x + 0.044715x³)))).
// Any other value is an error naming the node, on both backends.
#pragma once

#include <string>

#include "runtime/error.h"
#include "runtime/graph.h"

namespace oat {

inline bool gelu_uses_tanh(const Node& n) {
  const std::string mode = n.attr_string("approximate", "none");
  if (mode == "tanh") return true;
  if (mode != "none")
    throw Error(cat(n.describe(), ": approximate must be \"none\" or \"tanh\", got \"", mode, "\""));
  return false;
}

}  // namespace oat
