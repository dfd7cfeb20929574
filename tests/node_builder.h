// A graph node for tests that build Graphs by hand: name, op (its OpId looked up), inputs, one
// output, attributes, opset. Shared by the suites that used to define their own.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph.h"
#include "runtime/ops.h"

namespace oat_test {

inline oat::Node make_node(const std::string& name, const std::string& op,
                           std::vector<std::string> in, const std::string& out,
                           std::map<std::string, oat::Attribute> attrs = {}, int64_t opset = 13) {
  oat::Node n;
  n.name = name;
  n.op_type = op;
  n.op = oat::op_from_name(op);
  n.opset = opset;
  n.inputs = std::move(in);
  n.outputs = {out};
  n.attrs = std::move(attrs);
  return n;
}

// The same with several outputs (Loop, Split, ...).
inline oat::Node make_node_outputs(const std::string& name, const std::string& op,
                                   std::vector<std::string> in, std::vector<std::string> out,
                                   std::map<std::string, oat::Attribute> attrs = {},
                                   int64_t opset = 13) {
  oat::Node n = make_node(name, op, std::move(in), "", std::move(attrs), opset);
  n.outputs = std::move(out);
  return n;
}

// A graph attribute (If's branches, Loop's and Scan's body).
inline oat::Attribute graph_attr(std::shared_ptr<oat::Graph> g) {
  oat::Attribute a;
  a.kind = oat::Attribute::Kind::Graph;
  a.g = std::move(g);
  return a;
}

}  // namespace oat_test
