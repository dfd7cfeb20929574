// remove_redundant_casts: folds Casts that change no value.
//
//   Cast(x: T -> T) = x                                   (a cast to the type x has)
//   Cast(Cast(x: A -> B): B -> C) = Cast(x: A -> C)       when A -> B is exact (widening_is_exact:
//                                                         f16/bf16 -> f32, bool/u8/i8 -> float)
// so f16 -> f32 -> f16 folds to nothing, while f32 -> f16 -> f32 (which rounds) is never touched.
// Graph outputs keep their names: a folded Cast that writes a graph output hands the name to the
// node producing its input when it can, and stays otherwise. Values read by subgraphs keep their
// names too. Casts left unread by a fold are removed.
#include <set>

#include "convert/precision.h"
#include "convert/value_types.h"

namespace oat::convert {

namespace {

// Replaces every read of `from` by `to` (node inputs only: callers keep graph outputs apart).
void replace_reads(Graph& g, const std::string& from, const std::string& to) {
  for (Node& n : g.nodes)
    for (auto& in : n.inputs)
      if (in == from) in = to;
}

// One round of folds; returns the number of Casts removed.
size_t fold_once(Graph& g) {
  const ValueTypes types = infer_value_types(g);
  auto type = [&](const std::string& v) {
    auto it = types.find(v);
    return it == types.end() ? DType::Undefined : it->second;
  };
  std::set<std::string> pinned;  // names that must survive: graph outputs, subgraph reads
  for (const auto& v : g.outputs) pinned.insert(v.name);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& v : outer_scope_reads(g.nodes[i])) pinned.insert(v);
    for (const auto& v : g.nodes[i].outputs)
      if (!v.empty()) producer[v] = i;
  }
  auto is_cast = [&](const Node& n) {
    return n.op_type == "Cast" && (n.domain.empty() || n.domain == "ai.onnx") &&
           n.inputs.size() == 1 && n.outputs.size() == 1;
  };

  std::set<size_t> removed;
  std::set<size_t> maybe_dead;  // Casts whose readers moved away
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& c = g.nodes[i];
    if (!is_cast(c) || c.inputs[0].empty()) continue;
    const DType to = cast_target(c);
    if (to == DType::Undefined) continue;
    // Skip over an exact widening Cast in front of this one.
    for (;;) {
      auto p = producer.find(c.inputs[0]);
      if (p == producer.end() || removed.count(p->second)) break;
      const Node& prev = g.nodes[p->second];
      if (!is_cast(prev)) break;
      const DType a = type(prev.inputs[0]), b = type(c.inputs[0]);
      if (a == DType::Undefined || !widening_is_exact(a, b)) break;
      maybe_dead.insert(p->second);
      c.inputs[0] = prev.inputs[0];
    }
    const std::string x = c.inputs[0], y = c.outputs[0];
    if (type(x) != to) continue;
    // c is an identity.
    if (!pinned.count(y)) {
      replace_reads(g, y, x);
      removed.insert(i);
      continue;
    }
    // y must keep its name: rename x to y when x is a node output nobody else needs by name.
    auto p = producer.find(x);
    if (p == producer.end() || pinned.count(x)) continue;
    for (auto& out : g.nodes[p->second].outputs)
      if (out == x) out = y;
    replace_reads(g, x, y);
    producer[y] = p->second;
    producer.erase(x);
    g.value_info.erase(x);
    removed.insert(i);
  }
  // Casts a fold left unread.
  std::set<std::string> read(pinned);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed.count(i))
      for (const auto& v : g.nodes[i].inputs) read.insert(v);
  for (size_t i : maybe_dead)
    if (!removed.count(i) && !read.count(g.nodes[i].outputs[0])) removed.insert(i);
  if (removed.empty()) return 0;
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (removed.count(i)) {
      if (g.nodes[i].outputs[0] != "" && !pinned.count(g.nodes[i].outputs[0]))
        g.value_info.erase(g.nodes[i].outputs[0]);
      continue;
    }
    kept.push_back(std::move(g.nodes[i]));
  }
  const size_t n = removed.size();
  g.nodes = std::move(kept);
  return n;
}

}  // namespace

size_t remove_redundant_casts(Graph& g) {
  size_t total = 0;
  while (const size_t n = fold_once(g)) total += n;
  return total;
}

}  // namespace oat::convert
