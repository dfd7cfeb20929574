// Composite ops: ONNX ops that this runtime runs as a subgraph of ops that have kernels, instead
// of with kernels of their own (runtime/composite/: Einsum as Transpose/Reshape/MatMul/ReduceSum;
// RNN, GRU and LSTM unrolled over their fixed sequence length into MatMul, Add and the gate
// activations). Autodiff, mixed precision, both backends and `check` then come from the ops of the
// expansion, each already checked against the CPU reference.
//
// The expansion happens where a graph is run or trained (the Executor, build_training_graph), not
// at load: `convert`, `inspect` and the trained-model export keep the original node. In a training
// graph the precision plan paints every node of an expansion as its composite op (the op lists and
// the pins by node name apply to the composite: PaintOptions::part_of), so an LSTM in the allow
// list runs all of its gates in FP16, as cuDNN's FP16 LSTM does.
//
// Names: every node and value an expansion adds starts with the composite node's name (or
// "<OpType>#<index>" when it has none) followed by '/', and is unique in the graph. The expansion
// writes the composite's own output names, so consumers are untouched.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat {

// How a graph is lowered. By default every expansion uses ops that have kernels on both
// backends and gradients (a training graph, a device executor). `cpu_inference`: the graph runs
// forward only, on a CPU Executor, so an expansion may use the CPU's fused inference kernels
// instead (an F32 LSTM as one LSTMSequence node: runtime/cpu/kernels/rnn_sequence.cc).
struct LoweringOptions {
  bool cpu_inference = false;
};

// Writes one composite node's expansion into a list of nodes (graph order).
class Expansion {
 public:
  // `taken`: value names in use; `taken_nodes`: node names in use (both grow).
  Expansion(const Node& composite, std::string prefix, Graph& g, std::set<std::string>& taken,
            std::set<std::string>& taken_nodes, std::vector<Node>& out,
            LoweringOptions options = {});

  const Node& node() const { return n_; }
  const LoweringOptions& options() const { return options_; }
  const Graph& graph() const { return g_; }
  // The composite's input / output `i`, "" when omitted or absent.
  const std::string& input(size_t i) const;
  const std::string& output(size_t i) const;
  // What is known of a value (declared or inferred type and shape), or nullptr.
  // An initializer without value_info (exporters need not write one) is described by its tensor.
  const ValueInfo* info(const std::string& value) const;
  // The value's element type, DType::Undefined when unknown.
  DType dtype(const std::string& value) const;
  // The value's initializer, nullptr when it is not one (a computed or fed value).
  const Tensor* constant(const std::string& value) const;

  // Adds a node of the default domain (the internal one for the runtime's own ops, e.g. the
  // scatter-add GatherElementsGrad) with opset-17 semantics (axes of Squeeze, Unsqueeze,
  // ReduceSum and Split are inputs) and returns its `n_outputs` fresh output names, "<prefix>/<tag>".
  std::vector<std::string> add(const std::string& op_type, const std::vector<std::string>& inputs,
                               const std::string& tag, size_t n_outputs,
                               std::map<std::string, Attribute> attrs = {});
  // As add() with one output.
  std::string add1(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::string& tag, std::map<std::string, Attribute> attrs = {});
  // Adds a node that writes the given output names (the composite's outputs; "" skips one).
  void add_to(const std::string& op_type, const std::vector<std::string>& inputs,
              const std::vector<std::string>& outputs, const std::string& tag,
              std::map<std::string, Attribute> attrs = {});
  // Adds a copy of an existing node as it is (op, domain, opset, attributes, the given input and
  // output names), under a fresh node name "<prefix>/<tag>": for expansions that repeat part of
  // the graph (the Gradient op recomputes y at its own inputs).
  void add_node(Node n, const std::string& tag);
  // A fresh value name "<prefix>/<tag>", for add_to() and add_node().
  std::string fresh_value(const std::string& tag) { return fresh(tag, taken_); }
  // The graph's nodes before the composite, already lowered (the Gradient op reads the nodes
  // that compute its y from them).
  const std::vector<Node>& preceding() const { return out_; }
  // Records what is known of a value the expansion made (type; shape when known).
  void set_info(const std::string& value, DType dtype,
                std::optional<std::vector<Dim>> shape = std::nullopt);
  // A new initializer: an int64 vector (shape [n]), or a scalar when `scalar`.
  std::string ints(const std::vector<int64_t>& v, const std::string& tag, bool scalar = false);
  // A new initializer of any type (e.g. a float scalar in the composite's input type).
  std::string constant_tensor(Tensor t, const std::string& tag);

  // Throws Error "node 'x' (Op, opset k): <what>".
  [[noreturn]] void fail(const std::string& what) const;
  // Throws Unsupported (a valid form the expansion does not implement), key "<Op>(<what>)".
  [[noreturn]] void unsupported(const std::string& what, const std::string& key) const;

 private:
  std::string fresh(const std::string& tag, std::set<std::string>& taken);

  const Node& n_;
  std::string prefix_;
  Graph& g_;
  std::set<std::string>& taken_;
  std::set<std::string>& taken_nodes_;
  std::vector<Node>& out_;
  LoweringOptions options_;
  mutable std::map<std::string, ValueInfo> initializer_info_;  // info() of bare initializers
};

using Expander = void (*)(Expansion& e);

// Adds (or replaces) the expander of an op type: a default-domain op type, or "<domain>.<op type>"
// for another domain (ai.onnx.preview.training's optimizers); the built-in ones are listed in
// runtime/composite/expanders.h. For tests of the lowering itself.
void register_composite(const std::string& op_type, Expander expander);

// The expander for a node (its op type in its domain), nullptr when the node is not a composite op.
Expander composite_expander(const Node& n);
bool is_composite(const Node& n);
bool has_composites(const Graph& g);
// The composite op types, for messages and tests ("Einsum", "GRU", "LSTM", "RNN",
// "ai.onnx.preview.training.Adam", ...).
std::vector<std::string> composite_op_types();

// One expansion node's composite.
struct CompositeOrigin {
  std::string op_type;  // "LSTM"
  std::string name;     // the composite node's name, or "<OpType>#<index>" when it had none
};

// Replaces every composite node of `g` with its expansion, in place and in order; the expansion's
// value_info and int64 constants join the graph. `parts`, when given, receives (expansion node
// name -> its composite). Errors name the composite node.
void lower_composites(Graph& g, std::map<std::string, CompositeOrigin>* parts = nullptr,
                      LoweringOptions options = {});

}  // namespace oat
