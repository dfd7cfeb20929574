#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/loss_impl.h"

namespace oat::cuda {

namespace {

// w_j, or 0 for an ignored (or out-of-range) target.
template <class T, class I>
__device__ __forceinline__ float weight_of(const I* tgt, const T* weight, int64_t j, LossShape s,
                                           int64_t* t_out) {
  const int64_t t = static_cast<int64_t>(tgt[j]);
  *t_out = t;
  if ((s.has_ignore && t == s.ignore_index) || t < 0 || t >= s.C) return 0.f;
  return weight ? to_float(weight[t]) : 1.f;
}

template <class T, class I>
__global__ void nll_none_kernel(const T* lp, const I* tgt, const T* weight, T* loss, LossShape s) {
  OAT_GRID_STRIDE_LOOP(j, s.N * s.D) {
    int64_t t;
    const float w = weight_of(tgt, weight, j, s, &t);
    const int64_t n = j / s.D, d = j - n * s.D;
    loss[j] = from_float<T>(w == 0.f ? 0.f : -to_float(lp[(n * s.C + t) * s.D + d]) * w);
  }
}

// One block: Σ loss_j and Σ w_j, then sum or mean.
template <class T, class I>
__global__ void nll_reduce_kernel(const T* lp, const I* tgt, const T* weight, T* loss, LossShape s) {
  float sum = 0.f, wsum = 0.f;
  for (int64_t j = threadIdx.x; j < s.N * s.D; j += blockDim.x) {
    int64_t t;
    const float w = weight_of(tgt, weight, j, s, &t);
    if (w == 0.f) continue;
    const int64_t n = j / s.D, d = j - n * s.D;
    sum += -to_float(lp[(n * s.C + t) * s.D + d]) * w;
    wsum += w;
  }
  sum = block_sum(sum);
  wsum = block_sum(wsum);
  if (threadIdx.x == 0)
    *loss = from_float<T>(s.reduction == LossReduction::Mean ? sum / wsum : sum);
}

template <class T, class I>
__global__ void weight_sum_kernel(const I* tgt, const T* weight, float* out, LossShape s) {
  float wsum = 0.f;
  for (int64_t j = threadIdx.x; j < s.N * s.D; j += blockDim.x) {
    int64_t t;
    wsum += weight_of(tgt, weight, j, s, &t);
  }
  wsum = block_sum(wsum);
  if (threadIdx.x == 0) *out = wsum;
}

// dX over [N, C, D]. kIndex32 (N·C·D < 2^31, the common case): the (n, c, d) digits by 32-bit
// multiply-and-shift division (IndexDivider) instead of three 64-bit divisions per element, which
// would make the kernel compute-bound on a language model's [tokens, vocabulary] logits.
template <class T, class I, bool kIndex32>
__global__ void nll_backward_kernel(const T* dloss, bool dloss_scalar, const T* lp, bool softmax,
                                    const I* tgt, const T* weight, T* dx, const float* nu,
                                    LossShape s, IndexDivider div_d, IndexDivider div_c) {
  OAT_GRID_STRIDE_LOOP(e, s.N * s.C * s.D) {
    int64_t n, c, d;
    if constexpr (kIndex32) {
      const uint32_t e32 = static_cast<uint32_t>(e), q = div_d.div(e32), m = div_c.div(q);
      d = e32 - q * div_d.divisor;
      c = q - m * div_c.divisor;
      n = m;
    } else {
      d = e % s.D;
      c = (e / s.D) % s.C;
      n = e / (s.C * s.D);
    }
    const int64_t j = n * s.D + d;
    int64_t t;
    const float w = weight_of(tgt, weight, j, s, &t);
    const float norm = nu ? *nu : 1.f;
    float g = 0.f;
    if (w != 0.f && norm != 0.f) {
      const float dl = to_float(dloss[dloss_scalar ? 0 : j]);
      const float p = softmax ? expf(to_float(lp[e])) : 0.f;
      g = (p - (c == t ? 1.f : 0.f)) * w * dl / norm;
    }
    dx[e] = from_float<T>(g);
  }
}

template <class F>
void dispatch_target(bool i64, F&& f) {
  if (i64) f(int64_t{});
  else f(int32_t{});
}

}  // namespace

void launch_nll_forward(ElemType t, const void* log_prob, const void* target, bool target_i64,
                        const void* weight, void* loss, const LossShape& s, cudaStream_t st) {
  dispatch_float(t, "loss", [&](auto tag) {
    using T = decltype(tag);
    dispatch_target(target_i64, [&](auto itag) {
      using I = decltype(itag);
      const T* lp = static_cast<const T*>(log_prob);
      const I* tg = static_cast<const I*>(target);
      const T* w = static_cast<const T*>(weight);
      if (s.reduction == LossReduction::None)
        nll_none_kernel<T, I><<<blocks_for(s.N * s.D), kThreads, 0, st>>>(lp, tg, w,
                                                                          static_cast<T*>(loss), s);
      else
        nll_reduce_kernel<T, I><<<1, kThreads, 0, st>>>(lp, tg, w, static_cast<T*>(loss), s);
    });
  });
  CUDA_CHECK_LAUNCH();
}

void launch_nll_backward(ElemType t, const void* dloss, bool dloss_scalar, const void* log_prob,
                         bool softmax, const void* target, bool target_i64, const void* weight,
                         void* dx, float* scratch, const LossShape& s, cudaStream_t st) {
  const int64_t n = s.N * s.C * s.D;
  dispatch_float(t, "loss gradient", [&](auto tag) {
    using T = decltype(tag);
    dispatch_target(target_i64, [&](auto itag) {
      using I = decltype(itag);
      const I* tg = static_cast<const I*>(target);
      const T* w = static_cast<const T*>(weight);
      const bool mean = s.reduction == LossReduction::Mean;
      if (mean) weight_sum_kernel<T, I><<<1, kThreads, 0, st>>>(tg, w, scratch, s);
      if (n <= 0) return;
      const T* dl = static_cast<const T*>(dloss);
      const T* lp = static_cast<const T*>(log_prob);
      T* out = static_cast<T*>(dx);
      float* nu = mean ? scratch : nullptr;
      if (n < (int64_t{1} << 31))
        nll_backward_kernel<T, I, true><<<blocks_for(n), kThreads, 0, st>>>(
            dl, dloss_scalar, lp, softmax, tg, w, out, nu, s,
            IndexDivider(static_cast<uint32_t>(s.D)), IndexDivider(static_cast<uint32_t>(s.C)));
      else
        nll_backward_kernel<T, I, false><<<blocks_for(n), kThreads, 0, st>>>(
            dl, dloss_scalar, lp, softmax, tg, w, out, nu, s, IndexDivider(), IndexDivider());
    });
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
