// The training subcommands: `train` (the default: `onnx-amp-train MODEL ...`), `eval` and `zoo`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/data/batches.h"
#include "train/training_graph.h"

namespace oat::cli {

// Cross-entropy's labels (train/training_graph.h LabelOptions): --class-axis, --ignore-index.
struct LabelFlags {
  static constexpr int64_t kAuto = INT64_MIN;
  int64_t class_axis = kAuto;  // kAuto: by the rule (labels' shape, else the output's rank)
  int64_t ignore_index = -100;
  std::string output;  // --loss-output: the model output the loss reads ("" = the first)
};

// The model output --loss-output names (the first output when it is empty); throws Error naming
// the outputs there are when the model has no such output.
const ValueInfo& loss_output(const Graph& model, const LabelFlags& f);

struct DataOptions {
  std::string data;  // IDX folder or a named dataset ("fashion-mnist")
  std::string train_x, train_y, val_x, val_y;  // .npy pairs
  // --train-input / --val-input NAME=FILE.npy: the model's other inputs (masks, token types).
  std::vector<std::string> train_inputs, val_inputs;
  std::vector<float> normalize;  // --normalize MEAN,STD: inputs become (x - MEAN) / STD
};

struct TrainOptions {
  std::string model;
  DataOptions data;
  int64_t epochs = 1, steps = 0, batch = 64;
  double lr = 1e-3;
  std::string optimizer = "adam";
  double momentum = 0.0, weight_decay = 0.0;
  bool nesterov = false;
  std::string schedule = "constant";
  int64_t warmup = 0, step_size = 1;
  double gamma = 0.1, clip_norm = 0.0;
  std::string loss = "cross-entropy";
  LabelFlags labels;
  uint64_t seed = 0;
  bool no_shuffle = false;
  int threads = 0;
  std::string device = "cpu", precision = "fp32";
  std::string out, log, checkpoint;
  bool resume = false;
  bool no_cuda_graph = false;
  std::vector<std::string> freeze;
  bool freeze_batch_norm = false;
  int64_t log_every = 50;
  // Mixed precision (--precision fp16|bf16) and loss scaling.
  std::string loss_scale;  // dynamic | none | VALUE; "" = dynamic for fp16, none otherwise
  double init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000, hysteresis = 1;
  double min_scale = 0.0, max_scale = 0.0;  // max 0: FP32's largest value
  std::string op_lists;
  std::vector<std::string> fp32_nodes, fp16_nodes;
  bool no_out_of_range_fp32 = false;
};

struct EvalOptions {
  std::string model;
  DataOptions data;
  int64_t batch = 256;
  std::string loss = "cross-entropy";
  LabelFlags labels;
  int threads = 0;
  std::string device = "cpu";  // cpu | cuda
};

struct ZooOptions {
  std::string name;
  std::string out;
  uint64_t seed = 0;
};

class TrainCommands {
 public:
  explicit TrainCommands(CLI::App& app);
  bool selected() const;
  int run();

 private:
  CLI::App* train_ = nullptr;
  CLI::App* eval_ = nullptr;
  CLI::App* zoo_ = nullptr;
  TrainOptions t_;
  EvalOptions e_;
  ZooOptions z_;
};

int run_train(const TrainOptions& o);
int run_eval(const EvalOptions& o);
int run_zoo(const ZooOptions& o);

// Adds --class-axis and --ignore-index to a subcommand (train, eval, check).
void add_label_options(CLI::App* c, LabelFlags& f);

// The flags as LabelOptions, with the labels' per-sample shape when `labels` is given and
// defined. Throws Error for --class-axis or --ignore-index with a loss other than cross-entropy.
train::LabelOptions label_options(const LabelFlags& f, const std::string& loss,
                                  const Tensor* labels = nullptr);

// The default output path: MODEL.trained.onnx beside the input (MODEL.trained-2.onnx, ... if
// that exists), never the input itself.
std::string default_output_path(const std::string& model);

// NAME=FILE.npy arguments of `flag` (--train-input, --input, ...) read into tensors by name;
// a malformed or repeated NAME is an error naming the flag.
// --normalize MEAN,STD into the layout: STD positive and finite, MEAN finite, and a float data
// input (token ids are not normalised). Empty: nothing. Shared by train, eval and check.
void apply_normalize(const std::vector<float>& normalize, train::BatchLayout& layout);

std::map<std::string, Tensor> read_named_inputs(const std::vector<std::string>& args,
                                                const std::string& flag);

}  // namespace oat::cli
