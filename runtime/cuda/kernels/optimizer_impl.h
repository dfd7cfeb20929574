// Launchers of the fused mixed-precision kernels (optimizer_impl.cu).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// One gradient of a multi-tensor unscale: src (F32/F16/BF16, n elements) -> dst (F32).
struct UnscaleEntry {
  const void* src;
  float* dst;
  int64_t n;
  int64_t first_block;  // prefix sum of the blocks before this entry
  int type;             // ElemType of src
  int pad_;
};
constexpr int64_t kUnscaleChunk = 4096;  // elements per block

// One launch over every entry (the table is in device memory): dst = src · *inv_scale, and
// *found_inf = true when any dst element is Inf or NaN (the caller zeroes it first).
void launch_unscale(const UnscaleEntry* table, int entries, int64_t total_blocks,
                    const float* inv_scale, bool* found_inf, cudaStream_t s);

// Fused updates on FP32 masters (see runtime/cpu/kernels/optimizer.cc for the formulas). When
// *skip (device flag, may be null) is true every output is a copy of its input. `low`, when not
// null, receives P' rounded to low_type (F16/BF16): the working copy of FP16 nodes.
struct SgdParams {
  float lr, momentum, dampening, weight_decay;
  bool nesterov;
};
void launch_sgd(const float* p, const void* g, int g_type, const float* v, float* p_out,
                float* v_out, void* low, int low_type, int64_t n, SgdParams prm, const bool* skip,
                cudaStream_t s);

struct AdamParams {
  float beta1, beta2, eps;
  float step_size;    // lr / (1 − β₁ᵗ)
  float inv_sqrt_c2;  // 1 / √(1 − β₂ᵗ)
  float decay;        // AdamW: 1 − lr·λ, else 1
  float l2;           // Adam: λ, else 0
};
void launch_adam(const float* p, const void* g, int g_type, const float* m, const float* v,
                 float* p_out, float* m_out, float* v_out, void* low, int low_type, int64_t n,
                 AdamParams prm, cudaStream_t s, const bool* skip);

// GlobalNormClip's device half: from per-tensor sums of squares `partial` [count] and the device
// scalar max_norm: *norm = √Σ partial, *coef = min(1, max_norm / (norm + 1e-6)).
void launch_clip_coef(const float* partial, int count, const float* max_norm, float* norm,
                      float* coef, cudaStream_t s);
// y = x · *coef over n floats.
void launch_scale_by(const float* x, const float* coef, float* y, int64_t n, cudaStream_t s);

// The dynamic loss scale on the device (torch.amp's _amp_update_scale_): on overflow
// scale ·= backoff and the clean-step count resets; after `interval` clean steps in a row
// scale ·= growth; the result is clamped to [min_scale, max_scale]; inv_scale = 1 / scale.
void launch_update_scale(float* scale, float* inv_scale, int32_t* clean_steps,
                         const bool* found_inf, float growth, float backoff, int32_t interval,
                         float min_scale, float max_scale, cudaStream_t s);

}  // namespace oat::cuda
