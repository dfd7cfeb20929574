// The trainer loop: batches → one run of the training graph (forward, loss, backward, optimizer
// step) → state fed back; learning-rate schedule, metrics log, progress, validation at the end
// of each epoch, checkpoints and resume.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "runtime/executor.h"
#include "train/data/batches.h"
#include "train/loss_scaler.h"
#include "train/training_graph.h"

namespace oat::train {

struct ScheduleConfig {
  std::string kind = "constant";  // constant | step | cosine
  int64_t warmup_steps = 0;       // linear warm-up from lr/warmup to lr
  int64_t step_size = 1;          // step: multiply by gamma every step_size epochs
  double gamma = 0.1;
  double min_lr = 0.0;            // cosine: the final learning rate
};

// lr at `step` (0-based) of `total` steps, with `steps_per_epoch` for the step schedule.
double scheduled_lr(double base_lr, const ScheduleConfig& s, int64_t step, int64_t total,
                    int64_t steps_per_epoch);

struct TrainerConfig {
  int64_t epochs = 1;
  int64_t max_steps = 0;  // > 0: stop after this many steps in all
  int64_t batch = 64;
  double lr = 1e-3;
  ScheduleConfig schedule;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t log_every = 50;     // steps between log lines / progress updates
  std::string log_path;       // JSON lines; "" = none
  std::string checkpoint_dir; // "" = none; written at each epoch end and at the end
  bool resume = false;        // continue from checkpoint_dir
  bool progress = true;       // progress output at all
  TrainingGraphOptions graph;  // graph.loss_scaling is set from loss_scale
  // Loss scaling (none by default; the CLI picks dynamic for --precision fp16).
  LossScalerConfig loss_scale;
  // Input normalisation (only input_mean / input_std are read; shapes come from the model).
  BatchLayout input;
  // Where the step runs. CUDA: parameters, optimizer state, the loss scale and Adam's step stay
  // on the device between steps; the host reads losses and overflow flags only when it reports
  // (every log_every steps and at epoch ends), so it never waits for a step.
  Device device = Device::CPU;
  // CUDA: once the first full batch has run, the whole step (forward, backward, unscale, update,
  // loss-scale update) is captured in a CUDA graph and replayed for every full batch.
  bool cuda_graph = true;
};

struct EvalResult {
  double loss = 0.0;
  // Cross-entropy: the fraction of counted positions (labels not ignore_index; one per sample for
  // [N, C] logits, one per pixel or token for dense outputs) whose argmax over the class axis is
  // the label; < 0 when not classification.
  double accuracy = -1.0;
  int64_t samples = 0;
  int64_t positions = 0;  // what the loss is the mean over: counted positions, or samples
};

class Trainer {
 public:
  Trainer(const Graph& model, TrainerConfig config);
  ~Trainer();

  // Trains on `train`, validating on `val` (may be null) at the end of each epoch.
  void fit(const Dataset& train, const Dataset* val);

  // Loss and accuracy of the model with the current weights, in inference mode.
  EvalResult evaluate(const Dataset& data) const;

  // The trained parameters and BatchNorm statistics, by initializer name (for export).
  std::map<std::string, Tensor> model_initializers() const;

  const TrainingGraph& training_graph() const { return tg_; }
  const BatchLayout& layout() const { return layout_; }
  int64_t step() const { return step_; }
  // Steps whose update was applied (Adam's t): step() minus the overflowing steps skipped.
  int64_t optimizer_step() const { return optimizer_step_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  // Parameters, optimizer state and BatchNorm statistics (FP32 masters), by initializer name.
  const std::map<std::string, Tensor>& state() const { return state_; }
  // Called after every step with (step, loss); for tests. On a device it is called when the
  // host reads the step's loss (at the next report), in step order.
  std::function<void(int64_t, double)> on_step;
  // On a device: "on", or "off (reason)" when capture was not possible; "" before it was tried
  // or on the CPU.
  const std::string& cuda_graph_status() const { return graph_status_; }

 private:
  void save_checkpoint(int64_t epoch_done) const;
  int64_t load_checkpoint();
  // The device half (trainer_device.cc): a step's outcome as device scalars, read later.
  struct DeviceRun;
  struct PendingStep {
    int64_t step = 0, epoch = 0, samples = 0;
    double lr = 0;
    Tensor loss, found_inf;  // host tensors on the CPU, device scalars on a device
  };
  void start_device_run();
  PendingStep device_step(const Batch& b, double lr);
  void try_capture();
  std::map<std::string, Tensor> run_device_graph(const Tensor& x, const Tensor& y,
                                                const std::map<std::string, Tensor>& extra);
  void read_pending(std::vector<PendingStep>& pending);  // device scalars -> host tensors
  void download_state();                                // device state -> state_

  Graph model_;  // the model with its initializer aliases untied (train/initializer_aliases.h)
  TrainerConfig cfg_;
  TrainingGraph tg_;
  BatchLayout layout_;
  std::unique_ptr<Executor> exec_;
  std::map<std::string, Tensor> state_;  // params, optimizer state, BN statistics
  int64_t step_ = 0;
  int64_t optimizer_step_ = 0;
  LossScaler scaler_;
  std::string graph_status_;
  std::unique_ptr<DeviceRun> dev_;  // after exec_: destroyed first (its graph uses exec_'s stream)
};

// Loss and accuracy of `model` with `weights` overriding its initializers, in inference mode.
EvalResult evaluate_model(const Graph& model, const std::map<std::string, Tensor>& weights,
                          const Dataset& data, const BatchLayout& layout, LossKind loss,
                          int64_t batch, Device device = Device::CPU);

// The batch layout a model implies for `loss` (its input's per-sample shape and dtype, target
// kind and shape; for cross-entropy the class axis by `labels`, as build_training_graph picks it).
BatchLayout layout_for(const Graph& model, LossKind loss, const std::string& output = "",
                       const LabelOptions& labels = {});

}  // namespace oat::train
