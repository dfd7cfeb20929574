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
#include <optional>
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

// Cross-entropy's labels, as PyTorch's nn.CrossEntropyLoss takes them: int64 class indices of the
// output's shape without its class axis ([N] for [N, C] logits, [N, H, W] for [N, C, H, W]
// segmentation maps, [N, T] for [N, T, V] sequence logits), mean over every position whose label
// is not ignore_index. The class axis (resolve_class_axis):
//   1. class_axis when given (--class-axis; negative counts from the end; 0, the batch, is refused);
//   2. rank-2 outputs: axis 1;
//   3. labels known (label_shape): of axis 1 and the last axis, the one whose removal leaves the
//      labels' shape (a symbolic dimension fits any size); when both fit, rule 4; when neither
//      fits, an error naming both shapes;
//   4. rank 3: the last axis (sequence models, [N, T, V]); rank >= 4: axis 1 (images, [N, C, H, W]).
// The loss is SoftmaxCrossEntropyLoss over classes at axis 1, so another class axis is moved
// there by a Transpose first.
struct LabelOptions {
  std::optional<int64_t> class_axis;  // --class-axis; nullopt: by the rule above
  std::optional<Shape> label_shape;   // the labels' per-sample shape (without N), when data is known
  int64_t ignore_index = -100;        // labels equal to it do not count (PyTorch's default)
};

struct ClassAxis {
  int64_t axis = 1;    // in [1, rank)
  int64_t rank = 2;    // the output's rank
  std::string why;     // how it was chosen, e.g. "class axis 2 (last) of output 'y' [batch, 16, 50]: ..."
};

// The class axis of cross-entropy over `out` (the rule above). Throws Error for an axis outside
// [1, rank) or labels whose shape fits no class axis (naming the labels' and the output's shape).
ClassAxis resolve_class_axis(const ValueInfo& out, const LabelOptions& options);

// Models that end in a probability layer (Keras' Dense(activation="softmax"), every
// keras.applications model, a Sigmoid binary classifier): when the output the loss reads is
//   cross-entropy:    Softmax(z) over the class axis (opset >= 13: `axis` is the class axis;
//                     opset < 13, which softmaxes the flattened [axis, rank): axis and class
//                     axis both the last), or
//   bce-with-logits:  Sigmoid(z),
// the loss reads z instead: CE(z) = −log softmax(z)[label] is the cross-entropy of the
// probabilities (Keras' from_logits=False), computed stably, and applying the loss's own
// softmax/sigmoid to probabilities would train the wrong objective. Returns z's name, or ""
// when the output is not such a layer (LogSoftmax needs nothing: log_softmax is idempotent).
std::string logits_behind(const Graph& model, const std::string& output, LossKind loss,
                          const ClassAxis& class_axis);

// The model's data input: its first float input, else its first integer input (token ids that
// an embedding Gathers). Throws Error when it has neither.
const ValueInfo& data_input_of(const Graph& model);

// For an integer data input: the number of rows of the table its ids index (the data dimension,
// along its axis, of every Gather that takes the input as indices, through Identity / Reshape /
// Squeeze / Unsqueeze / Flatten / integer Casts; the smallest when several). 0 when no Gather
// with a known size consumes it.
int64_t index_bound(const Graph& model, const std::string& input);

struct TrainingGraphOptions {
  LossKind loss = LossKind::CrossEntropy;
  LabelOptions labels;  // cross-entropy: class axis, labels' shape, ignore_index
  OptimizerConfig optimizer;
  double clip_norm = 0.0;              // > 0: clip gradients to this global L2 norm
  std::vector<std::string> freeze;     // parameter-name patterns ('*' and '?' wildcards)
  // --freeze-batchnorm: every BatchNormalization normalises with its running statistics, which
  // stay as they are (PyTorch's bn.eval() while fine-tuning; Keras' BatchNormalization with
  // training=False); its scale and bias still train. The gradient is the inference-mode one.
  bool freeze_batch_norm = false;
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
  // Every parameter's SGDUpdate / AdamUpdate merged into one MultiSGDUpdate / MultiAdamUpdate
  // (runtime/multi_update.h): one launch for the whole optimizer step on a device, the working
  // copies written in place. Same numbers either way; false keeps one node per parameter.
  bool multi_tensor_updates = true;
  std::string op_lists;                 // --op-lists FILE.json ("" = the default lists)
  std::vector<std::string> fp32_nodes;  // --fp32-nodes: forward nodes pinned FP32 (their gradients follow)
  std::vector<std::string> low_nodes;   // --fp16-nodes: forward nodes pinned to `precision`
  // F16: infer nodes reading a parameter or constant outside FP16's normal range stay FP32
  // (PaintOptions::out_of_range_fp32; false: --no-out-of-range-fp32).
  bool out_of_range_fp32 = true;
};

struct TrainingGraph {
  Graph graph;
  std::string data_input;  // the model's data input (data_input_of: float, else integer ids)
  std::string target;      // labels (int64, the output's shape without the class axis) or
                           // targets (like the output); "" for LossKind::Model
  ClassAxis class_axis;    // cross-entropy: where the classes are (LabelOptions)
  std::string output;      // the model output the loss uses
  std::string scores;      // the value the loss reads: `output`, or the logits behind a final
                           // Softmax/Sigmoid (logits_behind)
  std::string scores_why;  // when scores != output: a line saying so
  std::string loss;        // scalar loss value
  std::string lr = "lr";   // scalar float input: this step's learning rate
  std::string step = "step";  // scalar int64 input: 1-based step count (Adam's bias correction)
  std::string seed;        // scalar input: dLoss/dLoss (1, or the loss scale)
  std::string inv_scale;   // scalar float input: 1 / loss scale ("" without loss scaling)
  std::string found_inf;   // bool scalar: some gradient is Inf/NaN, the step is skipped ("" without)
  std::vector<std::string> params;      // trainable parameters (initializer names)
  std::vector<std::string> frozen;      // float initializers kept fixed (by --freeze)
  std::vector<std::string> bn_stats;    // BatchNorm running mean/var initializers
  // One-element float initializers of a TensorFlow exporter's model (tf2onnx, keras2onnx write
  // every constant, GELU's 0.5 or an attention scale, as an initializer; Keras variables are
  // named ".../ReadVariableOp:0"): constants, not parameters.
  std::vector<std::string> constants;
  // Lines a run prints about how it read the model (untied merged initializers, constants kept,
  // BatchNorm folded away by the exporter).
  std::vector<std::string> notes;
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

// build_training_graph's error for a model where no trainable parameter reaches the loss (all
// frozen, or only piecewise-constant ops between them and the loss: Floor, Round, Hardmax):
// `check` compares such a model forward only instead.
class NoTrainableParameters : public Error {
 public:
  using Error::Error;
};

// Builds the training graph. Throws Error when the model has no float or integer input, the loss
// does not fit the output (cross-entropy needs rank >= 2 and labels that fit a class axis;
// "model" needs a scalar output), an op on
// the path to the loss has no gradient builder (named), the precision is not F32/F16/BF16, or
// a pinned node does not exist / the op-lists file is malformed (from convert/).
TrainingGraph build_training_graph(const Graph& model, const TrainingGraphOptions& options);

// Sets every working copy in `state` to its master in `state`, rounded (after a checkpoint or
// any other change of the masters from outside the training graph).
void refresh_working_copies(const TrainingGraph& tg, std::map<std::string, Tensor>& state);

// Whether `name` matches the wildcard `pattern` ('*' any run, '?' one character).
bool wildcard_match(const std::string& pattern, const std::string& name);

}  // namespace oat::train
