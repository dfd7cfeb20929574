// The kernel interface (ONNX Runtime's shape): a kernel is created once per node from the node's
// attributes (parsed into a typed struct in its constructor) and computes from a KernelContext.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace oat {

// Per-executor state of a device backend (CUDA: the stream, cuBLAS/cuDNN handles, copies).
// The CPU has none. An executor on a device owns one and hands it to every kernel.
class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual Device device() const = 0;
  // Copies ordered on the context's stream; download waits for the copy to finish.
  virtual Tensor upload(const Tensor& host) = 0;
  virtual Tensor download(const Tensor& t) = 0;
  // Where a node runs given its actual inputs: the device, or Device::CPU for shape arithmetic
  // (every input already on the host and integer, or no inputs), as ONNX Runtime places shape
  // subgraphs on the CPU. Host inputs of a device node are uploaded by stage_inputs, except those
  // the op reads on the host (Reshape's shape, Slice's starts, ...): `staged` owns the copies.
  virtual Device placement(const Node& node, const std::vector<const Tensor*>& inputs) const = 0;
  virtual void stage_inputs(const Node& node, std::vector<const Tensor*>& inputs,
                            std::vector<Tensor>& staged) = 0;
  // Makes the context current on this thread (its stream orders allocations) until leave().
  virtual void enter() = 0;
  virtual void leave() = 0;
  // Waits for all work queued on the context.
  virtual void synchronize() = 0;
};

// nullptr for Device::CPU; the CUDA context otherwise (throws Error when the build has no CUDA
// backend or no device answers).
std::unique_ptr<DeviceContext> make_device_context(Device device);

class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs, std::vector<Tensor>* outputs,
                Device device, DeviceContext* device_context = nullptr)
      : node_(node),
        inputs_(std::move(inputs)),
        outputs_(outputs),
        device_(device),
        device_context_(device_context) {}

  const Node& node() const { return node_; }
  Device device() const { return device_; }
  // The executor's device state (nullptr on the CPU).
  DeviceContext* device_context() const { return device_context_; }

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
  DeviceContext* device_context_;
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
