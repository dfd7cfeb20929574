// The training graph: the model's forward graph, switched to training mode (BatchNormalization
// computes batch statistics and updates its running ones; Dropout drops), plus the loss, the
// backward pass (train/autodiff) and the optimizer step, all as nodes of one Graph that the
// executor runs once per step.
//
// State lives outside the graph: parameters, optimizer moments and BatchNorm running statistics
// are initializers that the trainer overrides with feeds each step, and `updates` names, for
// each of them, the value that holds its next version.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "convert/precision.h"
#include "runtime/composite.h"
#include "runtime/graph.h"

namespace oat::train {

enum class LossKind { CrossEntropy, MSE, L1, BCEWithLogits, Model };
const char* loss_name(LossKind k);
LossKind parse_loss(const std::string& name);  // "cross-entropy", "mse", "l1", "bce-with-logits", "model"

enum class OptimizerKind { SGD, Adam, AdamW };
OptimizerKind parse_optimizer(const std::string& name);  // "sgd", "adam", "adamw"

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  double momentum = 0.0;  // SGD
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;  // SGD and Adam: L2 added to the gradient; AdamW: decoupled
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

struct TrainingGraphOptions {
  LossKind loss = LossKind::CrossEntropy;
  OptimizerConfig optimizer;
  double clip_norm = 0.0;              // > 0: clip gradients to this global L2 norm
  std::vector<std::string> freeze;     // parameter-name patterns ('*' and '?' wildcards)
  std::string output;                  // the model output the loss uses ("" = the first)
  // Loss scaling: an UnscaleAndCheck node (inputs inv_scale + every parameter gradient) before
  // clipping, whose found_inf is the optimizer updates' `skip`. The trainer sets this from its
  // LossScaler (train/loss_scaler.h).
  bool loss_scaling = false;
  // Mixed precision: F32 (plain), F16 or BF16. The whole training graph is painted (convert/):
  // a gradient node takes its forward node's precision; the loss, the seed's path, loss scaling,
  // clipping, the optimizer updates and the sums of parameter gradients stay FP32; parameters,
  // optimizer state and BatchNorm statistics stay FP32 initializers (the master weights), read by
  // the low-precision nodes as working copies: states (TrainingGraph::working) that each
  // optimizer update writes beside P' (round(P'), runtime/working_type.h), or, with
  // working_copies = false, Casts of the masters that run every step. Same numbers either way.
  DType precision = DType::F32;
  bool working_copies = true;
  std::string op_lists;                 // --op-lists FILE.json ("" = the default lists)
  std::vector<std::string> fp32_nodes;  // --fp32-nodes: forward nodes pinned FP32 (their gradients follow)
  std::vector<std::string> low_nodes;   // --fp16-nodes: forward nodes pinned to `precision`
};

struct TrainingGraph {
  Graph graph;
  std::string data_input;  // the model's (first) float input
  std::string target;      // labels (int64 [N]) or targets (like the output); "" for LossKind::Model
  std::string output;      // the model output the loss reads
  std::string loss;        // scalar loss value
  std::string lr = "lr";   // scalar float input: this step's learning rate
  std::string step = "step";  // scalar int64 input: 1-based step count (Adam's bias correction)
  std::string seed;        // scalar input: dLoss/dLoss (1, or the loss scale)
  std::string inv_scale;   // scalar float input: 1 / loss scale ("" without loss scaling)
  std::string found_inf;   // bool scalar: some gradient is Inf/NaN, the step is skipped ("" without)
  std::vector<std::string> params;      // trainable parameters (initializer names)
  std::vector<std::string> frozen;      // float initializers kept fixed (by --freeze)
  std::vector<std::string> bn_stats;    // BatchNorm running mean/var initializers
  std::map<std::string, std::string> updates;  // state name -> value holding its next version
  std::map<std::string, std::string> grads;    // param -> its gradient value
  // Mixed precision: working copy (an F16/BF16 state in `updates`) -> its FP32 master parameter.
  // Derived state: checkpoints leave it out and refresh_working_copies rebuilds it.
  std::map<std::string, std::string> working;
  convert::PrecisionPlan plan;                 // mixed precision only: every node's precision
  // Gradient node -> the forward node it differentiates (autodiff's BackwardResult::origin;
  // `check` groups a forward node with its gradient nodes by it).
  std::map<std::string, std::string> origin;
  // Forward node of a composite op's expansion (Einsum, RNN/GRU/LSTM; runtime/composite.h) -> its
  // composite. The graph holds the expansion; the plan paints it by the composite's op list.
  std::map<std::string, CompositeOrigin> composite_parts;
};

// Builds the training graph. Throws Error when the model has no float input, the loss does not
// fit the output (cross-entropy needs [N, C] logits; "model" needs a scalar output), an op on
// the path to the loss has no gradient builder (named), the precision is not F32/F16/BF16, or
// a pinned node does not exist / the op-lists file is malformed (from convert/).
TrainingGraph build_training_graph(const Graph& model, const TrainingGraphOptions& options);

// Sets every working copy in `state` to its master in `state`, rounded (after a checkpoint or
// any other change of the masters from outside the training graph).
void refresh_working_copies(const TrainingGraph& tg, std::map<std::string, Tensor>& state);

// Whether `name` matches the wildcard `pattern` ('*' any run, '?' one character).
bool wildcard_match(const std::string& pattern, const std::string& name);

}  // namespace oat::train
