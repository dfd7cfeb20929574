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
// The learning rate (F32) and Adam's step (I64) are device scalars read by the kernels, so a
// captured CUDA graph replays with the values of each step (nothing is baked into launch
// arguments) and no host synchronisation is needed.
struct SgdParams {
  const float* lr;
  float momentum, dampening, weight_decay;
  bool nesterov;
};
void launch_sgd(const float* p, const void* g, int g_type, const float* v, float* p_out,
                float* v_out, void* low, int low_type, int64_t n, SgdParams prm, const bool* skip,
                cudaStream_t s);

struct AdamParams {
  const float* lr;      // device scalar
  const int64_t* step;  // device scalar t ≥ 1 (applied updates so far + 1)
  float beta1, beta2, eps;
  float weight_decay;   // λ
  bool decoupled;       // AdamW: P·(1 − lr·λ); Adam: λ·P added to the gradient
};
void launch_adam(const float* p, const void* g, int g_type, const float* m, const float* v,
                 float* p_out, float* m_out, float* v_out, void* low, int low_type, int64_t n,
                 AdamParams prm, cudaStream_t s, const bool* skip);

// One parameter of a multi-tensor update (MultiSGDUpdate / MultiAdamUpdate): the pointers of
// launch_sgd / launch_adam (m, mo: Adam's first moment; v, vo: Adam's second moment or SGD's
// velocity, null without momentum; low: the working copy or null).
struct UpdateEntry {
  const float* p;
  const void* g;
  const float* m;
  const float* v;
  float* po;
  float* mo;
  float* vo;
  void* low;
  int64_t n;
  int64_t first_block;  // prefix sum of the blocks before this entry
  int g_type, low_type;
};
constexpr int64_t kUpdateChunk = 4096;  // elements per block

// One launch over every entry of the device table (total_blocks = Σ ⌈n/kUpdateChunk⌉): each
// element updated exactly as by launch_sgd / launch_adam.
void launch_multi_sgd(const UpdateEntry* table, int entries, int64_t total_blocks, SgdParams prm,
                      const bool* skip, cudaStream_t s);
void launch_multi_adam(const UpdateEntry* table, int entries, int64_t total_blocks,
                       AdamParams prm, const bool* skip, cudaStream_t s);

// GlobalNormClip's device half: from per-tensor sums of squares `partial` [count] and the device
// scalar max_norm: *norm = √Σ partial, *coef = min(1, max_norm / (norm + 1e-6)).
void launch_clip_coef(const float* partial, int count, const float* max_norm, float* norm,
                      float* coef, cudaStream_t s);
// y = x · *coef over n floats.
void launch_scale_by(const float* x, const float* coef, float* y, int64_t n, cudaStream_t s);

// The step bookkeeping of a training run on the device (DeviceAmpState in runtime/kernel.h;
// torch.amp's _amp_update_scale_ plus Adam's step and DeepSpeed's hysteresis), one thread:
//   no check:  *step += 1
//   overflow:  skipped += 1; dynamic: growth = 0 and (hyst ≤ 1 ? scale = max(scale·backoff, min)
//              : hyst −= 1)
//   clean:     *step += 1; dynamic: hyst = hysteresis, growth += 1 and at `interval`
//              scale = min(scale·growth, max), growth = 0
//   always:    *inv_scale = 1 / *scale
// counters = {growth_tracker, hysteresis_left, skipped_steps}; found_inf may be null (no check).
struct AmpStepRule {
  bool check, dynamic;
  float growth, backoff, min_scale, max_scale;
  int64_t interval, hysteresis;
};
void launch_amp_step(float* scale, float* inv_scale, int64_t* step, int64_t* counters,
                     const bool* found_inf, AmpStepRule rule, cudaStream_t s);

}  // namespace oat::cuda
