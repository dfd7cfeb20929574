// The Trainer on a device (TrainerConfig::device = CUDA).
//
// What stays on the device between steps: the FP32 master parameters, the optimizer state and
// BatchNorm statistics (DeviceRun::state), and the step bookkeeping of DeviceAmpState (loss
// scale, 1/scale, Adam's t, growth tracker, hysteresis, skipped steps). A step uploads its batch
// and learning rate, runs the training graph with run_resident() (nothing comes back), swaps in
// the new state, and updates the scale and t on the device from UnscaleAndCheck's found_inf
// (DeviceContext::amp_step, the same rule as LossScaler::update). The host learns a step's loss
// and overflow flag only when fit() reports, and then replays the flags through its own
// LossScaler, so the log, checkpoints and --resume see the same numbers as on the CPU.
//
// CUDA graph (TrainerConfig::cuda_graph): after the first full batch has run eagerly (kernels
// created, cuDNN algorithms chosen, the allocator's cache filled), the next step is captured:
// static device buffers hold the batch, the targets and the learning rate; the captured work is
// the whole training graph, the copy of every new state tensor into the (now fixed) state
// buffers, and amp_step. Each later full batch is three small uploads and one cudaGraphLaunch.
// A batch of another size (the last one of an epoch) runs eagerly on the same buffers. When
// something in the step needs the host (a value read back mid-step), capture fails with that
// reason, the trainer keeps running eagerly and says so (cuda_graph_status(), the log).
#include <iostream>
#include <set>

#include "train/trainer.h"
#include "train/trainer_device.h"

namespace oat::train {

namespace {

// Makes the device context current for allocations made here (they follow its stream).
struct Entered {
  explicit Entered(DeviceContext* c) : c_(c) { c_->enter(); }
  ~Entered() { c_->leave(); }
  Entered(const Entered&) = delete;
  Entered& operator=(const Entered&) = delete;
  DeviceContext* c_;
};

}  // namespace


void Trainer::start_device_run() {
  if (tg_.graph.value_info.count(tg_.loss) &&
      tg_.graph.value_info.at(tg_.loss).dtype != DType::F32)
    throw Unsupported(cat("training on ", device_name(cfg_.device), " needs a float32 loss; this "
                          "model's loss '", tg_.loss, "' is ",
                          dtype_name(tg_.graph.value_info.at(tg_.loss).dtype)),
                      "loss");
  dev_ = std::make_unique<DeviceRun>();
  DeviceRun& d = *dev_;
  d.dc = exec_->device_context();
  if (!d.dc) throw Error(cat("the executor for ", device_name(cfg_.device), " has no device context"));
  Entered e(d.dc);
  for (const auto& [name, t] : state_) d.state[name] = d.dc->upload(t);
  const LossScalerState& s = scaler_.state();
  d.amp.scale = d.dc->upload(Tensor::scalar<float>(static_cast<float>(s.scale)));
  d.amp.inv_scale = d.dc->upload(Tensor::scalar<float>(static_cast<float>(1.0 / s.scale)));
  d.amp.step = d.dc->upload(Tensor::scalar<int64_t>(optimizer_step_ + 1));
  d.amp.counters = d.dc->upload(Tensor::from_vector<int64_t>(
      {3}, {s.growth_tracker, s.hysteresis_left, s.skipped_steps}));
  const LossScalerConfig& c = scaler_.config();
  d.rule.check = scaler_.checks_overflow();
  d.rule.dynamic = c.mode == LossScaleMode::Dynamic;
  d.rule.growth = static_cast<float>(c.growth_factor);
  d.rule.backoff = static_cast<float>(c.backoff_factor);
  d.rule.min_scale = static_cast<float>(c.min_scale);
  d.rule.max_scale = static_cast<float>(c.max_scale);
  d.rule.interval = c.growth_interval;
  d.rule.hysteresis = c.hysteresis;
  d.lr = Tensor(DType::F32, {}, cfg_.device);
  d.full_batch = cfg_.batch;
  graph_status_.clear();
  if (!cfg_.cuda_graph) graph_status_ = "off (--no-cuda-graph)";
}

// One run of the training graph on the device state: the loss, found_inf and every new state
// tensor, left on the device.
std::map<std::string, Tensor> Trainer::run_device_graph(const Tensor& x, const Tensor& y,
                                                        const std::map<std::string, Tensor>& extra) {
  DeviceRun& d = *dev_;
  std::map<std::string, Tensor> feeds = d.state;
  feeds[tg_.data_input] = x;
  for (const auto& [name, t] : extra) feeds[name] = t;  // attention masks, token types, ...
  if (!tg_.target.empty()) feeds[tg_.target] = y;
  feeds[tg_.lr] = d.lr;
  feeds[tg_.step] = d.amp.step;
  feeds[tg_.seed] = d.amp.scale;
  if (!tg_.inv_scale.empty()) feeds[tg_.inv_scale] = d.amp.inv_scale;
  std::vector<std::string> fetch = {tg_.loss};
  if (!tg_.found_inf.empty()) fetch.push_back(tg_.found_inf);
  std::set<std::string> donated;  // replaced by the step: updated in place where possible
  for (const auto& [name, next] : tg_.updates) {
    fetch.push_back(next);
    donated.insert(name);
  }
  return exec_->run_resident(feeds, fetch, donated);
}

Trainer::PendingStep Trainer::device_step(const Batch& b, double lr) {
  DeviceRun& d = *dev_;
  PendingStep p;
  p.samples = b.inputs.dim(0);
  p.lr = lr;
  const bool has_target = !tg_.target.empty();
  d.dc->copy_into(Tensor::scalar<float>(static_cast<float>(lr)), d.lr);
  bool extra_fit = true;  // every extra input of this batch has its graph buffer's shape
  for (const auto& [name, t] : b.extra) {
    auto it = d.extra.find(name);
    extra_fit = extra_fit && it != d.extra.end() && it->second.shape() == t.shape();
  }
  if (d.graph && b.inputs.shape() == d.x.shape() &&
      (!has_target || b.targets.shape() == d.y.shape()) && extra_fit) {
    d.dc->copy_into(b.inputs, d.x);
    if (has_target) d.dc->copy_into(b.targets, d.y);
    for (const auto& [name, t] : b.extra) d.dc->copy_into(t, d.extra.at(name));
    d.graph->replay();
    // The replay's outputs are rewritten by the next one: this step's copies.
    Entered e(d.dc);
    p.loss = Tensor(d.loss_out.dtype(), d.loss_out.shape(), cfg_.device);
    d.dc->copy_into(d.loss_out, p.loss);
    if (d.found_out.defined()) {
      p.found_inf = Tensor(DType::Bool, {}, cfg_.device);
      d.dc->copy_into(d.found_out, p.found_inf);
    }
    return p;
  }
  auto out = run_device_graph(b.inputs, b.targets, b.extra);
  for (const auto& [name, next] : tg_.updates) {
    // With a graph the state buffers are fixed (the graph reads them): copy into them.
    if (d.graph) d.dc->copy_into(out.at(next), d.state.at(name));
    else d.state[name] = out.at(next);
  }
  const Tensor* found = tg_.found_inf.empty() ? nullptr : &out.at(tg_.found_inf);
  d.dc->amp_step(d.amp, found, d.rule);
  p.loss = out.at(tg_.loss);
  if (found) p.found_inf = *found;
  if (cfg_.cuda_graph && !d.capture_tried && p.samples == d.full_batch) {
    d.capture_tried = true;
    d.x = Tensor();  // shapes of this (full) batch
    {
      Entered e(d.dc);
      d.x = Tensor(b.inputs.dtype(), b.inputs.shape(), cfg_.device);
      if (has_target) d.y = Tensor(b.targets.dtype(), b.targets.shape(), cfg_.device);
      d.extra.clear();
      for (const auto& [name, t] : b.extra) d.extra[name] = Tensor(t.dtype(), t.shape(), cfg_.device);
    }
    try_capture();
  }
  return p;
}

void Trainer::try_capture() {
  DeviceRun& d = *dev_;
  try {
    d.dc->begin_capture();
    // Recorded, not run: the step just run eagerly is not repeated.
    auto out = run_device_graph(d.x, d.y, d.extra);
    for (const auto& [name, next] : tg_.updates) d.dc->copy_into(out.at(next), d.state.at(name));
    const Tensor* found = tg_.found_inf.empty() ? nullptr : &out.at(tg_.found_inf);
    d.dc->amp_step(d.amp, found, d.rule);
    d.graph = d.dc->end_capture();
    d.loss_out = out.at(tg_.loss);
    if (found) d.found_out = *found;
    graph_status_ = "on";
  } catch (const std::exception& e) {
    d.dc->abort_capture();
    d.graph.reset();
    graph_status_ = cat("off (", e.what(), ")");
    if (cfg_.progress) std::cerr << "CUDA graph: " << graph_status_ << "; running eagerly\n";
  }
}

void Trainer::read_pending(std::vector<PendingStep>& pending) {
  for (PendingStep& p : pending) {
    p.loss = dev_->dc->download(p.loss);
    if (p.found_inf.defined()) p.found_inf = dev_->dc->download(p.found_inf);
  }
}

void Trainer::download_state() {
  for (const auto& [name, t] : dev_->state) state_[name] = dev_->dc->download(t);
}

}  // namespace oat::train
