// Shared by the mixed-precision training tests of composite ops (Einsum, the scatters, LSTM): the
// Trainer configuration of a short CPU fit in FP16 with dynamic loss scaling, and the mean loss
// over the first and last steps of a fit.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "train/trainer.h"

namespace oat::test {

// FP16, dynamic loss scaling, no progress output; shuffling as the caller says.
inline train::TrainerConfig fp16_config(int64_t batch, int64_t epochs, double lr,
                                        bool shuffle = true) {
  train::TrainerConfig cfg;
  cfg.batch = batch;
  cfg.epochs = epochs;
  cfg.lr = lr;
  cfg.shuffle = shuffle;
  cfg.progress = false;
  cfg.graph.precision = DType::F16;
  cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
  return cfg;
}

// The step losses of one fit, and the means of its first and last `window` steps.
struct FitLosses {
  std::vector<double> steps;
  double first = 0, last = 0;
};

inline FitLosses fit_losses(train::Trainer& t, const train::Dataset& data, size_t window = 8) {
  FitLosses f;
  t.on_step = [&](int64_t, double loss) { f.steps.push_back(loss); };
  t.fit(data, nullptr);
  t.on_step = nullptr;
  REQUIRE(f.steps.size() >= window);
  for (size_t i = 0; i < window; ++i) {
    f.first += f.steps[i] / static_cast<double>(window);
    f.last += f.steps[f.steps.size() - window + i] / static_cast<double>(window);
  }
  return f;
}

}  // namespace oat::test
