// The kernel interface (ONNX Runtime's shape): a kernel is created once per node from the node's
// attributes (parsed into a typed struct in its constructor) and computes from a KernelContext.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace oat {

class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs, std::vector<Tensor>* outputs,
                Device device)
      : node_(node), inputs_(std::move(inputs)), outputs_(outputs), device_(device) {}

  const Node& node() const { return node_; }
  Device device() const { return device_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // nullptr when the optional input is omitted (empty name or beyond the list).
  const Tensor* input_or_null(int i) const {
    return i < num_inputs() ? inputs_[static_cast<size_t>(i)] : nullptr;
  }
  bool has_input(int i) const { return input_or_null(i) != nullptr; }
  // A required input; throws naming the node when it is missing.
  const Tensor& input(int i) const;

  int num_outputs() const { return static_cast<int>(outputs_->size()); }
  // Whether the model consumes output i (optional outputs may be omitted).
  bool output_requested(int i) const {
    return i < static_cast<int>(node_.outputs.size()) && !node_.outputs[i].empty();
  }
  // Allocates output i (uninitialised) and returns it.
  Tensor& allocate_output(int i, DType dtype, Shape shape);
  // Sets output i to an existing tensor (views: Reshape, Identity, Squeeze share storage).
  void set_output(int i, Tensor t);

  // Throws Error("node 'x' (Op, opset N): <msg>").
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor>* outputs_;
  Device device_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void compute(KernelContext& ctx) = 0;
};

// Builds the kernel for one node; may throw Error for attributes it cannot handle.
using KernelFactory = std::function<std::unique_ptr<OpKernel>(const Node&)>;

// A kernel with no per-node state: a plain function.
class FunctionKernel : public OpKernel {
 public:
  explicit FunctionKernel(void (*fn)(KernelContext&)) : fn_(fn) {}
  void compute(KernelContext& ctx) override { fn_(ctx); }

 private:
  void (*fn_)(KernelContext&);
};

template <class K>
KernelFactory kernel_factory() {
  return [](const Node& n) -> std::unique_ptr<OpKernel> { return std::make_unique<K>(n); };
}
inline KernelFactory function_kernel(void (*fn)(KernelContext&)) {
  return [fn](const Node&) -> std::unique_ptr<OpKernel> {
    return std::make_unique<FunctionKernel>(fn);
  };
}

}  // namespace oat
