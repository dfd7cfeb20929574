// The kernel interface (ONNX Runtime's shape): a kernel is created once per node from the node's
// attributes (parsed into a typed struct in its constructor) and computes from a KernelContext.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace oat {

// ---- The Trainer on a device: step bookkeeping and CUDA-graph capture (DeviceContext) ----

// The loss scaler's rule (train/loss_scaler.h, PyTorch's GradScaler plus DeepSpeed's hysteresis)
// as the device applies it after each step.
struct DeviceAmpRule {
  bool check = false;    // steps are checked for Inf/NaN (found_inf is given); false: "none"
  bool dynamic = false;  // the scale changes; false: static (or none)
  float growth = 2.0f, backoff = 0.5f;
  float min_scale = 0.0f, max_scale = 3.4028234663852886e38f;
  int64_t interval = 2000, hysteresis = 1;
};

// Device scalars of a training run, updated on the device after every step so the host never
// waits for a step's outcome:
//   scale, inv_scale  F32: the backward seed and UnscaleAndCheck's input;
//   step              I64: Adam's t for the next update (applied updates so far + 1);
//   counters          I64[3]: growth_tracker, hysteresis_left, skipped_steps.
// amp_step(found_inf) does, as LossScaler::update:
//   no check:  step += 1
//   overflow:  skipped += 1; dynamic: growth_tracker = 0 and (hysteresis_left ≤ 1 ?
//              scale = max(scale·backoff, min_scale) : hysteresis_left −= 1)
//   clean:     step += 1; dynamic: hysteresis_left = hysteresis, growth_tracker += 1 and at
//              `interval`: scale = min(scale·growth, max_scale), growth_tracker = 0
//   always:    inv_scale = 1 / scale
struct DeviceAmpState {
  Tensor scale, inv_scale, step, counters;
};

// A captured sequence of device work (a CUDA graph) replayed on the context's stream. The
// memory it touches stays reserved for it until it is destroyed.
class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  virtual void replay() = 0;
};

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

  // The Trainer on a device (defaults throw "<device> cannot ..."):
  // dst ← src (same dtype and shape; dst on this device, src on the host or this device),
  // ordered on the stream, without waiting.
  virtual void copy_into(const Tensor& src, Tensor& dst);
  // The step bookkeeping of DeviceAmpState, on the device. found_inf: a Bool device scalar, or
  // null when steps are not checked.
  virtual void amp_step(DeviceAmpState& state, const Tensor* found_inf, const DeviceAmpRule& rule);
  // Graph capture: work queued on the stream between begin_capture() and end_capture() is
  // recorded, not run; end_capture() returns the graph. Allocations made meanwhile come from a
  // private pool kept for the graph; host data uploaded meanwhile is copied once into pinned
  // memory kept with the graph (it must be the same at every replay); reading a device value on
  // the host throws. abort_capture() ends a capture that failed and discards it.
  virtual void begin_capture();
  virtual std::unique_ptr<CapturedGraph> end_capture();
  virtual void abort_capture();
};

// nullptr for Device::CPU; the CUDA context otherwise (throws Error when the build has no CUDA
// backend or no device answers).
std::unique_ptr<DeviceContext> make_device_context(Device device);

class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs, std::vector<Tensor>* outputs,
                Device device, DeviceContext* device_context = nullptr,
                std::vector<bool> donated = {})
      : node_(node),
        inputs_(std::move(inputs)),
        outputs_(outputs),
        device_(device),
        device_context_(device_context),
        donated_(std::move(donated)) {}

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
  // Whether input i was donated by the caller of the run (Executor::run_resident's `donated`)
  // and no later node reads it: its storage may then become an output's, written in place.
  bool input_donated(int i) const {
    return i < static_cast<int>(donated_.size()) && donated_[static_cast<size_t>(i)];
  }
  // Whether input i is a constant of the executor (an initializer the run was not fed, or a
  // Constant node's value): the same storage, never written, for the executor's life, so a
  // kernel may keep what it derives from it (Winograd's transformed filters) across runs,
  // holding the storage to know it again.
  bool input_constant(int i) const {
    return i < static_cast<int>(constant_.size()) && constant_[static_cast<size_t>(i)];
  }
  void set_constant_inputs(std::vector<bool> constant) { constant_ = std::move(constant); }
  // Output o = donated input i (the same storage; the kernel then writes it in place, as the
  // optimizer updates do with the parameter and its moments). Requires input_donated(i).
  Tensor& reuse_input(int i, int o);

  // Throws Error("node 'x' (Op, opset N): <msg>").
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor>* outputs_;
  Device device_;
  DeviceContext* device_context_;
  std::vector<bool> donated_;
  std::vector<bool> constant_;
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
