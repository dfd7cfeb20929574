#include "runtime/transpose_fold.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/subgraph.h"

namespace oat {

namespace {

bool is_transpose(const Node& n) {
  return n.op_type == "Transpose" && (n.domain.empty() || n.domain == "ai.onnx") &&
         n.inputs.size() == 1 && n.outputs.size() == 1 && !n.inputs[0].empty() &&
         n.attrs.count("perm") && !n.attr_ints("perm").empty();
}

// The pair (inner, outer) node indices to fold next, or {-1, -1}.
struct Pair {
  long inner = -1, outer = -1;
};

Pair find_pair(const Graph& g, const std::set<std::string>& outputs) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs) producer[o] = i;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& outer = g.nodes[i];
    if (!is_transpose(outer) || outputs.count(outer.outputs[0])) continue;
    auto p = producer.find(outer.inputs[0]);
    if (p == producer.end() || !is_transpose(g.nodes[p->second])) continue;
    if (g.nodes[p->second].attr_ints("perm").size() != outer.attr_ints("perm").size()) continue;
    return {static_cast<long>(p->second), static_cast<long>(i)};
  }
  return {};
}

}  // namespace

// Values a caller or a subgraph names: graph outputs and what If/Loop/Scan bodies read from the
// outer scope (runtime/subgraph.h). Their producers stay.
std::set<std::string> kept_values(const Graph& g) {
  std::set<std::string> kept;
  for (const auto& v : g.outputs) kept.insert(v.name);
  for (const Node& n : g.nodes)
    if (node_has_subgraph(n))
      for (const auto& v : implicit_inputs(n)) kept.insert(v);
  return kept;
}

bool has_transpose_pairs(const Graph& g) { return find_pair(g, kept_values(g)).outer >= 0; }

size_t fold_transpose_pairs(Graph& g) {
  const std::set<std::string> outputs = kept_values(g);
  size_t removed = 0;
  for (Pair pr = find_pair(g, outputs); pr.outer >= 0; pr = find_pair(g, outputs)) {
    const Node inner = g.nodes[static_cast<size_t>(pr.inner)];
    Node& outer = g.nodes[static_cast<size_t>(pr.outer)];
    const std::vector<int64_t> p = inner.attr_ints("perm"), q = outer.attr_ints("perm");
    std::vector<int64_t> r(q.size());
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      r[i] = p[static_cast<size_t>(q[i])];
      identity = identity && r[i] == static_cast<int64_t>(i);
    }
    const std::string x = inner.inputs[0], y = outer.outputs[0];
    std::vector<size_t> drop;
    if (identity) {
      for (Node& n : g.nodes)
        for (auto& in : n.inputs)
          if (in == y) in = x;
      drop.push_back(static_cast<size_t>(pr.outer));
      g.value_info.erase(y);
    } else {
      outer.inputs[0] = x;
      outer.attrs["perm"] = ints_attribute(r);
    }
    bool inner_read = outputs.count(inner.outputs[0]) > 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (identity && i == static_cast<size_t>(pr.outer)) continue;
      for (const auto& in : g.nodes[i].inputs) inner_read = inner_read || in == inner.outputs[0];
    }
    if (!inner_read) {
      drop.push_back(static_cast<size_t>(pr.inner));
      g.value_info.erase(inner.outputs[0]);
    }
    std::sort(drop.rbegin(), drop.rend());
    for (size_t i : drop) g.nodes.erase(g.nodes.begin() + static_cast<long>(i));
    removed += drop.size();
    // Each round removes a node or moves the outer node's input one Transpose back along a
    // chain, so the loop ends.
  }
  return removed;
}

}  // namespace oat
