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
  std::vector<std::string> params;      // trainable parameters (initializer names)
  std::vector<std::string> frozen;      // float initializers kept fixed (by --freeze)
  std::vector<std::string> bn_stats;    // BatchNorm running mean/var initializers
  std::map<std::string, std::string> updates;  // state name -> value holding its next version
  std::map<std::string, std::string> grads;    // param -> its gradient value
};

// Builds the training graph. Throws Error when the model has no float input, the loss does not
// fit the output (cross-entropy needs [N, C] logits; "model" needs a scalar output), or an op on
// the path to the loss has no gradient builder (named).
TrainingGraph build_training_graph(const Graph& model, const TrainingGraphOptions& options);

// Whether `name` matches the wildcard `pattern` ('*' any run, '?' one character).
bool wildcard_match(const std::string& pattern, const std::string& name);

}  // namespace oat::train
