// oat_train_step: milliseconds per training step of zoo models, as the trainer runs them.
//
//   oat_train_step [--models mlp,lenet5] [--batch 64] [--optimizer adam] [--lr 0.001]
//                  [--threads 2] [--warmup 20] [--steps 200] [--data DIR|fashion-mnist]
//
// For each model: Trainer::fit on the real data set (shuffled, seed 0) for warmup + steps steps;
// a step is the time between two consecutive `on_step` callbacks, so it is everything a user's
// step costs: feeds, forward, loss, backward, optimizer, reading back the new state (batches are
// cut on the prefetch thread, as in a real run). The first `warmup` steps (kernel creation,
// first-touch allocation) are not counted. Prints one JSON object per model on stdout:
//   {"model":"lenet5","batch":64,"optimizer":"adam","threads":2,"steps":200,
//    "ms_per_step":1.23,"ms_median":1.20,"first_loss":2.3,"last_loss":0.6}
// bench/train_vs_torch.py runs this and the same loop in PyTorch.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "models/zoo.h"
#include "runtime/threads.h"
#include "train/data/idx.h"
#include "train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> models = {"mlp", "lenet5"};
  int64_t batch = 64;
  std::string optimizer = "adam";
  double lr = 1e-3;
  int threads = 2;
  int64_t warmup = 20;
  int64_t steps = 200;
  std::string data = "fashion-mnist";
};

int usage() {
  std::cerr << "usage: oat_train_step [--models mlp,lenet5] [--batch N] [--optimizer sgd|adam|adamw]"
               " [--lr LR] [--threads N] [--warmup N] [--steps N] [--data DIR|fashion-mnist]\n";
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

nlohmann::json bench_model(const std::string& name, const Options& o,
                           const oat::train::Dataset& data) {
  const oat::Graph model = oat::models::zoo_model(name, 0);
  oat::train::TrainerConfig cfg;
  cfg.epochs = 1 + (o.warmup + o.steps) * o.batch / std::max<int64_t>(1, data.size());
  cfg.max_steps = o.warmup + o.steps;
  cfg.batch = o.batch;
  cfg.lr = o.lr;
  cfg.progress = false;
  cfg.log_every = cfg.max_steps + 1;
  cfg.graph.optimizer.kind = oat::train::parse_optimizer(o.optimizer);
  oat::train::Trainer trainer(model, cfg);

  std::vector<Clock::time_point> at;  // at[k]: when step k+1 ended
  std::vector<double> losses;
  at.reserve(cfg.max_steps);
  trainer.on_step = [&](int64_t, double loss) {
    at.push_back(Clock::now());
    losses.push_back(loss);
  };
  trainer.fit(data, nullptr);
  if (static_cast<int64_t>(at.size()) != cfg.max_steps)
    throw oat::Error(oat::cat(name, ": ran ", at.size(), " steps, expected ", cfg.max_steps));

  // Steps warmup+1 .. warmup+steps: from the end of step `warmup` to the end of the last.
  std::vector<double> ms;
  for (int64_t k = o.warmup; k < cfg.max_steps; ++k)
    ms.push_back(std::chrono::duration<double, std::milli>(at[k] - at[k - 1]).count());
  double total = 0;
  for (double t : ms) total += t;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json j;
  j["model"] = name;
  j["batch"] = o.batch;
  j["optimizer"] = o.optimizer;
  j["threads"] = oat::num_threads();
  j["steps"] = o.steps;
  j["ms_per_step"] = total / static_cast<double>(ms.size());
  j["ms_median"] = sorted[sorted.size() / 2];
  j["first_loss"] = losses.front();
  j["last_loss"] = losses.back();
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  // Same OpenMP wait policy as the CLI (cli/main.cc): idle threads sleep unless the user says
  // otherwise. libgomp reads it at start-up, hence the re-exec.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
  }
  Options o;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--models") o.models = split_commas(v);
    else if (a == "--batch") o.batch = std::atoll(v.c_str());
    else if (a == "--optimizer") o.optimizer = v;
    else if (a == "--lr") o.lr = std::atof(v.c_str());
    else if (a == "--threads") o.threads = std::atoi(v.c_str());
    else if (a == "--warmup") o.warmup = std::atoll(v.c_str());
    else if (a == "--steps") o.steps = std::atoll(v.c_str());
    else if (a == "--data") o.data = v;
    else return usage();
  }
  if (o.batch < 1 || o.warmup < 1 || o.steps < 1) {
    std::cerr << "error: --batch, --warmup and --steps must be at least 1\n";
    return 2;
  }
  try {
    oat::set_num_threads(o.threads);
    std::string dir = oat::train::named_dataset_dir(o.data);
    if (dir.empty()) dir = o.data;
    oat::train::IdxFolder f = oat::train::load_idx_folder(dir);
    const oat::train::Dataset train{f.train.images, f.train.labels};
    for (const std::string& name : o.models)
      std::cout << bench_model(name, o, train).dump() << "\n" << std::flush;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
