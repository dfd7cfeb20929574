// The loss scaler of mixed-precision training (PyTorch's torch.cuda.amp.GradScaler, plus
// DeepSpeed's hysteresis).
//
// The backward pass starts from `scale` instead of 1, so small gradients survive FP16 (whose
// smallest subnormal is 2⁻²⁴ ≈ 6e-8); UnscaleAndCheck multiplies every gradient by 1/scale and
// reports whether any is Inf/NaN. Then, per step:
//
//   dynamic:  overflow ⇒ the step is skipped; growth_tracker = 0; hysteresis_left −= 1 and, when it
//             was already 1, scale = max(scale·backoff, min_scale)  (hysteresis 1 = PyTorch: back
//             off on every overflow; h > 1 = DeepSpeed: back off only after h overflows in a row)
//             clean    ⇒ hysteresis_left = hysteresis; growth_tracker += 1 and, when it reaches
//             growth_interval, scale = min(scale·growth, max_scale) and growth_tracker = 0
//   static:   scale fixed; an overflowing step is still skipped (an Inf would reach the weights)
//   none:     scale 1, no check (the training graph has no UnscaleAndCheck node); every step applies
//
// Defaults are PyTorch's: init 65536 (2¹⁶), growth 2, backoff 0.5, interval 2000.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace oat::train {

enum class LossScaleMode { Dynamic, Static, None };
const char* loss_scale_mode_name(LossScaleMode m);  // "dynamic", "static", "none"

struct LossScalerConfig {
  LossScaleMode mode = LossScaleMode::None;
  double init_scale = 65536.0;  // static: the scale
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  double min_scale = 0.0;  // 0: no lower bound
  double max_scale = std::numeric_limits<float>::max();  // the scale is fed as FP32
  int64_t hysteresis = 1;
};

// Sets `c.mode` (and for a number, the static scale) from --loss-scale's text: "dynamic", "none"
// or a positive number. Throws Error naming the value otherwise.
void parse_loss_scale(const std::string& text, LossScalerConfig& c);

struct LossScalerState {
  double scale = 1.0;
  int64_t growth_tracker = 0;   // clean steps since the last growth or overflow
  int64_t hysteresis_left = 1;  // overflows still tolerated before backing off
  int64_t skipped_steps = 0;    // overflowing steps in all
};

class LossScaler {
 public:
  // Throws Error naming the option when the configuration is out of range (growth_factor ≤ 1,
  // backoff_factor outside (0, 1), growth_interval < 1, hysteresis < 1, init_scale outside
  // [min_scale, max_scale] ...).
  explicit LossScaler(const LossScalerConfig& config = {});

  const LossScalerConfig& config() const { return config_; }
  const LossScalerState& state() const { return state_; }
  double scale() const { return state_.scale; }
  double inv_scale() const { return 1.0 / state_.scale; }
  // Whether steps are checked for Inf/NaN (the training graph then needs UnscaleAndCheck).
  bool checks_overflow() const { return config_.mode != LossScaleMode::None; }

  // Records one step's outcome and adjusts the scale; returns whether the step was applied
  // (false: it overflowed and the optimizer must leave weights and state untouched).
  bool update(bool found_inf);

  // The state as a JSON object (for checkpoint.json), and back. load_json throws Error naming
  // `where` on a malformed object or one written for another mode.
  std::string to_json() const;
  void load_json(const std::string& json, const std::string& where);

 private:
  LossScalerConfig config_;
  LossScalerState state_;
};

}  // namespace oat::train
