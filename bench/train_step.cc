// oat_train_step: time and memory of one training step of zoo models, as the trainer runs them.
//
//   oat_train_step [--models mlp,lenet5] [--precision fp32[,fp16,bf16]] [--batch 64]
//                  [--optimizer adam] [--lr 0.001] [--threads 2] [--warmup 20] [--steps 200]
//                  [--data DIR|fashion-mnist|synthetic] [--device cpu|cuda] [--profile K]
//                  [--cuda-graph 0|1] [--cudnn-benchmark 0|1]
//
// Models: any zoo name (models/zoo.h): mlp, lenet5 and transformer take 28x28 samples,
// resnet18-cifar 3x32x32, resnet18 3x224x224 (1000 classes).
//
// --device cuda: the Trainer runs the training graph on the GPU (TrainerConfig::device: its
// state stays there, the step is replayed as a CUDA graph unless --cuda-graph 0) and the memory
// run uses a CUDA executor; fails at once, naming the reason, when no device answers. On a device
// the trainer queues steps and reads their losses only at reports (every log_every steps), where
// the host waits for the device: on_step callbacks come in bursts there. So the bench reports
// every `warmup` steps (log_every = warmup), times from the report after the warm-up to the last
// one (the mean over `steps` is exact: both ends are device syncs) and takes the median over the
// report intervals' per-step means. bench/train_vs_torch_amp.py reads PyTorch's losses at the
// same cadence.
//
// Time: for each model and precision, Trainer::fit for warmup + steps steps (shuffled, seed 0;
// fp16 with dynamic loss scaling, bf16 without, the trainer's defaults). A step is the time
// between two consecutive `on_step` callbacks, so it is everything a user's step costs: feeds,
// forward, loss, backward, optimizer, reading back the new state (batches are cut on the prefetch
// thread, as in a real run). The first `warmup` steps (kernel creation, first-touch allocation)
// are not counted. Data: the IDX folder for models with 28x28 samples (Fashion-MNIST); models
// with another input shape (resnet18-cifar), and every model with --data synthetic, get 16
// batches (at most ~256 MB, at least 2 batches) of seeded uniform [0, 1) samples and labels.
//
// Memory: the same training graph run by an Executor directly on the first batch, whose
// peak_bytes() gives
//   peak_activation_bytes  the most bytes of computed values held at once, leaving out what
//                          is weights rather than activations: the FP32 master side (parameter
//                          gradients, their unscaled / clipped copies, the optimizer's outputs)
//                          and, in fp16/bf16, the working copies of the weights (Casts of
//                          parameters, which PyTorch's autocast also caches). It counts the
//                          forward activations, the activation gradients and the Casts of
//                          activations.
//   peak_computed_bytes    the same with nothing left out.
// Feeds (the batch, the parameters and optimizer state) are never counted. The loss scale of
// this run is the one the timed run ended with, so an fp16 step is not an overflow-skipped one.
//
// Prints one JSON object per (model, precision) on stdout:
//   {"model":"lenet5","precision":"fp32","device":"cpu","input":[1,28,28],"batch":64,
//    "optimizer":"adam","threads":2,"steps":200,"ms_per_step":1.23,"ms_median":1.20,
//    "samples_per_s":52032,"cpu_ms_per_step":1.1,"first_loss":2.3,"last_loss":0.6,
//    "peak_activation_bytes":123,"peak_computed_bytes":456}
// (samples_per_s = batch / mean step time); on stderr, a table of samples/s per model x
// precision and, when several precisions ran, a table of each against the first.
// bench/train_vs_torch.py runs this and the same loop in PyTorch.
//
// --profile K: after timing, runs the training graph directly with the executor's per-node
// observer and prints, on stderr, the mean ms per op type and the K slowest nodes (a node's time
// runs from the previous node's end to its own, as in oat_op_profile; CPU time is the main
// thread's, all of it at 1 thread).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "models/zoo.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "runtime/threads.h"
#include "train/data/idx.h"
#include "train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace train = oat::train;

struct Options {
  std::vector<std::string> models = {"mlp", "lenet5"};
  std::vector<std::string> precisions = {"fp32"};
  int64_t batch = 64;
  std::string optimizer = "adam";
  double lr = 1e-3;
  int threads = 2;
  int64_t warmup = 20;
  int64_t steps = 200;
  std::string data = "fashion-mnist";  // an IDX folder, a named data set, or "synthetic"
  oat::Device device = oat::Device::CPU;
  int profile = 0;  // > 0: print a per-op profile with this many slowest nodes
  int cuda_graph = -1;  // --cuda-graph 0|1 (-1: the trainer's default)
};

int usage() {
  std::cerr << "usage: oat_train_step [--models mlp,lenet5] [--precision fp32,fp16,bf16] "
               "[--batch N] [--optimizer sgd|adam|adamw] [--lr LR] [--threads N] [--warmup N] "
               "[--steps N] [--data DIR|fashion-mnist|synthetic] [--device cpu|cuda] "
               "[--cuda-graph 0|1] [--cudnn-benchmark 0|1] [--profile K]\n";
  return 2;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) r.push_back(item);
  return r;
}

oat::DType parse_precision(const std::string& p) {
  if (p == "fp32") return oat::DType::F32;
  if (p == "fp16") return oat::DType::F16;
  if (p == "bf16") return oat::DType::BF16;
  throw oat::Error(oat::cat("--precision ", p, ": expected fp32, fp16 or bf16"));
}

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The data set for `model`: the IDX training set when its samples fit the model's input, else
// 16 batches (fewer when that exceeds ~256 MB, never fewer than 2) of seeded uniform [0, 1)
// samples with labels below the model's class count.
train::Dataset data_for(const oat::Graph& model, const train::Dataset& idx, int64_t batch) {
  const train::BatchLayout L = train::layout_for(model, train::LossKind::CrossEntropy);
  int64_t per_sample = 1;
  for (int64_t d : L.sample_shape) {
    if (d < 0)
      throw oat::Error("the model's input has a symbolic dimension after the batch; the bench "
                       "needs fixed sample shapes");
    per_sample *= d;
  }
  if (idx.inputs.defined() && idx.inputs.numel() / std::max<int64_t>(1, idx.size()) == per_sample)
    return idx;
  const int64_t batch_bytes = batch * per_sample * static_cast<int64_t>(sizeof(float));
  const int64_t batches = std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(1, batch_bytes), 2, 16);
  const int64_t n = batches * batch;
  oat::Shape shape = {n};
  for (int64_t d : L.sample_shape) shape.push_back(d);
  train::Dataset d{oat::Tensor(oat::DType::F32, shape), oat::Tensor(oat::DType::I64, {n})};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < d.inputs.numel(); ++i) d.inputs.data<float>()[i] = u(rng);
  for (int64_t i = 0; i < n; ++i)
    d.targets.data<int64_t>()[i] = static_cast<int64_t>(rng() % std::max<int64_t>(1, L.num_classes));
  return d;
}

train::TrainingGraphOptions graph_options(const Options& o, const std::string& precision) {
  train::TrainingGraphOptions go;
  go.optimizer.kind = train::parse_optimizer(o.optimizer);
  go.precision = parse_precision(precision);
  go.loss_scaling = go.precision == oat::DType::F16;  // the trainer's default: dynamic for fp16
  return go;
}

// The training graph of `model` run by an Executor directly, step by step, with the feeds the
// trainer gives it (with loss scaling, the scale is `loss_scale`).
class DirectStep {
 public:
  DirectStep(const oat::Graph& model, const train::TrainingGraphOptions& go,
             const train::Dataset& data, int64_t batch, double lr, double loss_scale,
             oat::Device device = oat::Device::CPU)
      : tg_(train::build_training_graph(model, go)),
        layout_(train::layout_for(model, go.loss, tg_.output)),
        exec_(tg_.graph, oat::ExecutorOptions{device}),
        data_(data),
        order_(train::epoch_order(data.size(), 0, 0, true)),
        batch_(batch),
        lr_(lr),
        scale_(go.loss_scaling ? loss_scale : 1.0) {
    for (const auto& [n, next] : tg_.updates) state_[n] = tg_.graph.initializers.at(n);
    fetch_ = {tg_.loss};
    for (const auto& [n, next] : tg_.updates) fetch_.push_back(next);
  }

  oat::Executor& executor() { return exec_; }
  const train::TrainingGraph& graph() const { return tg_; }

  // Step s (0-based) on batch s of the shuffled order.
  void run(int64_t s) {
    const int64_t span = std::max<int64_t>(1, data_.size() - batch_ + 1);
    const int64_t begin = (s * batch_) % span;
    train::Batch b = train::make_batch(data_, layout_, order_, begin, begin + batch_);
    std::map<std::string, oat::Tensor> feeds = state_;
    feeds[tg_.data_input] = b.inputs;
    feeds[tg_.target] = b.targets;
    feeds[tg_.lr] = oat::Tensor::scalar<float>(static_cast<float>(lr_));
    feeds[tg_.step] = oat::Tensor::scalar<int64_t>(s + 1);
    feeds[tg_.seed] = oat::cast_tensor(oat::Tensor::scalar<double>(scale_),
                                       tg_.graph.value_info.at(tg_.loss).dtype);
    if (!tg_.inv_scale.empty())
      feeds[tg_.inv_scale] = oat::Tensor::scalar<float>(static_cast<float>(1.0 / scale_));
    auto out = exec_.run(feeds, fetch_);
    for (const auto& [n, next] : tg_.updates) state_[n] = out.at(next);
  }

  // The values peak_activation_bytes leaves out: parameter gradients, everything the
  // optimizer-side nodes (unscale, clipping, updates) compute, and Casts of the state
  // (parameters, BatchNorm statistics): the working copies of the weights.
  std::set<std::string> weight_side() const {
    std::set<std::string> r;
    for (const auto& [p, g] : tg_.grads) r.insert(g);
    for (const oat::Node& n : tg_.graph.nodes) {
      const bool optimizer = n.op == oat::OpId::AdamUpdate || n.op == oat::OpId::SGDUpdate ||
                             n.op == oat::OpId::MultiAdamUpdate ||
                             n.op == oat::OpId::MultiSGDUpdate ||
                             n.op == oat::OpId::UnscaleAndCheck || n.op == oat::OpId::GlobalNormClip;
      const bool weight_copy = n.op == oat::OpId::Cast && !n.inputs.empty() &&
                               tg_.graph.initializers.count(n.inputs[0]);
      if (optimizer || weight_copy) r.insert(n.outputs.begin(), n.outputs.end());
    }
    return r;
  }

 private:
  train::TrainingGraph tg_;
  train::BatchLayout layout_;
  oat::Executor exec_;
  const train::Dataset& data_;
  std::vector<int64_t> order_;
  int64_t batch_;
  double lr_, scale_;
  std::map<std::string, oat::Tensor> state_;
  std::vector<std::string> fetch_;
};

nlohmann::json bench_model(const std::string& name, const std::string& precision,
                           const Options& o, const train::Dataset& data) {
  const oat::Graph model = oat::models::zoo_model(name, 0);
  train::TrainerConfig cfg;
  cfg.epochs = 1 + (o.warmup + o.steps) * o.batch / std::max<int64_t>(1, data.size());
  cfg.max_steps = o.warmup + o.steps;
  cfg.batch = o.batch;
  cfg.lr = o.lr;
  cfg.progress = false;
  // On a device, reports (where the host waits for the device) every `warmup` steps: see the top.
  const bool deferred = o.device != oat::Device::CPU;
  cfg.log_every = deferred ? o.warmup : cfg.max_steps + 1;
  cfg.graph = graph_options(o, precision);
  if (cfg.graph.loss_scaling) cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
  cfg.device = o.device;
  if (o.cuda_graph >= 0) cfg.cuda_graph = o.cuda_graph != 0;
  train::Trainer trainer(model, cfg);

  std::vector<Clock::time_point> at;  // at[k]: when step k+1 ended
  std::vector<double> cpu_at;          // process CPU seconds (all threads) at the same moments
  std::vector<double> losses;
  at.reserve(cfg.max_steps);
  cpu_at.reserve(cfg.max_steps);
  trainer.on_step = [&](int64_t, double loss) {
    at.push_back(Clock::now());
    cpu_at.push_back(cpu_seconds(CLOCK_PROCESS_CPUTIME_ID));
    losses.push_back(loss);
  };
  trainer.fit(data, nullptr);
  if (static_cast<int64_t>(at.size()) != cfg.max_steps)
    throw oat::Error(oat::cat(name, ": ran ", at.size(), " steps, expected ", cfg.max_steps));

  // Steps warmup+1 .. warmup+steps: from the end of step `warmup` to the end of the last. On a
  // device only the report steps' times are sync points: per-step means between them.
  std::vector<double> ms;
  int64_t prev = o.warmup;
  for (int64_t k = o.warmup + 1; k <= cfg.max_steps; ++k) {
    if (deferred && k % cfg.log_every != 0 && k != cfg.max_steps) continue;
    const double span = std::chrono::duration<double, std::milli>(at[k - 1] - at[prev - 1]).count();
    ms.insert(ms.end(), k - prev, span / static_cast<double>(k - prev));
    prev = k;
  }
  double total = 0;
  for (double t : ms) total += t;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json j;
  j["model"] = name;
  j["precision"] = precision;
  j["device"] = o.device == oat::Device::CUDA ? "cuda" : "cpu";
  j["input"] = train::layout_for(model, train::LossKind::CrossEntropy).sample_shape;
  j["batch"] = o.batch;
  j["optimizer"] = o.optimizer;
  j["threads"] = oat::num_threads();
  j["steps"] = o.steps;
  j["ms_per_step"] = total / static_cast<double>(ms.size());
  j["ms_median"] = sorted[sorted.size() / 2];
  j["samples_per_s"] = 1e3 * static_cast<double>(o.batch) * static_cast<double>(ms.size()) / total;
  // CPU time of the whole process per step (every thread, the prefetch thread included): on a
  // loaded machine wall time includes waiting for a core; this does not.
  j["cpu_ms_per_step"] = 1e3 * (cpu_at.back() - cpu_at[o.warmup - 1]) / static_cast<double>(o.steps);
  j["first_loss"] = losses.front();
  j["last_loss"] = losses.back();
  j["skipped_steps"] = trainer.step() - trainer.optimizer_step();
  if (deferred) j["cuda_graph"] = trainer.cuda_graph_status();

  DirectStep direct(model, cfg.graph, data, o.batch, o.lr, trainer.loss_scaler().scale(), o.device);
  const std::set<std::string> weights = direct.weight_side();
  direct.executor().set_bytes_filter([&](const std::string& v) { return !weights.count(v); });
  direct.run(0);
  j["peak_activation_bytes"] = direct.executor().peak_bytes();
  direct.executor().set_bytes_filter(nullptr);
  direct.run(0);
  j["peak_computed_bytes"] = direct.executor().peak_bytes();
  return j;
}

// Per-op-type and per-node time of `steps` training steps of `name` on its first batches.
void profile_model(const std::string& name, const std::string& precision, const Options& o,
                   const train::Dataset& data) {
  const oat::Graph model = oat::models::zoo_model(name, 0);
  // Loss scale 1: no step is skipped for overflow (the scale does not change the work otherwise).
  DirectStep direct(model, graph_options(o, precision), data, o.batch, o.lr, 1.0);
  std::vector<const oat::Node*> nodes;
  std::vector<double> node_ms, node_cpu_ms;
  size_t call = 0;
  Clock::time_point last;
  double last_cpu = 0;
  bool timing = false;
  direct.executor().set_observer([&](const oat::Node& node, const std::vector<oat::Tensor>&) {
    if (!timing) return;
    const Clock::time_point now = Clock::now();
    const double cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    if (call == nodes.size()) nodes.push_back(&node), node_ms.push_back(0.0), node_cpu_ms.push_back(0.0);
    node_cpu_ms[call] += 1e3 * (cpu - last_cpu);
    node_ms[call++] += std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    last_cpu = cpu;
  });
  double run_ms = 0;
  for (int64_t s = 0; s < o.warmup + o.steps; ++s) {
    timing = s >= o.warmup;
    call = 0;
    const Clock::time_point t0 = Clock::now();
    last = t0;
    last_cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    direct.run(s);
    if (timing) run_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  run_ms /= static_cast<double>(o.steps);
  for (double& t : node_ms) t /= static_cast<double>(o.steps);
  for (double& t : node_cpu_ms) t /= static_cast<double>(o.steps);

  struct OpStat {
    double ms = 0, cpu_ms = 0;
    int nodes = 0;
  };
  std::map<std::string, OpStat> by_op;
  for (size_t i = 0; i < nodes.size(); ++i) {
    OpStat& st = by_op[nodes[i]->op_type];
    st.ms += node_ms[i];
    st.cpu_ms += node_cpu_ms[i];
    st.nodes++;
  }
  std::vector<std::pair<std::string, OpStat>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  std::fprintf(stderr, "%s %s: %.3f ms per executor run (%lld steps, %d threads)\n"
               "  %-28s %8s    %% %8s\n", name.c_str(), precision.c_str(), run_ms,
               static_cast<long long>(o.steps), oat::num_threads(), "op type", "wall ms",
               "main-thread cpu ms");
  for (const auto& [op, st] : ops)
    std::fprintf(stderr, "  %-28s %8.3f %5.1f %8.3f %4d nodes\n", op.c_str(), st.ms,
                 100.0 * st.ms / run_ms, st.cpu_ms, st.nodes);
  std::vector<size_t> idx(nodes.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
  for (int k = 0; k < o.profile && k < static_cast<int>(idx.size()); ++k)
    std::fprintf(stderr, "    %8.3f ms (cpu %8.3f)  %s\n", node_ms[idx[k]], node_cpu_ms[idx[k]],
                 nodes[idx[k]]->describe().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Same OpenMP waiting as the CLI (runtime/threads.h) unless the user says otherwise.
  oat::use_default_openmp_waiting(argv);
  Options o;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--models") o.models = split_commas(v);
    else if (a == "--precision") o.precisions = split_commas(v);
    else if (a == "--batch") o.batch = std::atoll(v.c_str());
    else if (a == "--optimizer") o.optimizer = v;
    else if (a == "--lr") o.lr = std::atof(v.c_str());
    else if (a == "--threads") o.threads = std::atoi(v.c_str());
    else if (a == "--warmup") o.warmup = std::atoll(v.c_str());
    else if (a == "--steps") o.steps = std::atoll(v.c_str());
    else if (a == "--data") o.data = v;
    else if (a == "--profile") o.profile = std::atoi(v.c_str());
    else if (a == "--cuda-graph" && (v == "0" || v == "1")) o.cuda_graph = v == "1";
    else if (a == "--cudnn-benchmark" && (v == "0" || v == "1"))
      oat::cuda::set_cudnn_benchmark(v == "1");
    else if (a == "--device" && (v == "cpu" || v == "cuda"))
      o.device = v == "cuda" ? oat::Device::CUDA : oat::Device::CPU;
    else return usage();
  }
  if (o.profile > 0 && o.device != oat::Device::CPU) {
    std::cerr << "error: --profile times CPU nodes only (the observer copies a device node's "
                 "outputs to the host)\n";
    return 2;
  }
  if (o.batch < 1 || o.warmup < 1 || o.steps < 1) {
    std::cerr << "error: --batch, --warmup and --steps must be at least 1\n";
    return 2;
  }
  try {
    for (const auto& p : o.precisions) parse_precision(p);
    oat::set_num_threads(o.threads);
    if (o.device == oat::Device::CUDA) {
      oat::cuda::require_device();
      std::cerr << "device: " << oat::cuda::describe_device(0) << "\n";
    }
    train::Dataset idx;  // stays empty with --data synthetic
    if (o.data != "synthetic") {
      std::string dir = train::named_dataset_dir(o.data);
      if (dir.empty()) dir = o.data;
      train::IdxFolder f = train::load_idx_folder(dir);
      idx = train::Dataset{f.train.images, f.train.labels};
    }
    std::vector<nlohmann::json> results;
    for (const std::string& name : o.models) {
      const train::Dataset data = data_for(oat::models::zoo_model(name, 0), idx, o.batch);
      for (const std::string& p : o.precisions) {
        results.push_back(bench_model(name, p, o, data));
        std::cout << results.back().dump() << "\n" << std::flush;
        if (o.profile > 0) profile_model(name, p, o, data);
      }
    }
    std::fprintf(stderr, "| model | input | batch | device | precision | samples/s | ms/step |\n"
                 "| --- | --- | ---: | --- | --- | ---: | ---: |\n");
    for (const auto& r : results) {
      std::string input;
      for (const auto& d : r["input"]) input += (input.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
      std::fprintf(stderr, "| %s | %s | %lld | %s | %s | %.1f | %.3f |\n",
                   r["model"].get<std::string>().c_str(), input.c_str(),
                   static_cast<long long>(o.batch), r["device"].get<std::string>().c_str(),
                   r["precision"].get<std::string>().c_str(), r["samples_per_s"].get<double>(),
                   r["ms_per_step"].get<double>());
    }
    if (o.precisions.size() > 1) {
      std::fprintf(stderr, "| model | batch | precision | ms/step | activation MB | vs %s: time | "
                   "activations |\n| --- | ---: | --- | ---: | ---: | ---: | ---: |\n",
                   o.precisions[0].c_str());
      for (const auto& r : results) {
        const nlohmann::json* base = nullptr;
        for (const auto& b : results)
          if (b["model"] == r["model"] && b["precision"] == o.precisions[0]) base = &b;
        std::fprintf(stderr, "| %s | %lld | %s | %.2f | %.2f | %.2fx | %.3fx |\n",
                     r["model"].get<std::string>().c_str(), static_cast<long long>(o.batch),
                     r["precision"].get<std::string>().c_str(), r["ms_per_step"].get<double>(),
                     r["peak_activation_bytes"].get<double>() / 1048576.0,
                     r["ms_per_step"].get<double>() / (*base)["ms_per_step"].get<double>(),
                     r["peak_activation_bytes"].get<double>() /
                         (*base)["peak_activation_bytes"].get<double>());
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
