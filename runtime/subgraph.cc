#include "runtime/subgraph.h"

#include <set>
#include <unordered_set>

#include "runtime/error.h"

namespace oat {

namespace {

std::vector<const Graph*> subgraphs_of(const Node& n) {
  std::vector<const Graph*> r;
  for (const auto& [k, a] : n.attrs) {  // std::map: attribute-name order
    if (a.kind == Attribute::Kind::Graph && a.g) r.push_back(a.g.get());
    if (a.kind == Attribute::Kind::Graphs)
      for (const auto& g : a.graphs)
        if (g) r.push_back(g.get());
  }
  return r;
}

// Appends `name` to `out` once (the set remembers what is there).
void add_once(const std::string& name, std::vector<std::string>& out,
              std::unordered_set<std::string>& seen) {
  if (!name.empty() && seen.insert(name).second) out.push_back(name);
}

}  // namespace

bool node_has_subgraph(const Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return true;
  return false;
}

bool graph_has_subgraphs(const Graph& g) {
  for (const Node& n : g.nodes)
    if (node_has_subgraph(n)) return true;
  return false;
}

std::vector<std::string> subgraph_free_names(const Graph& g) {
  std::unordered_set<std::string> defined;
  for (const auto& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs) defined.insert(o);
  std::vector<std::string> free;
  std::unordered_set<std::string> seen;
  auto read = [&](const std::string& name) {
    if (!defined.count(name)) add_once(name, free, seen);
  };
  for (const Node& n : g.nodes) {
    for (const auto& in : n.inputs) read(in);
    for (const Graph* sg : subgraphs_of(n))
      for (const auto& name : subgraph_free_names(*sg)) read(name);
  }
  for (const auto& out : g.outputs) read(out.name);
  return free;
}

std::vector<std::string> implicit_inputs(const Node& n) {
  std::vector<std::string> r;
  std::unordered_set<std::string> seen;
  for (const Graph* sg : subgraphs_of(n))
    for (const auto& name : subgraph_free_names(*sg)) add_once(name, r, seen);
  return r;
}

size_t num_implicit_inputs(const Node& n) {
  const Attribute* a = n.attr(kImplicitInputsAttr);
  if (!a) return 0;
  if (a->i < 0 || static_cast<size_t>(a->i) > n.inputs.size())
    throw Error(cat(n.describe(), ": internal attribute ", kImplicitInputsAttr, " = ", a->i,
                    " does not fit its ", n.inputs.size(), " inputs"));
  return static_cast<size_t>(a->i);
}

bool add_implicit_inputs(Graph& g) {
  bool changed = false;
  for (Node& n : g.nodes) {
    if (!node_has_subgraph(n) || n.has_attr(kImplicitInputsAttr)) continue;
    std::vector<std::string> extra = implicit_inputs(n);
    if (extra.empty()) continue;
    n.inputs.insert(n.inputs.end(), extra.begin(), extra.end());
    n.attrs[kImplicitInputsAttr] = int_attribute(static_cast<int64_t>(extra.size()));
    changed = true;
  }
  if (changed) {
    std::vector<std::string> known;
    for (const auto& v : g.inputs) known.push_back(v.name);
    for (const auto& [name, t] : g.initializers) known.push_back(name);
    topological_sort(g.nodes, known);
  }
  return changed;
}

Graph subgraph_for_executor(const Graph& body, const std::vector<std::string>& outer) {
  Graph g = body;
  for (auto& v : g.inputs) v.shape.reset();
  std::set<std::string> declared;
  for (const auto& v : g.inputs) declared.insert(v.name);
  for (const auto& name : outer) {
    if (declared.count(name)) continue;  // cannot happen: a free name is not an input
    ValueInfo v;
    v.name = name;
    g.inputs.push_back(std::move(v));
  }
  return g;
}

}  // namespace oat
