#include "train/initializer_aliases.h"

#include <set>

namespace oat::train {

Graph untie_initializer_aliases(const Graph& g, std::vector<std::string>* untied) {
  Graph r = g;
  std::set<std::string> inputs, outputs;
  for (const auto& v : g.inputs) inputs.insert(v.name);
  for (const auto& v : g.outputs) outputs.insert(v.name);
  std::vector<Node> kept;
  kept.reserve(r.nodes.size());
  // Graph order is topological, so the source of a chain is already an initializer when its
  // next Identity is reached.
  for (Node& n : r.nodes) {
    const bool alias = n.op_type == "Identity" && (n.domain.empty() || n.domain == "ai.onnx") &&
                       n.inputs.size() == 1 && n.outputs.size() == 1 && !n.outputs[0].empty() &&
                       !inputs.count(n.inputs[0]) && !outputs.count(n.outputs[0]) &&
                       !r.initializers.count(n.outputs[0]);
    if (alias) {
      auto it = r.initializers.find(n.inputs[0]);
      if (it != r.initializers.end() && it->second.defined() && is_floating(it->second.dtype())) {
        r.initializers[n.outputs[0]] = it->second.clone();
        r.value_info.erase(n.outputs[0]);
        if (untied) untied->push_back(n.outputs[0]);
        continue;
      }
    }
    kept.push_back(std::move(n));
  }
  r.nodes = std::move(kept);
  return r;
}

}  // namespace oat::train
