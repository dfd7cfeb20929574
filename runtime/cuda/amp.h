// Mixed-precision helpers of the CUDA backend that are not graph ops.
#pragma once

#include <cstdint>
#include <limits>

#include "runtime/kernel.h"

namespace oat::cuda {

// PyTorch's GradScaler defaults.
struct LossScaleRule {
  float growth = 2.0f;
  float backoff = 0.5f;
  int32_t interval = 2000;
  float min_scale = 1.0f;
  float max_scale = std::numeric_limits<float>::max();
};

// The dynamic loss scale updated on the device from UnscaleAndCheck's found_inf, ordered on the
// context's stream, with no host synchronisation: overflow ⇒ scale ·= backoff and the clean-step
// count resets; `interval` clean steps in a row ⇒ scale ·= growth; clamped to [min, max];
// inv_scale = 1 / scale (the next UnscaleAndCheck's input). All four are device scalars:
// scale, inv_scale F32, clean_steps I32, found_inf Bool.
void update_loss_scale(DeviceContext& dc, Tensor& scale, Tensor& inv_scale, Tensor& clean_steps,
                       const Tensor& found_inf, const LossScaleRule& rule = {});

}  // namespace oat::cuda
