#include "cli/train_commands.h"

#include <cmath>
#include <filesystem>
#include <iostream>

#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/cuda/device.h"
#include "runtime/threads.h"
#include "train/data/idx.h"
#include "train/trainer.h"

namespace oat::cli {

namespace fs = std::filesystem;

namespace {

void add_data_options(CLI::App* c, DataOptions& d) {
  c->add_option("--data", d.data,
                "IDX folder in the MNIST layout (.gz or plain; t10k files are the validation "
                "set) or a named dataset: fashion-mnist");
  c->add_option("--train-x", d.train_x, "Training inputs (.npy)");
  c->add_option("--train-y", d.train_y, "Training labels or targets (.npy)");
  c->add_option("--val-x", d.val_x, "Validation inputs (.npy)");
  c->add_option("--val-y", d.val_y, "Validation labels or targets (.npy)");
  c->add_option("--train-input", d.train_inputs,
                "NAME=FILE.npy: another model input for training (attention_mask, "
                "token_type_ids, ...), N samples along dimension 0 like --train-x; repeatable")
      ->allow_extra_args(false);
  c->add_option("--val-input", d.val_inputs,
                "NAME=FILE.npy: another model input for validation/eval, like --val-x; "
                "repeatable")
      ->allow_extra_args(false);
  c->add_option("--normalize", d.normalize,
                "MEAN,STD: feed (x - MEAN) / STD after uint8 scaling to [0, 1] (e.g. "
                "0.2860,0.3530 for Fashion-MNIST); use the same values for train and eval")
      ->delimiter(',')
      ->expected(2);
}


struct LoadedData {
  train::Dataset train, val;
  bool has_val = false;
};

LoadedData load_data(const DataOptions& d, bool need_train) {
  LoadedData r;
  if (!d.data.empty()) {
    std::string dir = train::named_dataset_dir(d.data);
    if (dir.empty()) dir = d.data;
    if (!fs::is_directory(dir))
      throw Error(cat("--data ", d.data, ": not a folder or a known dataset name (fashion-mnist)",
                      d.data == "fashion-mnist" ? "; install Debian's dataset-fashion-mnist" : ""));
    train::IdxFolder f = train::load_idx_folder(dir);
    r.train = {f.train.images, f.train.labels};
    r.val = {f.test.images, f.test.labels};
    r.has_val = true;
  }
  auto npy_pair = [](const std::string& x, const std::string& y, const char* what) {
    if (x.empty() != y.empty())
      throw Error(cat("--", what, "-x and --", what, "-y must be given together"));
    return train::Dataset{onnx_loader::read_npy(x), onnx_loader::read_npy(y)};
  };
  if (!d.train_x.empty() || !d.train_y.empty()) r.train = npy_pair(d.train_x, d.train_y, "train");
  if (!d.val_x.empty() || !d.val_y.empty()) {
    r.val = npy_pair(d.val_x, d.val_y, "val");
    r.has_val = true;
  }
  r.train.extra = read_named_inputs(d.train_inputs, "--train-input");
  r.val.extra = read_named_inputs(d.val_inputs, "--val-input");
  if (need_train && !r.train.inputs.defined())
    throw Error("no training data: give --data DIR|fashion-mnist or --train-x/--train-y");
  return r;
}

// The run's lines about its data: the loss's class axis and, for token ids, their bound.
void print_data_lines(const train::TrainingGraph& tg, const train::BatchLayout& layout) {
  if (!tg.class_axis.why.empty())
    std::cout << "cross-entropy over " << tg.class_axis.why << ", ignore_index "
              << layout.ignore_index << "\n";
  if (!tg.scores_why.empty()) std::cout << tg.scores_why << "\n";
  for (const auto& note : tg.notes) std::cout << note << "\n";
  if (is_integer(layout.input_dtype)) {
    std::cout << "input '" << tg.data_input << "': " << dtype_name(layout.input_dtype)
              << " ids fed as they are";
    if (layout.input_bound > 0) std::cout << ", in [0, " << layout.input_bound << ")";
    std::cout << "\n";
  }
}

// --precision and the loss-scaling options into the trainer's configuration.
void apply_precision(const TrainOptions& o, train::TrainerConfig& cfg) {
  const DType low = o.precision == "fp16" ? DType::F16 : o.precision == "bf16" ? DType::BF16 : DType::F32;
  cfg.graph.precision = low;
  std::string scaling_flags;  // dynamic-scaling options given with values other than the defaults
  for (const auto& [flag, set] : {std::pair{"--init-scale", o.init_scale != 65536.0},
                                  {"--growth-factor", o.growth_factor != 2.0},
                                  {"--backoff-factor", o.backoff_factor != 0.5},
                                  {"--growth-interval", o.growth_interval != 2000},
                                  {"--hysteresis", o.hysteresis != 1},
                                  {"--min-scale", o.min_scale != 0.0},
                                  {"--max-scale", o.max_scale != 0.0}})
    if (set) scaling_flags += std::string(scaling_flags.empty() ? "" : ", ") + flag;
  if (low == DType::F32 && (!o.op_lists.empty() || !o.fp32_nodes.empty() || !o.fp16_nodes.empty() ||
                            o.no_out_of_range_fp32))
    throw Error(
        "--op-lists, --fp32-nodes, --fp16-nodes and --no-out-of-range-fp32 need --precision fp16 "
        "or bf16");
  train::LossScalerConfig& s = cfg.loss_scale;
  train::parse_loss_scale(o.loss_scale.empty() ? (low == DType::F16 ? "dynamic" : "none")
                                               : o.loss_scale,
                          s);
  if (!scaling_flags.empty() && s.mode != train::LossScaleMode::Dynamic)
    throw Error(cat(scaling_flags, ": need dynamic loss scaling (this run uses --loss-scale ",
                    s.mode == train::LossScaleMode::Static ? cat(s.init_scale) : "none",
                    "; --loss-scale dynamic turns it on)"));
  if (s.mode == train::LossScaleMode::Dynamic) {
    s.init_scale = o.init_scale;
    s.growth_factor = o.growth_factor;
    s.backoff_factor = o.backoff_factor;
    s.growth_interval = o.growth_interval;
    s.hysteresis = o.hysteresis;
    s.min_scale = o.min_scale;
    if (o.max_scale != 0.0) s.max_scale = o.max_scale;
  }
  cfg.graph.op_lists = o.op_lists;
  cfg.graph.fp32_nodes = o.fp32_nodes;
  cfg.graph.low_nodes = o.fp16_nodes;
  cfg.graph.out_of_range_fp32 = !o.no_out_of_range_fp32;
}

}  // namespace

void add_label_options(CLI::App* c, LabelFlags& f) {
  c->add_option("--class-axis", f.class_axis,
                "cross-entropy: the output's class axis (negative counts from the end). Default: "
                "the axis whose removal gives the labels' shape (1 or the last); else rank 3 -> "
                "last ([N, T, V]), rank >= 4 -> 1 ([N, C, H, W])");
  c->add_option("--ignore-index", f.ignore_index,
                "cross-entropy: label value that does not count in the loss or accuracy "
                "(default -100, as PyTorch)");
  c->add_option("--loss-output", f.output,
                "The model output the loss reads, by name (default: the first; e.g. the main "
                "logits of a model that also outputs auxiliary ones)");
}

const ValueInfo& loss_output(const Graph& model, const LabelFlags& f) {
  if (model.outputs.empty()) throw Error("the model has no outputs");
  if (f.output.empty()) return model.outputs[0];
  std::string names;
  for (const auto& v : model.outputs) {
    if (v.name == f.output) return v;
    names += cat(names.empty() ? "" : ", ", "'", v.name, "'");
  }
  throw Error(cat("--loss-output: the model has no output named '", f.output, "' (its outputs: ",
                  names, ")"));
}

train::LabelOptions label_options(const LabelFlags& f, const std::string& loss,
                                  const Tensor* labels) {
  train::LabelOptions o;
  const bool ce = loss == "cross-entropy";
  if (!ce && f.class_axis != LabelFlags::kAuto)
    throw Error(cat("--class-axis applies to --loss cross-entropy, not ", loss));
  if (!ce && f.ignore_index != -100)
    throw Error(cat("--ignore-index applies to --loss cross-entropy, not ", loss));
  if (f.class_axis != LabelFlags::kAuto) o.class_axis = f.class_axis;
  o.ignore_index = f.ignore_index;
  if (ce && labels && labels->defined() && labels->rank() >= 1)
    o.label_shape = Shape(labels->shape().begin() + 1, labels->shape().end());
  return o;
}

void apply_normalize(const std::vector<float>& normalize, train::BatchLayout& layout) {
  if (normalize.empty()) return;
  if (is_integer(layout.input_dtype))
    throw Error(cat("--normalize does not apply to the model's ", dtype_name(layout.input_dtype),
                    " (token id) input"));
  const float mean = normalize[0], std = normalize[1];
  if (!(std > 0.0f) || !std::isfinite(std) || !std::isfinite(mean))
    throw Error(cat("--normalize ", mean, ",", std, ": STD must be positive and MEAN finite"));
  layout.input_mean = mean;
  layout.input_std = std;
}

std::map<std::string, Tensor> read_named_inputs(const std::vector<std::string>& args,
                                                const std::string& flag) {
  std::map<std::string, Tensor> r;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      throw Error(cat(flag, " ", a, ": expected NAME=FILE.npy (NAME: the model input it feeds)"));
    const std::string name = a.substr(0, eq);
    if (r.count(name)) throw Error(cat(flag, " ", name, "=...: given twice"));
    try {
      r[name] = onnx_loader::read_npy(a.substr(eq + 1));
    } catch (const std::exception& e) {
      throw Error(cat(flag, " ", name, "=", a.substr(eq + 1), ": ", e.what()));
    }
  }
  return r;
}

std::string default_output_path(const std::string& model) {
  fs::path p(model);
  fs::path stem = p.parent_path() / p.stem();
  std::string out = stem.string() + ".trained.onnx";
  for (int k = 2; fs::exists(out); ++k) out = cat(stem.string(), ".trained-", k, ".onnx");
  return out;
}

TrainCommands::TrainCommands(CLI::App& app) {
  train_ = app.add_subcommand(
      "train", "Train MODEL (the default subcommand: `onnx-amp-train MODEL ...` trains)");
  train_->add_option("model", t_.model, "ONNX model file")->required();
  add_data_options(train_, t_.data);
  train_->add_option("--epochs", t_.epochs, "Epochs")->check(CLI::PositiveNumber);
  train_->add_option("--steps", t_.steps, "Stop after this many steps (0: all epochs)");
  train_->add_option("--batch", t_.batch, "Batch size")->check(CLI::PositiveNumber);
  train_->add_option("--lr", t_.lr, "Learning rate")->check(CLI::PositiveNumber);
  train_->add_option("--optimizer", t_.optimizer, "sgd | adam | adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  train_->add_option("--momentum", t_.momentum, "SGD momentum");
  train_->add_flag("--nesterov", t_.nesterov, "Nesterov momentum (SGD)");
  train_->add_option("--weight-decay", t_.weight_decay,
                     "Weight decay (L2 for sgd/adam, decoupled for adamw)");
  train_->add_option("--schedule", t_.schedule, "Learning-rate schedule: constant | step | cosine")
      ->check(CLI::IsMember({"constant", "step", "cosine"}));
  train_->add_option("--warmup-steps", t_.warmup, "Linear warm-up steps");
  train_->add_option("--step-size", t_.step_size, "step schedule: epochs between decays");
  train_->add_option("--gamma", t_.gamma, "step schedule: decay factor");
  train_->add_option("--clip-norm", t_.clip_norm, "Clip gradients to this global L2 norm");
  train_->add_option("--loss", t_.loss, "cross-entropy | mse | l1 | bce-with-logits | model")
      ->check(CLI::IsMember({"cross-entropy", "mse", "l1", "bce-with-logits", "model"}));
  add_label_options(train_, t_.labels);
  train_->add_option("--seed", t_.seed, "Seed of the shuffle (and of Dropout)");
  train_->add_flag("--no-shuffle", t_.no_shuffle, "Keep the data's order");
  train_->add_option("--threads", t_.threads, "CPU threads (0: all cores)");
  train_->add_option("--device", t_.device,
                     "cpu | cuda: on cuda the state stays on the GPU and the step is replayed as a "
                     "CUDA graph (fails when no CUDA device answers)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  train_->add_flag("--no-cuda-graph", t_.no_cuda_graph,
                   "cuda: run every step eagerly instead of capturing it once as a CUDA graph");
  train_->add_option("--precision", t_.precision,
                     "fp32 | fp16 | bf16: mixed precision keeps FP32 master weights, an FP32 loss "
                     "and FP32 weight gradients; the op lists pick each node's precision")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  train_->add_option("--loss-scale", t_.loss_scale,
                     "dynamic | none | VALUE (a static scale); default: dynamic for fp16, none "
                     "for bf16 and fp32");
  train_->add_option("--init-scale", t_.init_scale, "Dynamic loss scaling: initial scale (65536)");
  train_->add_option("--growth-factor", t_.growth_factor, "Dynamic loss scaling: growth (2)");
  train_->add_option("--backoff-factor", t_.backoff_factor,
                     "Dynamic loss scaling: factor on overflow (0.5)");
  train_->add_option("--growth-interval", t_.growth_interval,
                     "Dynamic loss scaling: clean steps before growing (2000)");
  train_->add_option("--min-scale", t_.min_scale, "Dynamic loss scaling: lower bound (none)");
  train_->add_option("--max-scale", t_.max_scale, "Dynamic loss scaling: upper bound (FP32 max)");
  train_->add_option("--hysteresis", t_.hysteresis,
                     "Dynamic loss scaling: overflows in a row before backing off (1)");
  train_->add_option("--op-lists", t_.op_lists,
                     "JSON file moving ops between the allow/deny/infer/clear lists");
  train_->add_option("--fp32-nodes", t_.fp32_nodes, "Forward nodes kept in FP32 (by name)")
      ->delimiter(',');
  train_->add_option("--fp16-nodes", t_.fp16_nodes,
                     "Forward nodes run in the low precision (fp16 or bf16) whatever the lists say")
      ->delimiter(',');
  train_->add_flag("--no-out-of-range-fp32", t_.no_out_of_range_fp32,
                   "fp16: paint Mul/Div nodes reading a constant with max |x| < 6.1e-5, and "
                   "nodes reading one with max |x| > 65504, like any other (by default "
                   "they stay fp32)");
  train_->add_option("-o,--output", t_.out, "Trained model (default: MODEL.trained.onnx beside it)");
  train_->add_option("--log", t_.log, "Metrics log, one JSON object per line");
  train_->add_option("--checkpoint", t_.checkpoint, "Checkpoint folder (written every epoch)");
  train_->add_flag("--resume", t_.resume, "Continue from --checkpoint");
  train_->add_option("--freeze", t_.freeze, "Keep parameters matching this pattern fixed (* ?)");
  train_->add_flag("--freeze-batchnorm", t_.freeze_batch_norm,
                   "BatchNormalization normalises with its running statistics and keeps them as "
                   "they are (PyTorch's bn.eval() while fine-tuning); its scale and bias still "
                   "train");
  train_->add_option("--log-every", t_.log_every, "Steps between log lines")
      ->check(CLI::PositiveNumber);

  eval_ = app.add_subcommand("eval", "Loss and accuracy of MODEL on a data set");
  eval_->add_option("model", e_.model, "ONNX model file")->required();
  add_data_options(eval_, e_.data);
  eval_->add_option("--batch", e_.batch, "Batch size")->check(CLI::PositiveNumber);
  eval_->add_option("--loss", e_.loss, "cross-entropy | mse | l1 | bce-with-logits | model");
  add_label_options(eval_, e_.labels);
  eval_->add_option("--threads", e_.threads, "CPU threads (0: all cores)");
  eval_->add_option("--device", e_.device, "cpu | cuda (fails when no CUDA device answers)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  zoo_ = app.add_subcommand(
      "zoo",
      "Write a model of the zoo (mlp, lenet5, resnet18, resnet18-cifar, transformer, lstm, and "
      "the GEMM-heavy benchmark models mlp-wide, transformer-base) as ONNX");
  zoo_->add_option("name", z_.name,
                   "mlp | lenet5 | resnet18 | resnet18-cifar | transformer | lstm | mlp-wide | "
                   "transformer-base")
      ->required();
  zoo_->add_option("-o,--output", z_.out, "Output .onnx file")->required();
  zoo_->add_option("--seed", z_.seed, "Initialisation seed");
}

bool TrainCommands::selected() const { return *train_ || *eval_ || *zoo_; }

int TrainCommands::run() {
  if (*train_) return run_train(t_);
  if (*eval_) return run_eval(e_);
  return run_zoo(z_);
}

int run_train(const TrainOptions& o) {
  set_num_threads(o.threads);
  const Device device = o.device == "cuda" ? Device::CUDA : Device::CPU;
  if (device == Device::CUDA) cuda::require_device();  // before loading model and data
  const std::string out = o.out.empty() ? default_output_path(o.model) : o.out;
  std::error_code ec;
  if (fs::exists(out, ec) && fs::equivalent(out, o.model, ec))
    throw Error(cat("-o ", out, " is the input model; the trained model is never written over it"));
  onnx_loader::Model model = onnx_loader::load_model(o.model);
  onnx_loader::require_supported_inputs(model);
  LoadedData data = load_data(o.data, true);

  train::TrainerConfig cfg;
  cfg.epochs = o.epochs;
  cfg.max_steps = o.steps;
  cfg.batch = o.batch;
  cfg.lr = o.lr;
  cfg.schedule.kind = o.schedule;
  cfg.schedule.warmup_steps = o.warmup;
  cfg.schedule.step_size = o.step_size;
  cfg.schedule.gamma = o.gamma;
  cfg.seed = o.seed;
  cfg.shuffle = !o.no_shuffle;
  cfg.log_every = o.log_every;
  cfg.log_path = o.log;
  cfg.checkpoint_dir = o.checkpoint;
  cfg.resume = o.resume;
  cfg.device = device;
  cfg.cuda_graph = !o.no_cuda_graph;
  if (o.resume && o.checkpoint.empty()) throw Error("--resume needs --checkpoint DIR");
  cfg.graph.loss = train::parse_loss(o.loss);
  cfg.graph.optimizer.kind = train::parse_optimizer(o.optimizer);
  cfg.graph.optimizer.momentum = o.momentum;
  cfg.graph.optimizer.nesterov = o.nesterov;
  cfg.graph.optimizer.weight_decay = o.weight_decay;
  cfg.graph.clip_norm = o.clip_norm;
  cfg.graph.freeze = o.freeze;
  cfg.graph.freeze_batch_norm = o.freeze_batch_norm;
  cfg.graph.labels = label_options(o.labels, o.loss, &data.train.targets);
  cfg.graph.output = loss_output(model.graph, o.labels).name;
  apply_precision(o, cfg);
  apply_normalize(o.data.normalize, cfg.input);

  train::Trainer trainer(model.graph, cfg);
  std::cout << "training " << o.model << ": " << trainer.training_graph().params.size()
            << " parameter tensors, " << data.train.size() << " samples, batch " << o.batch
            << ", " << o.optimizer << " lr " << o.lr << ", "
            << (device == Device::CUDA ? cuda::describe_device()
                                       : cat(num_threads(), " threads"))
            << ", " << o.precision;
  if (cfg.loss_scale.mode == train::LossScaleMode::Dynamic)
    std::cout << ", dynamic loss scale from " << cfg.loss_scale.init_scale;
  else if (cfg.loss_scale.mode == train::LossScaleMode::Static)
    std::cout << ", loss scale " << cfg.loss_scale.init_scale;
  std::cout << "\n";
  print_data_lines(trainer.training_graph(), trainer.layout());
  trainer.fit(data.train, data.has_val ? &data.val : nullptr);
  if (device == Device::CUDA) std::cout << "CUDA graph: " << trainer.cuda_graph_status() << "\n";
  onnx_loader::save_model(model, trainer.model_initializers(), out);
  std::cout << "wrote " << out << "\n";
  return 0;
}

int run_eval(const EvalOptions& o) {
  set_num_threads(o.threads);
  const Device device = o.device == "cuda" ? Device::CUDA : Device::CPU;
  if (device == Device::CUDA) cuda::require_device();
  onnx_loader::Model model = onnx_loader::load_model(o.model);
  onnx_loader::require_supported_inputs(model);
  LoadedData data = load_data(o.data, false);
  const train::Dataset& d = data.has_val ? data.val : data.train;
  if (!d.inputs.defined()) throw Error("no data: give --data or --val-x/--val-y");
  const train::LossKind loss = train::parse_loss(o.loss);
  const train::LabelOptions labels = label_options(o.labels, o.loss, &d.targets);
  const ValueInfo& out = loss_output(model.graph, o.labels);
  train::BatchLayout layout = train::layout_for(model.graph, loss, out.name, labels);
  apply_normalize(o.data.normalize, layout);
  train::fit_sample_shape(layout, d.inputs, "evaluation data");
  if (loss == train::LossKind::CrossEntropy)
    std::cout << "cross-entropy over " << train::resolve_class_axis(out, labels).why << "\n";
  train::check_dataset(d, layout, "evaluation data", data.has_val ? "--val-input" : "--train-input");
  train::EvalResult r = train::evaluate_model(model.graph, {}, d, layout, loss, o.batch, device);
  std::cout << "samples " << r.samples << "\nloss " << r.loss << "\n";
  if (r.accuracy >= 0)
    std::cout << "accuracy " << 100.0 * r.accuracy << "%"
              << (r.positions != r.samples ? cat(" (of ", r.positions, " labelled positions)") : "")
              << "\n";
  return 0;
}

int run_zoo(const ZooOptions& o) {
  Graph g = models::zoo_model(o.name, o.seed);
  onnx_loader::save_graph(g, o.out);
  std::cout << "wrote " << o.out << " (" << o.name << ", seed " << o.seed << ")\n";
  return 0;
}

}  // namespace oat::cli
