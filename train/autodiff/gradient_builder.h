// Autodiff as a graph rewrite (ONNX Runtime training's design): for each forward node, a
// GradientBuilder emits ordinary nodes that compute the gradients of its inputs from the
// gradients of its outputs. The result is one Graph (forward + backward) that the same executor
// runs, on any device, in any precision.
//
// Naming: the gradient of value X is "X_grad"; temporaries are "<node>_grad/<k>"; shapes taken
// for broadcasting are "<X>_shape". Gradient-only ops live in the internal domain kGradDomain
// (they never appear in an exported model).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::train {

// Internal operator domain for gradient ops (ReluGrad, ConvGrad, ...).
constexpr const char* kGradDomain = kInternalDomain;

class GradientGraphBuilder;

// What one builder sees: the forward node, the names of its inputs/outputs and of their
// gradients, and a way to emit nodes.
class GradientContext {
 public:
  GradientContext(GradientGraphBuilder& b, const Node& node, std::vector<std::string> grad_outputs,
                  std::vector<bool> needs_grad_inputs);

  const Node& node() const { return node_; }
  // The forward graph, read-only (new gradient nodes are not in it yet): for builders whose rule
  // depends on the node's neighbours (fake quantization's QuantizeLinear -> DequantizeLinear).
  const Graph& graph() const;
  // Forward input / output names (I(i) is "" for an omitted optional input).
  const std::string& I(int i) const;
  const std::string& O(int i) const;
  // Gradient flowing into forward output i, or "" when none does (the output is unused or not
  // on a path to the loss). Builders treat "" as zero.
  const std::string& GO(int i) const;
  // Whether the gradient of forward input i is wanted.
  bool needs_GI(int i) const;
  // Declares `value` as (one contribution to) dLoss/dInput_i; contributions are summed.
  void set_GI(int i, const std::string& value);

  // Emits a node and returns its output names (fresh, unique). `domain` "" is ONNX.
  std::vector<std::string> emit(const std::string& op_type, const std::vector<std::string>& inputs,
                                std::map<std::string, Attribute> attrs = {}, int num_outputs = 1,
                                const std::string& domain = "");
  std::string emit1(const std::string& op_type, const std::vector<std::string>& inputs,
                    std::map<std::string, Attribute> attrs = {}, const std::string& domain = "");
  // Emits a gradient op in kGradDomain.
  std::string emit_grad_op(const std::string& op_type, const std::vector<std::string>& inputs,
                           std::map<std::string, Attribute> attrs = {});
  // Emits a gradient op in kGradDomain with one output per entry of `wanted`; outputs not wanted
  // are omitted ("" names, returned as ""), so a multi-output op (ConvGrad: dX, dW, dB) computes
  // only what is asked (KernelContext::output_requested).
  std::vector<std::string> emit_grad_op_outputs(const std::string& op_type,
                                                const std::vector<std::string>& inputs,
                                                std::map<std::string, Attribute> attrs,
                                                const std::vector<bool>& wanted);

  // A scalar constant with the dtype of `like` (Constant + CastLike, so the same graph runs in
  // F32, F64 or F16).
  std::string scalar_like(double value, const std::string& like);
  // `grad` summed over the dimensions that numpy broadcasting added to reach it from the shape
  // of `like` (the gradient of a broadcast operand). Returns `grad` itself when `same_shape`.
  std::string sum_to_shape_of(const std::string& grad, const std::string& like);
  // The Shape of a value, emitted once per value.
  std::string shape_of(const std::string& value);

  static Attribute attr_int(int64_t v);
  static Attribute attr_ints(std::vector<int64_t> v);
  static Attribute attr_float(float v);

 private:
  GradientGraphBuilder& b_;
  const Node& node_;
  std::vector<std::string> grad_outputs_;
  std::vector<bool> needs_grad_inputs_;
};

using GradientFunction = void (*)(GradientContext&);

// One op's gradient: the builder, and the inputs that are never differentiable (indices,
// shapes, axes, integer data...).
struct GradientSpec {
  GradientFunction build = nullptr;
  std::set<int> non_differentiable;  // input indices
};

// The table of gradient builders (train/autodiff/register.cc lists every family's).
class GradientRegistry {
 public:
  void add(OpId op, GradientSpec spec);
  const GradientSpec* find(OpId op) const;

 private:
  std::map<OpId, GradientSpec> table_;
};
const GradientRegistry& gradient_registry();

struct BackwardOptions {
  // Name of the graph input that seeds the backward pass (dLoss/dLoss): 1 for plain training,
  // the loss scale under mixed precision. A scalar of the loss's dtype.
  std::string seed_name = "loss_grad_seed";
};

struct BackwardResult {
  std::map<std::string, std::string> grads;  // value name -> gradient value name
  std::string seed;                           // the seed input's name
  std::vector<std::string> no_path;           // requested values with no path to the loss
  // Emitted gradient node -> the forward node it differentiates (mixed precision paints a
  // gradient node like its forward node). Nodes summing the gradient of a forward output
  // follow that output's producer; the sums for `wrt` values follow nothing and are absent.
  std::map<std::string, std::string> origin;
};

// Appends to `graph` the nodes that compute dLoss/dX for each X in `wrt` (initializers or
// inputs), and a scalar graph input `options.seed_name`. Throws Error naming the node when an
// op on a path from `wrt` to the loss has no gradient builder.
BackwardResult build_backward(Graph& graph, const std::string& loss,
                              const std::vector<std::string>& wrt,
                              const BackwardOptions& options = {});

}  // namespace oat::train
