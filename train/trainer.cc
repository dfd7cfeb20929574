#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "onnx_loader/tensor_io.h"
#include "train/initializer_aliases.h"
#include "train/trainer_device.h"

namespace oat::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// With loss scaling, this many non-finite losses in a row stop training (see fit()).
constexpr int64_t kMaxNonFiniteLosses = 50;

double scheduled_lr(double base, const ScheduleConfig& s, int64_t step, int64_t total,
                    int64_t steps_per_epoch) {
  if (s.warmup_steps > 0 && step < s.warmup_steps)
    return base * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  if (s.kind == "constant") return base;
  if (s.kind == "step") {
    const int64_t epoch = steps_per_epoch > 0 ? step / steps_per_epoch : 0;
    return base * std::pow(s.gamma, static_cast<double>(epoch / std::max<int64_t>(1, s.step_size)));
  }
  if (s.kind == "cosine") {
    const double span = static_cast<double>(std::max<int64_t>(1, total - s.warmup_steps));
    const double t = std::min(1.0, static_cast<double>(step - s.warmup_steps) / span);
    return s.min_lr + 0.5 * (base - s.min_lr) * (1.0 + std::cos(M_PI * t));
  }
  throw Error(cat("unknown learning-rate schedule '", s.kind, "' (constant, step, cosine)"));
}

BatchLayout layout_for(const Graph& model, LossKind loss, const std::string& output,
                       const LabelOptions& labels) {
  BatchLayout L;
  const ValueInfo* in = &data_input_of(model);
  L.input_name = in->name;
  if (!in->shape || in->shape->empty())
    throw Error(cat("input '", in->name, "' has no declared shape; cannot cut batches for it"));
  // A symbolic dimension after the batch (a sequence axis) is -1 here; fit_sample_shape takes
  // its size from the data.
  for (size_t d = 1; d < in->shape->size(); ++d)
    L.sample_shape.push_back((*in->shape)[d].fixed() ? (*in->shape)[d].value : -1);
  // Token ids stay integers of the model's type; everything else is fed as F32.
  if (is_integer(in->dtype)) {
    L.input_dtype = in->dtype;
    L.input_bound = index_bound(model, in->name);
  } else {
    L.input_dtype = DType::F32;
  }
  // Every other input (not an initializer) is fed from the data's extra inputs.
  for (const auto& v : model.inputs) {
    if (v.name == in->name || model.initializers.count(v.name)) continue;
    ExtraInput e;
    e.name = v.name;
    e.dtype = v.dtype;
    if (v.shape) {
      e.shape_known = true;
      e.scalar = v.shape->empty();
      for (size_t d = 1; d < v.shape->size(); ++d)
        e.sample_shape.push_back((*v.shape)[d].fixed() ? (*v.shape)[d].value : -1);
    }
    if (is_integer(v.dtype)) e.bound = index_bound(model, v.name);
    L.extra_inputs.push_back(std::move(e));
  }
  const ValueInfo* out = model.outputs.empty() ? nullptr : &model.outputs[0];
  for (size_t k = 0; k < model.outputs.size(); ++k)
    if (model.outputs[k].name == output) {
      out = &model.outputs[k];
      L.output_index = k;
    }
  if (loss == LossKind::CrossEntropy) {
    L.target_dtype = DType::I64;
    L.ignore_index = labels.ignore_index;
    if (out) {
      const ClassAxis ca = resolve_class_axis(*out, labels);
      L.class_axis = ca.axis;
      L.output_is_probability = !logits_behind(model, out->name, loss, ca).empty();
      if (out->shape) {
        const std::vector<Dim>& dims = *out->shape;
        if (dims[static_cast<size_t>(ca.axis)].fixed())
          L.num_classes = dims[static_cast<size_t>(ca.axis)].value;
        for (int64_t d = 1; d < ca.rank; ++d)
          if (d != ca.axis) L.target_shape.push_back(dims[static_cast<size_t>(d)].value);
      } else if (labels.label_shape) {
        L.target_shape = *labels.label_shape;
      }
    }
  } else if (loss != LossKind::Model) {
    L.target_dtype = DType::F32;
    if (out) L.output_is_probability = !logits_behind(model, out->name, loss, ClassAxis{}).empty();
    if (out && out->shape)
      for (size_t d = 1; d < out->shape->size(); ++d)
        L.target_shape.push_back((*out->shape)[d].fixed() ? (*out->shape)[d].value : 1);
  }
  return L;
}

namespace {

// Host-side loss sum and correct count for one batch of outputs (inference evaluation).
// Cross-entropy: out is [d0, .., C at the class axis a, ..], labels the same without axis a; with
// outer = d0·..·d(a−1) and inner = d(a+1)·.., position (o, i) has scores out[o, :, i] and label
// labels[o·inner + i]. Each position whose label is not ignore_index adds
//   logsumexp(scores) − scores[label]   to loss_sum,  [argmax(scores) == label]  to correct,
// and 1 to `positions`. The other losses add each sample's mean and 1 per sample.
// Probabilities (layout.output_is_probability: a final Softmax / Sigmoid) add −log p[label],
// resp. −(t·log p + (1 − t)·log(1 − p)), each log clamped at −100 as PyTorch's BCELoss does
// (p = 0 scores 100 instead of Inf).
double clamped_log(double p) { return p > 0 ? std::max(std::log(p), -100.0) : -100.0; }

void score_batch(const Tensor& out, const Tensor& target, LossKind loss, const BatchLayout& layout,
                 double& loss_sum, int64_t& correct, int64_t& positions) {
  const int64_t n = out.dim(0);
  const float* y = out.data<float>();
  if (loss == LossKind::CrossEntropy) {
    const int64_t a = out.rank() == 2 ? 1 : layout.class_axis;
    if (a < 1 || a >= out.rank())
      throw Error(cat("class axis ", a, " is not an axis of the model's output ",
                      shape_str(out.shape())));
    Shape want = out.shape();
    want.erase(want.begin() + a);
    if (target.shape() != want)
      throw Error(cat("labels ", shape_str(target.shape()), " do not fit the model's output ",
                      shape_str(out.shape()), " with class axis ", a, " (expected ",
                      shape_str(want), ")"));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < a; ++d) outer *= out.dim(d);
    for (int64_t d = a + 1; d < out.rank(); ++d) inner *= out.dim(d);
    const int64_t c = out.dim(a);
    const int64_t* labels = target.data<int64_t>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t label = labels[o * inner + i];
        if (label == layout.ignore_index) continue;
        if (label < 0 || label >= c)
          throw Error(cat("label ", label, " is not a class in [0, ", c, ")"));
        const float* row = y + o * c * inner + i;  // scores row[j * inner]
        float mx = row[0];
        int64_t arg = 0;
        for (int64_t j = 1; j < c; ++j)
          if (row[j * inner] > mx) {
            mx = row[j * inner];
            arg = j;
          }
        if (layout.output_is_probability) {
          loss_sum -= clamped_log(row[label * inner]);
        } else {
          double s = 0;
          for (int64_t j = 0; j < c; ++j) s += std::exp(static_cast<double>(row[j * inner] - mx));
          loss_sum += std::log(s) - (row[label * inner] - mx);
        }
        correct += arg == label;
        ++positions;
      }
    return;
  }
  // Regression / BCE: each sample's mean over its values, summed over the batch.
  if (target.numel() != out.numel())
    throw Error(cat("targets ", shape_str(target.shape()), " do not fit the model's output ",
                    shape_str(out.shape()), " (", out.numel(), " values, the targets have ",
                    target.numel(), ")"));
  const float* t = target.data<float>();
  const int64_t m = out.numel();
  double s = 0;
  for (int64_t i = 0; i < m; ++i) {
    const double d = static_cast<double>(y[i]) - t[i];
    if (loss == LossKind::MSE) s += d * d;
    else if (loss == LossKind::L1) s += std::abs(d);
    else if (layout.output_is_probability)  // BCE of probabilities
      s -= t[i] * clamped_log(y[i]) + (1.0 - t[i]) * clamped_log(1.0 - y[i]);
    else {  // BCE with logits
      const double x = y[i];
      s += std::max(x, 0.0) - x * t[i] + std::log1p(std::exp(-std::abs(x)));
    }
  }
  loss_sum += s / static_cast<double>(m / n);
  positions += n;
}

std::string fmt_time(double s) {
  char buf[32];
  const int64_t t = static_cast<int64_t>(s);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", static_cast<int>(t / 3600),
                static_cast<int>(t / 60 % 60), static_cast<int>(t % 60));
  return buf;
}

}  // namespace

EvalResult evaluate_model(const Graph& model, const std::map<std::string, Tensor>& weights,
                          const Dataset& data, const BatchLayout& layout, LossKind loss,
                          int64_t batch, Device device) {
  // Weights that replace initializers become the initializers of a copy of the graph rather than
  // feeds: on a device the executor uploads an initializer once, a feed with every batch.
  Graph with_weights;
  const Graph* graph = &model;
  std::map<std::string, Tensor> feeds;
  if (!weights.empty()) {
    with_weights = model;
    for (const auto& [name, t] : weights) {
      auto it = with_weights.initializers.find(name);
      if (it != with_weights.initializers.end()) it->second = t;
      else feeds[name] = t;
    }
    graph = &with_weights;
  }
  ExecutorOptions eo;
  eo.device = device;
  Executor exec(*graph, eo);
  const std::string& input = data_input_of(model).name;
  BatchLayout fitted = layout;
  fit_sample_shape(fitted, data.inputs, "evaluation data");
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0, positions = 0;
  std::vector<int64_t> order = epoch_order(data.size(), 0, 0, false);
  BatchPrefetcher pf(data, fitted, order, batch, false);
  Batch b;
  // A low-precision inference model (convert's FP16/BF16 output without --keep-io-types) takes
  // its input in that type: the F32 batch is rounded to it, as ONNX Runtime's user would.
  const DType input_type = data_input_of(model).dtype;
  const bool cast_input = is_floating(input_type) && input_type != DType::F32;
  while (pf.next(b)) {
    feeds[input] = cast_input ? cast_tensor(b.inputs, input_type) : b.inputs;
    for (const auto& [name, t] : b.extra) feeds[name] = t;
    std::vector<Tensor> out = exec.run(feeds);
    if (loss == LossKind::Model) {
      loss_sum += out.at(layout.output_index).item_as_double() * b.inputs.dim(0);
      positions += b.inputs.dim(0);
    } else {
      score_batch(cast_tensor(out.at(layout.output_index), DType::F32), b.targets, loss, layout,
                  loss_sum, correct, positions);
    }
    r.samples += b.inputs.dim(0);
  }
  // Cross-entropy: mean over the counted positions (PyTorch's mean with ignore_index); the
  // others: mean over samples.
  r.loss = positions ? loss_sum / static_cast<double>(positions) : 0.0;
  r.positions = positions;
  if (loss == LossKind::CrossEntropy && positions)
    r.accuracy = static_cast<double>(correct) / static_cast<double>(positions);
  return r;
}

Trainer::Trainer(const Graph& model, TrainerConfig config)
    : model_(untie_initializer_aliases(model)), cfg_(std::move(config)) {
  if (cfg_.batch < 1) throw Error(cat("--batch must be at least 1, got ", cfg_.batch));
  if (cfg_.lr <= 0) throw Error(cat("--lr must be positive, got ", cfg_.lr));
  scaler_ = LossScaler(cfg_.loss_scale);
  cfg_.graph.loss_scaling = scaler_.checks_overflow();
  // From the model as loaded: build_training_graph unties it the same way (deterministic names)
  // and notes what it untied (TrainingGraph::notes).
  tg_ = build_training_graph(model, cfg_.graph);
  layout_ = layout_for(model_, cfg_.graph.loss, tg_.output, cfg_.graph.labels);
  layout_.input_mean = cfg_.input.input_mean;
  layout_.input_std = cfg_.input.input_std;
  if (is_integer(layout_.input_dtype) && (layout_.input_mean != 0.0f || layout_.input_std != 1.0f))
    throw Error(cat("input normalisation does not apply to the model's ",
                    dtype_name(layout_.input_dtype), " (token id) input '", tg_.data_input, "'"));
  for (const auto& [name, next] : tg_.updates) state_[name] = tg_.graph.initializers.at(name);
  ExecutorOptions eo;
  eo.device = cfg_.device;
  exec_ = std::make_unique<Executor>(tg_.graph, eo);
}

Trainer::~Trainer() = default;

std::map<std::string, Tensor> Trainer::model_initializers() const {
  std::map<std::string, Tensor> r;
  for (const auto& p : tg_.params) r[p] = state_.at(p);
  for (const auto& s : tg_.bn_stats) r[s] = state_.at(s);
  return r;
}

EvalResult Trainer::evaluate(const Dataset& data) const {
  return evaluate_model(model_, model_initializers(), data, layout_, cfg_.graph.loss, cfg_.batch,
                        cfg_.device);
}

void Trainer::save_checkpoint(int64_t epoch_done) const {
  if (cfg_.checkpoint_dir.empty()) return;
  // Written beside the final folder and renamed, so a crash never leaves half a checkpoint.
  const fs::path final_dir(cfg_.checkpoint_dir);
  const fs::path tmp = final_dir.string() + ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  nlohmann::json j;
  j["step"] = step_;
  j["epoch"] = epoch_done;
  j["seed"] = cfg_.seed;
  j["optimizer_step"] = optimizer_step_;
  j["loss_scaler"] = nlohmann::json::parse(scaler_.to_json());
  int k = 0;
  for (const auto& [name, t] : state_) {
    if (tg_.working.count(name)) continue;  // derived from its master on load
    const std::string file = cat("t", k++, ".pb");
    onnx_loader::write_tensor_pb(t, name, (tmp / file).string());
    j["tensors"][name] = file;
  }
  {
    std::ofstream f(tmp / "checkpoint.json");
    f << j.dump(2) << "\n";
    if (!f) throw Error(cat(tmp.string(), ": cannot write checkpoint.json"));
  }
  fs::remove_all(final_dir);
  fs::rename(tmp, final_dir);
}

int64_t Trainer::load_checkpoint() {
  const fs::path dir(cfg_.checkpoint_dir);
  std::ifstream f(dir / "checkpoint.json");
  if (!f) throw Error(cat(dir.string(), ": no checkpoint.json to resume from"));
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    throw Error(cat(dir.string(), "/checkpoint.json: ", e.what()));
  }
  for (auto& [name, t] : state_) {
    if (tg_.working.count(name)) continue;
    if (!j["tensors"].contains(name))
      throw Error(cat(dir.string(), ": the checkpoint has no tensor '", name,
                      "' (was it written for another model or optimizer?)"));
    Tensor loaded =
        onnx_loader::read_tensor_pb((dir / j["tensors"][name].get<std::string>()).string()).tensor;
    if (loaded.shape() != t.shape() || loaded.dtype() != t.dtype())
      throw Error(cat(dir.string(), ": tensor '", name, "' is ", dtype_name(loaded.dtype()), " ",
                      shape_str(loaded.shape()), ", the model needs ", dtype_name(t.dtype()), " ",
                      shape_str(t.shape())));
    t = loaded;
  }
  refresh_working_copies(tg_, state_);
  step_ = j["step"].get<int64_t>();
  // Checkpoints written before mixed precision have neither: every step was applied, no scaler.
  optimizer_step_ = j.contains("optimizer_step") ? j["optimizer_step"].get<int64_t>() : step_;
  if (j.contains("loss_scaler"))
    scaler_.load_json(j["loss_scaler"].dump(), (dir / "checkpoint.json").string());
  return j["epoch"].get<int64_t>();
}

void Trainer::fit(const Dataset& train, const Dataset* val) {
  fit_sample_shape(layout_, train.inputs, "training data");
  check_dataset(train, layout_, "training data");
  if (val) check_dataset(*val, layout_, "validation data", "--val-input");
  if (train.size() == 0) throw Error("training data is empty");
  const int64_t per_epoch = (train.size() + cfg_.batch - 1) / cfg_.batch;
  int64_t total = per_epoch * cfg_.epochs;
  if (cfg_.max_steps > 0) total = std::min(total, cfg_.max_steps);
  int64_t start_epoch = 0;
  if (cfg_.resume) start_epoch = load_checkpoint();
  if (cfg_.device != Device::CPU) start_device_run();

  std::unique_ptr<std::ofstream> log;
  if (!cfg_.log_path.empty()) {
    log = std::make_unique<std::ofstream>(cfg_.log_path, cfg_.resume ? std::ios::app : std::ios::trunc);
    if (!*log) throw Error(cat(cfg_.log_path, ": cannot open the log for writing"));
  }
  const bool tty = cfg_.progress && ::isatty(STDERR_FILENO);
  const auto t0 = Clock::now();
  const int64_t first_step = step_;
  int64_t samples_seen = 0;
  int64_t nonfinite_run = 0;  // consecutive steps with a non-finite loss (loss scaling only)
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };

  for (int64_t epoch = start_epoch; epoch < cfg_.epochs && step_ < total; ++epoch) {
    const int64_t skip = step_ - epoch * per_epoch;  // batches of this epoch already done (resume)
    std::vector<int64_t> order = epoch_order(train.size(), cfg_.seed, epoch, cfg_.shuffle);
    if (skip > 0) order.erase(order.begin(), order.begin() + std::min<int64_t>(skip * cfg_.batch, order.size()));
    BatchPrefetcher pf(train, layout_, order, cfg_.batch, false);
    Batch b;
    double epoch_loss = 0;  // over the steps with a finite loss
    int64_t finite_steps = 0;
    // The host's part of a step, once its loss and overflow flag are on the host: the scaler's
    // bookkeeping, the loss checks, the callback, the log and the progress line.
    auto complete = [&](const PendingStep& p) {
      const bool found_inf = p.found_inf.defined() && p.found_inf.item_as_double() != 0;
      const bool applied = scaler_.update(found_inf);
      if (applied) ++optimizer_step_;
      const double loss = p.loss.item_as_double();
      if (!std::isfinite(loss)) {
        // Without loss scaling a non-finite loss is fatal. With it, the step was skipped (the
        // gradients are non-finite too) as PyTorch's GradScaler does; an FP16 forward pass that
        // overflows on one batch recovers on the next, but one that overflows on every batch
        // does not (the scale cannot help the forward pass), so a run of them stops training.
        if (applied || ++nonfinite_run >= kMaxNonFiniteLosses) {
          step_ = p.step - 1;  // the steps completed before this one (a device may have queued more)
          // No update before this step: the weights are the model's own, so the data (or an
          // empty output: the mean of nothing) made it, not the learning rate.
          if (applied && optimizer_step_ == 1)
            throw Error(cat("the loss is ", loss, " at step ", p.step,
                            ", before any update changed the weights: the model's output or the "
                            "targets are not finite for this batch (NaN or Inf in the data, "
                            "values that overflow, or an empty output)"));
          throw Error(cat("the loss became ", loss, " at step ", p.step,
                          applied ? " (learning rate too high?)"
                                  : cat(" and in the ", kMaxNonFiniteLosses - 1,
                                        " steps before it (the forward pass overflows; try "
                                        "--precision bf16, --fp32-nodes or a lower learning rate)")));
        }
      } else {
        nonfinite_run = 0;
        epoch_loss += loss;
        ++finite_steps;
      }
      samples_seen += p.samples;
      if (on_step) on_step(p.step, loss);
      const bool report = p.step % cfg_.log_every == 0 || p.step == total;
      if (!report) return;
      const double el = elapsed();
      const double sps = samples_seen / std::max(el, 1e-9);
      const double eta = (total - p.step) * el / std::max<int64_t>(1, p.step - first_step);
      if (log) {
        nlohmann::json j = {{"step", p.step}, {"epoch", p.epoch + 1}, {"loss", loss}, {"lr", p.lr},
                            {"loss_scale", scaler_.scale()},
                            {"skipped_steps", scaler_.state().skipped_steps},
                            {"samples_per_s", sps}, {"elapsed_s", el}};
        if (!std::isfinite(loss)) j["loss"] = nullptr;  // JSON has no Inf/NaN
        if (dev_) j["cuda_graph"] = graph_status_;
        *log << j.dump() << "\n" << std::flush;
      }
      if (cfg_.progress) {
        char line[256];
        const int width = 24;
        const int filled = static_cast<int>(width * p.step / std::max<int64_t>(1, total));
        std::snprintf(line, sizeof line,
                      "epoch %lld/%lld [%s%s] step %lld/%lld loss %.4f lr %.3g scale %g "
                      "skipped %lld %.0f samples/s ETA %s",
                      static_cast<long long>(p.epoch + 1), static_cast<long long>(cfg_.epochs),
                      std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                      static_cast<long long>(p.step), static_cast<long long>(total), loss, p.lr,
                      scaler_.scale(), static_cast<long long>(scaler_.state().skipped_steps), sps,
                      fmt_time(eta).c_str());
        if (tty) std::cerr << "\r" << line << std::flush;
        else std::cout << line << "\n" << std::flush;
      }
    };
    // On a device, steps are queued without waiting; their outcomes are read in order at each
    // report, at the epoch's end and at least every 256 steps (bounding the queue).
    std::vector<PendingStep> pending;
    auto drain = [&] {
      if (pending.empty()) return;
      read_pending(pending);
      for (const PendingStep& p : pending) complete(p);
      pending.clear();
    };
    while (step_ < total && pf.next(b)) {
      const double lr = scheduled_lr(cfg_.lr, cfg_.schedule, step_, total, per_epoch);
      if (dev_) {
        PendingStep p = device_step(b, lr);
        p.step = ++step_;
        p.epoch = epoch;
        pending.push_back(std::move(p));
        if (step_ % cfg_.log_every == 0 || step_ == total || pending.size() >= 256) drain();
        continue;
      }
      std::map<std::string, Tensor> feeds = state_;
      feeds[tg_.data_input] = b.inputs;
      for (const auto& [name, t] : b.extra) feeds[name] = t;
      if (!tg_.target.empty()) feeds[tg_.target] = b.targets;
      feeds[tg_.lr] = Tensor::scalar<float>(static_cast<float>(lr));
      // Adam's t counts applied updates only (a skipped step leaves the moments as they were).
      feeds[tg_.step] = Tensor::scalar<int64_t>(optimizer_step_ + 1);
      // Backward starts from the loss scale; UnscaleAndCheck multiplies by its inverse.
      feeds[tg_.seed] = cast_tensor(Tensor::scalar<double>(scaler_.scale()),
                                    tg_.graph.value_info.at(tg_.loss).dtype);
      if (!tg_.inv_scale.empty())
        feeds[tg_.inv_scale] = Tensor::scalar<float>(static_cast<float>(scaler_.inv_scale()));
      std::vector<std::string> fetch = {tg_.loss};
      if (!tg_.found_inf.empty()) fetch.push_back(tg_.found_inf);
      for (const auto& [name, next] : tg_.updates) fetch.push_back(next);
      auto out = exec_->run(feeds, fetch);
      // On a skipped step the updates hand back their inputs, so parameters and optimizer state
      // stay bit for bit; BatchNorm running statistics keep this forward's update (as PyTorch).
      for (const auto& [name, next] : tg_.updates) state_[name] = out.at(next);
      PendingStep p;
      p.step = ++step_;
      p.epoch = epoch;
      p.samples = b.inputs.dim(0);
      p.lr = lr;
      p.loss = out.at(tg_.loss);
      if (!tg_.found_inf.empty()) p.found_inf = out.at(tg_.found_inf);
      complete(p);
    }
    drain();
    if (dev_) download_state();
    if (tty) std::cerr << "\n";
    const double mean_loss = finite_steps ? epoch_loss / static_cast<double>(finite_steps) : 0.0;
    nlohmann::json ej = {{"epoch", epoch + 1}, {"step", step_},
                         {"train_loss", mean_loss},
                         {"elapsed_s", elapsed()}, {"loss_scale", scaler_.scale()},
                         {"skipped_steps", scaler_.state().skipped_steps},
                         {"samples_per_s", samples_seen / std::max(elapsed(), 1e-9)},
                         {"lr", scheduled_lr(cfg_.lr, cfg_.schedule, std::max<int64_t>(0, step_ - 1), total, per_epoch)},
                         {"loss", mean_loss}};
    if (val) {
      EvalResult r = evaluate(*val);
      ej["val_loss"] = r.loss;
      if (r.accuracy >= 0) ej["val_accuracy"] = r.accuracy;
      if (cfg_.progress) {
        std::cout << "epoch " << epoch + 1 << ": train loss " << mean_loss << ", val loss "
                  << r.loss;
        if (r.accuracy >= 0) std::cout << ", val accuracy " << 100.0 * r.accuracy << "%";
        std::cout << "\n" << std::flush;
      }
    }
    if (log) *log << ej.dump() << "\n" << std::flush;
    save_checkpoint(epoch + (step_ % per_epoch == 0 ? 1 : 0));
  }
}

}  // namespace oat::train
