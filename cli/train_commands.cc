#include "cli/train_commands.h"

#include <filesystem>
#include <iostream>

#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
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
  if (need_train && !r.train.inputs.defined())
    throw Error("no training data: give --data DIR|fashion-mnist or --train-x/--train-y");
  return r;
}

}  // namespace

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
  train_->add_option("--seed", t_.seed, "Seed of the shuffle (and of Dropout)");
  train_->add_flag("--no-shuffle", t_.no_shuffle, "Keep the data's order");
  train_->add_option("--threads", t_.threads, "CPU threads (0: all cores)");
  train_->add_option("--device", t_.device, "cpu (cuda arrives with the CUDA backend)")
      ->check(CLI::IsMember({"cpu"}));
  train_->add_option("--precision", t_.precision, "fp32 (fp16 and bf16 arrive with mixed precision)")
      ->check(CLI::IsMember({"fp32"}));
  train_->add_option("-o,--output", t_.out, "Trained model (default: MODEL.trained.onnx beside it)");
  train_->add_option("--log", t_.log, "Metrics log, one JSON object per line");
  train_->add_option("--checkpoint", t_.checkpoint, "Checkpoint folder (written every epoch)");
  train_->add_flag("--resume", t_.resume, "Continue from --checkpoint");
  train_->add_option("--freeze", t_.freeze, "Keep parameters matching this pattern fixed (* ?)");
  train_->add_option("--log-every", t_.log_every, "Steps between log lines")
      ->check(CLI::PositiveNumber);

  eval_ = app.add_subcommand("eval", "Loss and accuracy of MODEL on a data set");
  eval_->add_option("model", e_.model, "ONNX model file")->required();
  add_data_options(eval_, e_.data);
  eval_->add_option("--batch", e_.batch, "Batch size")->check(CLI::PositiveNumber);
  eval_->add_option("--loss", e_.loss, "cross-entropy | mse | l1 | bce-with-logits | model");
  eval_->add_option("--threads", e_.threads, "CPU threads (0: all cores)");

  zoo_ = app.add_subcommand("zoo", "Write a model of the zoo (mlp, lenet5) as ONNX");
  zoo_->add_option("name", z_.name, "mlp | lenet5")->required();
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
  const std::string out = o.out.empty() ? default_output_path(o.model) : o.out;
  std::error_code ec;
  if (fs::exists(out, ec) && fs::equivalent(out, o.model, ec))
    throw Error(cat("-o ", out, " is the input model; the trained model is never written over it"));
  onnx_loader::Model model = onnx_loader::load_model(o.model);
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
  if (o.resume && o.checkpoint.empty()) throw Error("--resume needs --checkpoint DIR");
  cfg.graph.loss = train::parse_loss(o.loss);
  cfg.graph.optimizer.kind = train::parse_optimizer(o.optimizer);
  cfg.graph.optimizer.momentum = o.momentum;
  cfg.graph.optimizer.nesterov = o.nesterov;
  cfg.graph.optimizer.weight_decay = o.weight_decay;
  cfg.graph.clip_norm = o.clip_norm;
  cfg.graph.freeze = o.freeze;

  train::Trainer trainer(model.graph, cfg);
  std::cout << "training " << o.model << ": " << trainer.training_graph().params.size()
            << " parameter tensors, " << data.train.size() << " samples, batch " << o.batch
            << ", " << o.optimizer << " lr " << o.lr << ", " << num_threads() << " threads\n";
  trainer.fit(data.train, data.has_val ? &data.val : nullptr);
  onnx_loader::save_model(model, trainer.model_initializers(), out);
  std::cout << "wrote " << out << "\n";
  return 0;
}

int run_eval(const EvalOptions& o) {
  set_num_threads(o.threads);
  onnx_loader::Model model = onnx_loader::load_model(o.model);
  LoadedData data = load_data(o.data, false);
  const train::Dataset& d = data.has_val ? data.val : data.train;
  if (!d.inputs.defined()) throw Error("no data: give --data or --val-x/--val-y");
  const train::LossKind loss = train::parse_loss(o.loss);
  train::BatchLayout layout = train::layout_for(model.graph, loss);
  train::check_dataset(d, layout, "evaluation data");
  train::EvalResult r = train::evaluate_model(model.graph, {}, d, layout, loss, o.batch);
  std::cout << "samples " << r.samples << "\nloss " << r.loss << "\n";
  if (r.accuracy >= 0) std::cout << "accuracy " << 100.0 * r.accuracy << "%\n";
  return 0;
}

int run_zoo(const ZooOptions& o) {
  Graph g = models::zoo_model(o.name, o.seed);
  onnx_loader::save_graph(g, o.out);
  std::cout << "wrote " << o.out << " (" << o.name << ", seed " << o.seed << ")\n";
  return 0;
}

}  // namespace oat::cli
