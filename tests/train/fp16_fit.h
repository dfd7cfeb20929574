// Shared by the mixed-precision training tests of composite ops (Einsum, the scatters, LSTM): the
// Trainer configuration of a short CPU fit in FP16 with dynamic loss scaling, the mean loss over
// the first and last steps of a fit, and a learnable data set (a linear teacher's labels).
#pragma once

#include <doctest/doctest.h>

#include <random>
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

// U(−scale, scale) from `rng`.
inline Tensor random_f32(Shape s, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t(DType::F32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// n inputs of `shape` (per sample, last dim = features) from U(−1, 1), labelled by a random linear
// teacher T [classes, features] on the inputs summed over every dim but the last:
//   label = argmax_c Σ_{positions p} Σ_i x[p, i]·T[c, i]        (seeded: rng(11))
inline train::Dataset teacher_data(int64_t n, const Shape& shape, int64_t classes) {
  std::mt19937 rng(11);
  const int64_t features = shape.back();
  const Tensor t = random_f32({classes, features}, 1.0f, rng);
  Shape full = {n};
  full.insert(full.end(), shape.begin(), shape.end());
  train::Dataset d{random_f32(full, 1.0f, rng), Tensor(DType::I64, {n})};
  const int64_t per = d.inputs.numel() / n, positions = per / features;
  for (int64_t b = 0; b < n; ++b) {
    int64_t best = 0;
    double best_v = -1e30;
    for (int64_t c = 0; c < classes; ++c) {
      double v = 0;
      for (int64_t p = 0; p < positions; ++p)
        for (int64_t i = 0; i < features; ++i)
          v += d.inputs.data<float>()[b * per + p * features + i] * t.data<float>()[c * features + i];
      if (v > best_v) best_v = v, best = c;
    }
    d.targets.data<int64_t>()[b] = best;
  }
  return d;
}

}  // namespace oat::test
