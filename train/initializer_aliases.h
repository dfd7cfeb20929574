// Untying the parameters that an exporter merged because their values were equal.
//
// torch.onnx (in its default eval mode) writes one initializer for parameters that merely START
// with equal values — the layers of an nn.TransformerEncoder are deep copies of one layer, every
// zero bias and every LayerNorm weight of ones is equal to the others, a BatchNorm's zero
// running_mean equals its zero bias — and turns each other one into an Identity node of it
// (`b.weight = Identity(a.weight)`). PyTorch trains them as separate parameters: a module used
// twice (true sharing) is exported as one initializer read twice, never as an Identity. Training
// the merged file as it is would tie them (one gradient sum, one value), and a BatchNorm whose
// running statistic is such an Identity could not update it.
//
// So training unties them: each Identity whose input is a float initializer (not a graph input,
// which a caller may override) and whose output is not a graph output becomes an initializer of
// its own holding a copy of the value; chains (Identity of such an Identity) untie too.
// onnx_loader::save_model writes the trained values back the same way: the Identity node is
// replaced by an initializer of that name (onnx_loader/model.h).
#pragma once

#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::train {

// `g` with its initializer aliases untied; `untied` (optional) receives the new initializers'
// names in graph order.
Graph untie_initializer_aliases(const Graph& g, std::vector<std::string>* untied = nullptr);

}  // namespace oat::train
