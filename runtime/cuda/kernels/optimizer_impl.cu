#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/optimizer_impl.h"

namespace oat::cuda {

namespace {

template <class T>
__device__ __forceinline__ float load(const void* p, int64_t i) {
  return to_float(static_cast<const T*>(p)[i]);
}

__device__ __forceinline__ float load_any(const void* p, int type, int64_t i) {
  switch (static_cast<ElemType>(type)) {
    case ElemType::F16: return load<__half>(p, i);
    case ElemType::BF16: return load<__nv_bfloat16>(p, i);
    default: return load<float>(p, i);
  }
}

__device__ __forceinline__ void store_low(void* p, int type, int64_t i, float v) {
  if (static_cast<ElemType>(type) == ElemType::BF16)
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  else
    static_cast<__half*>(p)[i] = __float2half_rn(v);
}

// The entry of a multi-tensor table owning this block: the last with first_block <= blockIdx.x
// (binary search).
template <class E>
__device__ __forceinline__ const E& entry_of_block(const E* table, int entries) {
  int lo = 0, hi = entries - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table[mid].first_block <= blockIdx.x) lo = mid;
    else hi = mid - 1;
  }
  return table[lo];
}

// Elements [begin, end) of entry e that this block owns: chunk blockIdx.x − e.first_block.
struct Chunk {
  int64_t begin, end;
};
template <class E>
__device__ __forceinline__ Chunk chunk_of_block(const E& e, int64_t chunk) {
  const int64_t begin = (blockIdx.x - e.first_block) * chunk;
  return {begin, begin + chunk < e.n ? begin + chunk : e.n};
}

__global__ void unscale_kernel(const UnscaleEntry* table, int entries, const float* inv_scale,
                               bool* found_inf) {
  const UnscaleEntry e = entry_of_block(table, entries);
  const float inv = *inv_scale;
  const Chunk c = chunk_of_block(e, kUnscaleChunk);
  bool bad = false;
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const float v = load_any(e.src, e.type, i) * inv;
    e.dst[i] = v;
    bad |= !isfinite(v);
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *found_inf = true;
}

// Element i of an SGD update (vo null: no momentum); every input read before its output is
// written, so outputs may be the inputs' storage.
__device__ __forceinline__ void sgd_at(int64_t i, const float* p, const void* g, int g_type,
                                       const float* v, float* po, float* vo, void* low,
                                       int low_type, const SgdParams& prm, float lr,
                                       bool skipped) {
  float pn = p[i];
  if (!skipped) {
    float d = load_any(g, g_type, i) + prm.weight_decay * p[i];
    if (vo) {
      const float vn = prm.momentum * v[i] + (1.f - prm.dampening) * d;
      vo[i] = vn;
      d = prm.nesterov ? d + prm.momentum * vn : vn;
    }
    pn = p[i] - lr * d;
  } else if (vo) {
    vo[i] = v[i];
  }
  po[i] = pn;
  if (low) store_low(low, low_type, i, pn);
}

// Adam's per-step coefficients, once per block by thread 0 (two double pows per thread would cost
// about as much as the update's memory traffic), in double as the CPU kernel does:
// step_size = lr / (1 − β₁ᵗ), inv_sqrt_c2 = 1 / √(1 − β₂ᵗ), decay = 1 − lr·λ (AdamW) or 1.
struct AdamCoef {
  float step_size, inv_sqrt_c2, decay, l2;  // l2 = λ (Adam) or 0
};
__device__ AdamCoef adam_coef(const AdamParams& prm) {
  __shared__ float coef[3];
  if (threadIdx.x == 0) {
    const double lr = *prm.lr, t = static_cast<double>(*prm.step);
    coef[0] = static_cast<float>(lr / (1.0 - pow(static_cast<double>(prm.beta1), t)));
    coef[1] = static_cast<float>(1.0 / sqrt(1.0 - pow(static_cast<double>(prm.beta2), t)));
    coef[2] = static_cast<float>(prm.decoupled ? 1.0 - lr * prm.weight_decay : 1.0);
  }
  __syncthreads();
  return {coef[0], coef[1], coef[2], prm.decoupled ? 0.f : prm.weight_decay};
}

// Element i of an Adam/AdamW update; outputs may be the inputs' storage, as for sgd_at.
__device__ __forceinline__ void adam_at(int64_t i, const float* p, const void* g, int g_type,
                                        const float* m, const float* v, float* po, float* mo,
                                        float* vo, void* low, int low_type,
                                        const AdamParams& prm, const AdamCoef& c, bool skipped) {
  float pn = p[i], mn = m[i], vn = v[i];
  if (!skipped) {
    const float gr = load_any(g, g_type, i) + c.l2 * p[i];
    mn = prm.beta1 * m[i] + (1.f - prm.beta1) * gr;
    vn = prm.beta2 * v[i] + (1.f - prm.beta2) * gr * gr;
    pn = p[i] * c.decay - c.step_size * mn / (sqrtf(vn) * c.inv_sqrt_c2 + prm.eps);
  }
  po[i] = pn;
  mo[i] = mn;
  vo[i] = vn;
  if (low) store_low(low, low_type, i, pn);
}

__global__ void sgd_kernel(const float* p, const void* g, int g_type, const float* v, float* po,
                           float* vo, void* low, int low_type, int64_t n, SgdParams prm,
                           const bool* skip) {
  const bool skipped = skip && *skip;
  const float lr = *prm.lr;
  OAT_GRID_STRIDE_LOOP(i, n) { sgd_at(i, p, g, g_type, v, po, vo, low, low_type, prm, lr, skipped); }
}

__global__ void adam_kernel(const float* p, const void* g, int g_type, const float* m,
                            const float* v, float* po, float* mo, float* vo, void* low,
                            int low_type, int64_t n, AdamParams prm, const bool* skip) {
  const bool skipped = skip && *skip;
  const AdamCoef c = adam_coef(prm);
  OAT_GRID_STRIDE_LOOP(i, n) {
    adam_at(i, p, g, g_type, m, v, po, mo, vo, low, low_type, prm, c, skipped);
  }
}

// Multi-tensor forms: block b updates chunk b − first_block of its entry.
__global__ void multi_sgd_kernel(const UpdateEntry* table, int entries, SgdParams prm,
                                 const bool* skip) {
  const UpdateEntry e = entry_of_block(table, entries);
  const bool skipped = skip && *skip;
  const float lr = *prm.lr;
  const Chunk r = chunk_of_block(e, kUpdateChunk);
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x)
    sgd_at(i, e.p, e.g, e.g_type, e.v, e.po, e.vo, e.low, e.low_type, prm, lr, skipped);
}

__global__ void multi_adam_kernel(const UpdateEntry* table, int entries, AdamParams prm,
                                  const bool* skip) {
  const UpdateEntry e = entry_of_block(table, entries);
  const bool skipped = skip && *skip;
  const AdamCoef c = adam_coef(prm);
  const Chunk r = chunk_of_block(e, kUpdateChunk);
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x)
    adam_at(i, e.p, e.g, e.g_type, e.m, e.v, e.po, e.mo, e.vo, e.low, e.low_type, prm, c,
            skipped);
}

__global__ void amp_step_kernel(float* scale, float* inv_scale, int64_t* step,
                                int64_t* counters, const bool* found_inf, AmpStepRule r) {
  float s = *scale;
  const bool overflow = r.check && found_inf && *found_inf;
  if (!overflow) {
    *step += 1;
    if (r.dynamic) {
      counters[1] = r.hysteresis;
      if (++counters[0] >= r.interval) {
        s = fminf(s * r.growth, r.max_scale);
        counters[0] = 0;
      }
    }
  } else {
    counters[2] += 1;
    if (r.dynamic) {
      counters[0] = 0;
      if (counters[1] <= 1) s = fmaxf(s * r.backoff, r.min_scale);
      else counters[1] -= 1;
    }
  }
  *scale = s;
  *inv_scale = 1.f / s;
}

__global__ void clip_coef_kernel(const float* partial, int count, const float* max_norm,
                                 float* norm, float* coef) {
  float s = 0.f;
  for (int i = 0; i < count; ++i) s += partial[i];
  const float nrm = sqrtf(s);
  *norm = nrm;
  *coef = fminf(1.f, *max_norm / (nrm + 1e-6f));
}

__global__ void scale_by_kernel(const float* x, const float* coef, float* y, int64_t n) {
  const float c = *coef;
  OAT_GRID_STRIDE_LOOP(i, n) { y[i] = x[i] * c; }
}

}  // namespace

void launch_clip_coef(const float* partial, int count, const float* max_norm, float* norm,
                      float* coef, cudaStream_t s) {
  clip_coef_kernel<<<1, 1, 0, s>>>(partial, count, max_norm, norm, coef);
  CUDA_CHECK_LAUNCH();
}

void launch_scale_by(const float* x, const float* coef, float* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  scale_by_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, coef, y, n);
  CUDA_CHECK_LAUNCH();
}

void launch_unscale(const UnscaleEntry* table, int entries, int64_t total_blocks,
                    const float* inv_scale, bool* found_inf, cudaStream_t s) {
  if (entries == 0 || total_blocks == 0) return;
  unscale_kernel<<<static_cast<unsigned>(total_blocks), kThreads, 0, s>>>(table, entries,
                                                                          inv_scale, found_inf);
  CUDA_CHECK_LAUNCH();
}

void launch_sgd(const float* p, const void* g, int g_type, const float* v, float* p_out,
                float* v_out, void* low, int low_type, int64_t n, SgdParams prm, const bool* skip,
                cudaStream_t s) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, g_type, v, p_out, v_out, low, low_type, n,
                                                prm, skip);
  CUDA_CHECK_LAUNCH();
}

void launch_adam(const float* p, const void* g, int g_type, const float* m, const float* v,
                 float* p_out, float* m_out, float* v_out, void* low, int low_type, int64_t n,
                 AdamParams prm, cudaStream_t s, const bool* skip) {
  if (n == 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, g, g_type, m, v, p_out, m_out, v_out, low,
                                                 low_type, n, prm, skip);
  CUDA_CHECK_LAUNCH();
}

void launch_multi_sgd(const UpdateEntry* table, int entries, int64_t total_blocks, SgdParams prm,
                      const bool* skip, cudaStream_t s) {
  if (entries == 0 || total_blocks == 0) return;
  multi_sgd_kernel<<<static_cast<unsigned>(total_blocks), kThreads, 0, s>>>(table, entries, prm,
                                                                            skip);
  CUDA_CHECK_LAUNCH();
}

void launch_multi_adam(const UpdateEntry* table, int entries, int64_t total_blocks,
                       AdamParams prm, const bool* skip, cudaStream_t s) {
  if (entries == 0 || total_blocks == 0) return;
  multi_adam_kernel<<<static_cast<unsigned>(total_blocks), kThreads, 0, s>>>(table, entries, prm,
                                                                             skip);
  CUDA_CHECK_LAUNCH();
}

void launch_amp_step(float* scale, float* inv_scale, int64_t* step, int64_t* counters,
                     const bool* found_inf, AmpStepRule rule, cudaStream_t s) {
  amp_step_kernel<<<1, 1, 0, s>>>(scale, inv_scale, step, counters, found_inf, rule);
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
