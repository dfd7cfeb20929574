#include "train/initializer_aliases.h"

#include <map>
#include <set>
#include <utility>

#include "onnx_loader/model.h"

namespace oat::train {

namespace {

bool is_onnx(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

// More than one element, all equal (bitwise after widening to double; NaN never equals).
bool constant_fill(const Tensor& t) {
  if (t.numel() < 2) return false;
  const double first = t.item_as_double(0);
  for (int64_t i = 1; i < t.numel(); ++i)
    if (t.item_as_double(i) != first) return false;
  return true;
}

// Rule 2 of the header: per float initializer, its reads (node index, input index) in graph
// order; a read that needs its own copy is re-pointed at one.
void untie_merged_reads(Graph& r, std::vector<std::string>* untied) {
  std::set<std::string> protect;  // graph inputs and outputs: a caller sees these names
  for (const auto& v : r.inputs) protect.insert(v.name);
  for (const auto& v : r.outputs) protect.insert(v.name);
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> reads;
  std::set<std::string> stats;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& n = r.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& v = n.inputs[k];
      auto it = r.initializers.find(v);
      if (v.empty() || protect.count(v) || it == r.initializers.end() || !it->second.defined() ||
          !is_floating(it->second.dtype()))
        continue;
      reads[v].emplace_back(i, k);
      if (is_onnx(n) && n.op_type == "BatchNormalization" && (k == 3 || k == 4)) stats.insert(v);
    }
  }
  std::set<std::string> names;  // every value name, to keep new ones unique
  for (const auto& [v, t] : r.initializers) names.insert(v);
  for (const Node& n : r.nodes)
    for (const auto& o : n.outputs) names.insert(o);
  for (const auto& [v, list] : reads) {
    if (list.size() < 2) continue;
    const Tensor& t = r.initializers.at(v);
    if (!stats.count(v) && !(r.producer != "pytorch" && constant_fill(t))) continue;
    for (size_t j = 1; j < list.size(); ++j) {
      Node& n = r.nodes[list[j].first];
      const size_t k = list[j].second;
      if (n.name.empty()) continue;  // no stable name to write it back under
      const std::string copy = onnx_loader::untied_read_name(v, n.name, k);
      if (!names.insert(copy).second) continue;
      r.initializers[copy] = t.clone();
      if (auto vi = r.value_info.find(v); vi != r.value_info.end()) {
        ValueInfo c = vi->second;
        c.name = copy;
        r.value_info[copy] = c;
      }
      n.inputs[k] = copy;
      if (untied) untied->push_back(copy);
    }
  }
}

}  // namespace

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
    const bool alias = n.op_type == "Identity" && is_onnx(n) && n.inputs.size() == 1 &&
                       n.outputs.size() == 1 && !n.outputs[0].empty() &&
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
  untie_merged_reads(r, untied);
  return r;
}

}  // namespace oat::train
