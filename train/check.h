// `check`: one batch through the mixed-precision path and through the FP32 CPU reference, one
// forward + backward pass of the training graph each, compared node by node (DESIGN.md, job 3).
//
// The two paths:
//   reference: the FP32 training graph on the CPU;
//   checked:   the same training graph painted `precision` (convert/, FP32 master weights behind
//              Casts), run on `device` (CUDA, or the CPU's F16/BF16 kernels when no GPU is used).
// Both start from the same FP32 weights and batch, and both seed the backward pass with the same
// loss scale S, so gradients are comparable value by value (they are S·dL/dX in both).
//
// Values are matched by name: forward outputs and gradient values keep their names in the mixed
// graph; the Casts it inserts have new names. Every float value is compared in FP32:
//   abs = max_i |a_i − r_i|,   rel = abs / max_i |r_i|   (rel = abs when r is all zeros);
// equal infinities count as equal, any other non-finite difference is an infinite error.
//
// Two measures per node:
//   end-to-end  a (the checked path's value) against r (the FP32 reference run). Errors compound
//               with depth (every FP16 node rounds its inputs and outputs), so this is reported,
//               not gated: a deep FP16 network legitimately ends far from FP32 in places.
//   local       a against the node's FP32 CPU kernel run on the checked path's own inputs of that
//               node (cast to FP32): the error this node adds by itself. This is the gate: a node
//               is out of tolerance when its local rel exceeds the tolerance of its precision.
//               For an F16 node that computes in FP32 and rounds once, local rel ≤ 2^-11 ≈ 4.9e-4
//               (BF16: 2^-8 ≈ 3.9e-3); on the CPU an FP32 node reproduces its value exactly.
//
// Rows: one per forward node of the training graph (the model's nodes and the loss), holding its
// outputs ("out") and the outputs of the gradient nodes that differentiate it ("grad",
// TrainingGraph::origin), plus one row per parameter-gradient Sum; the Casts the mixed graph
// inserts are checked locally with the row of their first consumer. Gradient abs values are
// reported divided by S (rel is scale free). The optimizer nodes are not compared (lr is 0).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "train/training_graph.h"

namespace oat::train {

struct CheckTolerances {
  double fp32 = 1e-4;       // CPU vs CPU: exact in practice
  double fp32_cuda = 1e-3;  // GPU FP32 (no TF32) vs the CPU: other summation orders
  double fp16 = 1e-2;
  double bf16 = 8e-2;
};

struct CheckOptions {
  DType precision = DType::F16;  // F16, BF16 or F32 (F32 only makes sense on CUDA)
  Device device = Device::CPU;   // where the checked path runs
  LossKind loss = LossKind::CrossEntropy;
  LabelOptions labels;  // cross-entropy: class axis and ignore_index (training_graph.h)
  std::string output;   // the model output the loss reads ("" = the first)
  // The backward seed S of both paths. <= 0: dynamic, as the loss scaler starts: 65536 for F16
  // (halved while the checked path's gradients overflow, up to 24 times), 1 for BF16/FP32.
  double loss_scale = 0.0;
  CheckTolerances tol;
  std::string op_lists;                 // as training: --op-lists, --fp32-nodes, --fp16-nodes
  std::vector<std::string> fp32_nodes, low_nodes;
  bool out_of_range_fp32 = true;        // as training: false with --no-out-of-range-fp32
  // The model's other inputs (attention_mask, token_type_ids, ...) for this batch, by name.
  std::map<std::string, Tensor> extra_inputs;
  // Forward only (`check --forward-only`): no loss and no backward pass. The reference is the
  // model itself in FP32 (inference mode: BatchNormalization with its running statistics,
  // Dropout the identity); the checked path is the model as `convert` writes it for inference
  // (convert_for_inference with FP32 inputs and outputs: low-precision initializers, Casts, the
  // nodes ONNX's schema keeps FP32), or the model itself for F32, on `device`. Every node's
  // outputs are compared as above (end-to-end and local; forward overflow fails), and each
  // graph output end to end. `loss`, `labels`, `output` and `loss_scale` are not used.
  bool forward_only = false;
  // Test hook (a deliberately broken kernel): called on the checked path after every node, before
  // its outputs are used; it may change them in place.
  std::function<void(const Node&, std::vector<Tensor>&)> perturb;
};

struct ValueError {
  double abs = 0.0, rel = 0.0;
  std::string value;  // the worst value's name
  bool any = false;   // some value was compared
  void add(const std::string& name, double a, double r);
};

struct NodeCheck {
  std::string node, op;
  DType precision = DType::F32;  // the forward node's planned precision
  bool grad_only = false;        // a parameter-gradient Sum (no forward outputs)
  ValueError out, grad;          // end-to-end, against the FP32 reference run
  ValueError local;              // against the FP32 kernel on this path's inputs (the gate)
  // Elements the checked path rounded to ±inf because the FP32 kernel's value is beyond the
  // format's range (65504 for FP16): left out of `local`, counted here. Forward overflows fail;
  // gradient overflows fail only when the parameter gradients are not all finite (otherwise they
  // were masked downstream, e.g. by ReLU, and the trainer takes the step).
  int64_t overflow_out = 0, overflow_grad = 0;
  double overflow_max = 0.0;   // the largest |FP32 value| among them
  std::string overflow_value;  // the value holding it
  // Gradient elements below the low format's smallest normal (FP16 2^-14) that the checked path
  // holds within one subnormal step (2^-24) of the FP32 kernel: subnormal rounding, not a kernel
  // error; left out of `local`, counted here. local_all_rel is local.rel with them.
  int64_t underflow_grad = 0;
  double underflow_max = 0.0;   // the largest |FP32 value| among them
  std::string underflow_value;  // the value holding it
  double local_all_rel = 0.0;
  double tol = 0.0;
  bool ok = true;
  // The underflow exemption is what keeps this node within tolerance.
  bool underflow_decides() const { return ok && underflow_grad > 0 && local_all_rel > tol; }
};

struct CheckReport {
  std::string mode;  // "CPU mixed fp16 vs CPU FP32 reference (no CUDA device: ...)" etc.
  // How the model was read (TrainingGraph::scores_why, then TrainingGraph::notes), printed first.
  std::vector<std::string> notes;
  DType precision = DType::F32;
  Device device = Device::CPU;
  double loss_scale = 1.0;
  int overflow_retries = 0;  // dynamic S: halvings before the gradients were finite
  bool grads_finite = true;  // every parameter gradient of the checked path is finite at S
  double loss_ref = 0.0, loss_checked = 0.0;  // not with forward_only
  bool forward_only = false;
  std::vector<ValueError> outputs;  // forward_only: each graph output end to end (value = its name)
  std::vector<NodeCheck> nodes;  // graph order
  size_t failing = 0;
  std::string worst_node;  // the largest local rel / tol
  double worst_ratio = 0.0;
  bool ok() const { return failing == 0; }
};

// The line `check` prints first: which two paths it compares, e.g. "CPU-vs-CPU: CPU mixed fp16
// (fp16 CPU kernels) vs CPU FP32 reference (no CUDA device: ...)". `why_cpu` says why the
// checked path is on the CPU ("--device cpu", or the reason no CUDA device answers).
std::string check_mode_line(const CheckOptions& options, const std::string& why_cpu = "");

// Runs both paths on (input, target) and compares them. `target` is undefined for LossKind::Model
// and not used with forward_only; `input` feeds the model's data input (data_input_of), and
// extra_inputs its other inputs.
// Throws Error for a model that cannot be trained (build_training_graph's errors) or a batch that
// does not fit it.
CheckReport run_check(const Graph& model, const Tensor& input, const Tensor& target,
                      const CheckOptions& options);

// Why `check` must compare `model` forward only although it has float parameters (no trainable
// parameter reaches the loss: a Floor or Round between them; every one frozen), or "" when the
// training graph builds or fails for another reason (run_check then reports that).
std::string forward_only_reason(const Graph& model, const CheckOptions& options);

// The report as a table (node, op, precision, out abs/rel, grad abs/rel, local rel, tol, ok) and
// a summary line; and as JSON with the same fields.
std::string check_table(const CheckReport& r);
std::string check_json(const CheckReport& r);

}  // namespace oat::train
