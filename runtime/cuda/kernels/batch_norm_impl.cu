#include <algorithm>
#include <cstdint>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/batch_norm_impl.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/vector_map.cuh"

namespace oat::cuda {

namespace {

// Element k of channel c: index (n·C + c)·S + s for k = n·S + s. I: the index type of the
// division, uint32_t when every index fits (the launchers choose; 64-bit division is slow on the
// device).
template <class I>
__device__ __forceinline__ int64_t channel_index(int64_t k, int64_t c, ChannelShape sh) {
  const int64_t n = static_cast<int64_t>(static_cast<I>(k) / static_cast<I>(sh.S));
  return (n * sh.C + c) * sh.S + (k - n * sh.S);
}

// The statistics channel of element i of X.
template <class I>
__device__ __forceinline__ int64_t channel_of(int64_t i, ChannelShape sh) {
  return static_cast<int64_t>((static_cast<I>(i) / static_cast<I>(sh.S)) % static_cast<I>(sh.C));
}

// The scale/bias entry of statistics channel c.
__device__ __forceinline__ int64_t param_index(int64_t c, ChannelShape sh) {
  return sh.params > 0 ? c % sh.params : c;
}

// Partial statistics (Chan, Golub, LeVeque): block b = c·splits + j takes elements
// [j·chunk, min(m, (j + 1)·chunk)) of channel c and writes their mean and M2 = Σ (x − mean)²
// (two passes over its chunk; the second reads it from cache) to part[2b], part[2b + 1].
template <class T, class I>
__global__ void bn_partial_stats_kernel(const T* x, float* part, ChannelShape sh, BnSplit sp) {
  const int64_t m = sh.N * sh.S;
  for (int64_t b = blockIdx.x; b < sh.C * sp.splits; b += gridDim.x) {
    const int64_t c = b / sp.splits, lo = (b % sp.splits) * sp.chunk;
    const int64_t hi = min(m, lo + sp.chunk), cnt = hi > lo ? hi - lo : 0;
    float s = 0.f;
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x)
      s += to_float(x[channel_index<I>(k, c, sh)]);
    const float mu = cnt > 0 ? block_sum(s) / static_cast<float>(cnt) : 0.f;
    float q = 0.f;
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
      const float d = to_float(x[channel_index<I>(k, c, sh)]) - mu;
      q += d * d;
    }
    q = block_sum(q);
    if (threadIdx.x == 0) {
      part[2 * b] = mu;
      part[2 * b + 1] = q;
    }
  }
}

// mean and population variance M2/n of each channel from its `splits` partials, merged in
// double (bn_merge_stats).
__global__ void bn_merge_stats_kernel(const float* part, float* mean, float* var, ChannelShape sh,
                                      BnSplit sp) {
  const int64_t m = sh.N * sh.S;
  OAT_GRID_STRIDE_LOOP(c, sh.C) {
    double n = 0, mu = 0, m2 = 0;
    for (int64_t j = 0; j < sp.splits; ++j) {
      const int64_t lo = j * sp.chunk, hi = min(m, lo + sp.chunk);
      if (hi > lo)
        bn_merge_stats(n, mu, m2, static_cast<double>(hi - lo), part[2 * (c * sp.splits + j)],
                       part[2 * (c * sp.splits + j) + 1]);
    }
    mean[c] = static_cast<float>(mu);
    var[c] = n > 0 ? static_cast<float>(m2 / n) : 0.f;
  }
}

// Y = (X − mean[c])·a + bias[c], a = scale[c]/√(var[c] + ε). Packed (X, Y aligned,
// vector_map.cuh): V elements per load and store; where the plane S is a multiple of V a pack
// lies in one channel, whose coefficients are then found once per pack, else per element. The
// n % V elements after the last pack go to the grid's first threads. Same arithmetic per element.
template <class T, class I>
__global__ void bn_apply_kernel(const T* x, T* y, const float* mean, const float* var,
                                const float* scale, const float* bias, float eps,
                                ChannelShape sh, bool packed) {
  constexpr int V = pack_elems<T>();
  const int64_t n = sh.N * sh.C * sh.S;
  struct Affine {
    float mu, a, b;
  };
  auto affine = [&](int64_t c) {  // channel c's coefficients
    const int64_t pc = param_index(c, sh);
    return Affine{mean[c], scale[pc] * rsqrtf(var[c] + eps), bias[pc]};
  };
  auto apply = [](float v, const Affine& f) { return from_float<T>((v - f.mu) * f.a + f.b); };
  auto at = [&](int64_t i, float v) { return apply(v, affine(channel_of<I>(i, sh))); };
  if (!packed) {
    OAT_GRID_STRIDE_LOOP(i, n) { y[i] = at(i, to_float(x[i])); }
    return;
  }
  const bool one_channel = sh.S % V == 0;
  OAT_GRID_STRIDE_LOOP(p, n / V) {
    const Pack<T, V> in = load_pack<V>(x, p);
    Pack<T, V> out;
    if (one_channel) {
      const Affine f = affine(channel_of<I>(p * V, sh));
      for (int k = 0; k < V; ++k) out.v[k] = apply(to_float(in.v[k]), f);
    } else {
      for (int k = 0; k < V; ++k) out.v[k] = at(p * V + k, to_float(in.v[k]));
    }
    store_pack<V>(y, p, out);
  }
  const int64_t i = n / V * V + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = at(i, to_float(x[i]));
}

__global__ void blend_kernel(const float* p, const float* q, float* out, float a, int64_t n) {
  OAT_GRID_STRIDE_LOOP(i, n) { out[i] = p[i] * a + q[i] * (1.f - a); }
}

// Partial gradient sums: block b = c·splits + j sums dY and dY⊙x̂ over its chunk of channel c
// into part[2b], part[2b + 1].
template <class T, class I>
__global__ void bn_partial_grad_sums_kernel(const T* dy, const T* x, const float* mean,
                                            const float* var, float eps, float* part,
                                            ChannelShape sh, BnSplit sp) {
  const int64_t m = sh.N * sh.S;
  for (int64_t b = blockIdx.x; b < sh.C * sp.splits; b += gridDim.x) {
    const int64_t c = b / sp.splits, lo = (b % sp.splits) * sp.chunk, hi = min(m, lo + sp.chunk);
    const float mu = mean[c], inv = rsqrtf(var[c] + eps);
    float sg = 0.f, sgx = 0.f;
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
      const int64_t i = channel_index<I>(k, c, sh);
      const float g = to_float(dy[i]);
      sg += g;
      sgx += g * (to_float(x[i]) - mu) * inv;
    }
    sg = block_sum(sg);
    sgx = block_sum(sgx);
    if (threadIdx.x == 0) {
      part[2 * b] = sg;
      part[2 * b + 1] = sgx;
    }
  }
}

// sum_dy[c], sum_dyxh[c]: the channel's partial sums added in double.
__global__ void bn_merge_sums_kernel(const float* part, float* sum_dy, float* sum_dyxh,
                                     ChannelShape sh, BnSplit sp) {
  OAT_GRID_STRIDE_LOOP(c, sh.C) {
    double a = 0, b = 0;
    for (int64_t j = 0; j < sp.splits; ++j) {
      a += part[2 * (c * sp.splits + j)];
      b += part[2 * (c * sp.splits + j) + 1];
    }
    sum_dy[c] = static_cast<float>(a);
    sum_dyxh[c] = static_cast<float>(b);
  }
}

// dX = scale[c]·inv·(dY − Σ dY/m − x̂·Σ(dY⊙x̂)/m) in training, scale[c]·inv·dY otherwise;
// inv = 1/√(var[c] + ε), x̂ = (X − mean[c])·inv. Packed as bn_apply_kernel.
template <class T, class I>
__global__ void bn_grad_dx_kernel(const T* dy, const T* x, const float* mean, const float* var,
                                  const float* scale, const float* sum_dy, const float* sum_dyxh,
                                  bool training, float eps, T* dx, ChannelShape sh, bool packed) {
  constexpr int V = pack_elems<T>();
  const float m = static_cast<float>(sh.N * sh.S);
  const int64_t n = sh.N * sh.C * sh.S;
  auto element = [&](float g, float xv, int64_t c, float inv, float sc) {
    float v = g;
    if (training) {
      const float xh = (xv - mean[c]) * inv;
      v = g - sum_dy[c] / m - xh * sum_dyxh[c] / m;
    }
    return from_float<T>(sc * inv * v);
  };
  auto at = [&](int64_t i, float g, float xv) {  // element i
    const int64_t c = channel_of<I>(i, sh);
    return element(g, xv, c, rsqrtf(var[c] + eps), scale[param_index(c, sh)]);
  };
  if (!packed) {
    OAT_GRID_STRIDE_LOOP(i, n) {
      dx[i] = at(i, to_float(dy[i]), training ? to_float(x[i]) : 0.f);
    }
    return;
  }
  const bool one_channel = sh.S % V == 0;
  OAT_GRID_STRIDE_LOOP(p, n / V) {
    const Pack<T, V> g = load_pack<V>(dy, p);
    Pack<T, V> xs = g;  // X is read in training only
    if (training) xs = load_pack<V>(x, p);
    Pack<T, V> out;
    if (one_channel) {
      const int64_t c = channel_of<I>(p * V, sh);
      const float inv = rsqrtf(var[c] + eps), sc = scale[param_index(c, sh)];
      for (int k = 0; k < V; ++k)
        out.v[k] = element(to_float(g.v[k]), to_float(xs.v[k]), c, inv, sc);
    } else {
      for (int k = 0; k < V; ++k) out.v[k] = at(p * V + k, to_float(g.v[k]), to_float(xs.v[k]));
    }
    store_pack<V>(dx, p, out);
  }
  const int64_t i = n / V * V + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = at(i, to_float(dy[i]), training ? to_float(x[i]) : 0.f);
}

// Whether the elementwise BatchNorm kernels take packs: the pointers aligned to them.
template <class T, class... P>
bool bn_packed(const P*... p) {
  return packs_aligned<pack_elems<T>()>(p...);
}

int threads_for(int64_t m) { return m >= 1024 ? 256 : (m >= 128 ? 128 : 32); }

// Dispatches f(tag of T, tag of I): the index type uint32_t when every element index of X fits.
template <class F>
void dispatch_bn(ElemType t, const char* where, const ChannelShape& sh, F&& f) {
  const bool narrow = sh.N * sh.C * sh.S <= static_cast<int64_t>(UINT32_MAX);
  dispatch_float(t, where, [&](auto tag) {
    if (narrow)
      f(tag, uint32_t{});
    else
      f(tag, int64_t{});
  });
}

unsigned partial_blocks(const ChannelShape& sh, const BnSplit& sp) {
  return static_cast<unsigned>(std::min<int64_t>(sh.C * sp.splits, int64_t{1} << 30));
}

}  // namespace

void launch_bn_stats(ElemType t, const void* x, float* mean, float* var, float* partials,
                     ChannelShape sh, cudaStream_t s) {
  if (sh.C == 0) return;
  const BnSplit sp = bn_split(sh);
  dispatch_bn(t, "BatchNormalization", sh, [&](auto tag, auto itag) {
    using T = decltype(tag);
    using I = decltype(itag);
    bn_partial_stats_kernel<T, I><<<partial_blocks(sh, sp), threads_for(sp.chunk), 0, s>>>(
        static_cast<const T*>(x), partials, sh, sp);
  });
  CUDA_CHECK_LAUNCH();
  bn_merge_stats_kernel<<<blocks_for(sh.C), kThreads, 0, s>>>(partials, mean, var, sh, sp);
  CUDA_CHECK_LAUNCH();
}

void launch_bn_apply(ElemType t, const void* x, void* y, const float* mean, const float* var,
                     const float* scale, const float* bias, float eps, ChannelShape sh,
                     cudaStream_t s) {
  const int64_t n = sh.N * sh.C * sh.S;
  if (n == 0) return;
  dispatch_bn(t, "BatchNormalization", sh, [&](auto tag, auto itag) {
    using T = decltype(tag);
    using I = decltype(itag);
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    const bool packed = bn_packed<T>(px, py);
    bn_apply_kernel<T, I><<<map_blocks(packed, pack_elems<T>(), n), kThreads, 0, s>>>(
        px, py, mean, var, scale, bias, eps, sh, packed);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_bn_blend(const float* p, const float* q, float* out, float a, int64_t n,
                     cudaStream_t s) {
  if (n == 0) return;
  blend_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, q, out, a, n);
  CUDA_CHECK_LAUNCH();
}

void launch_bn_grad_sums(ElemType t, const void* dy, const void* x, const float* mean,
                         const float* var, float eps, float* sum_dy, float* sum_dyxh,
                         float* partials, ChannelShape sh, cudaStream_t s) {
  if (sh.C == 0) return;
  const BnSplit sp = bn_split(sh);
  dispatch_bn(t, "BatchNormalizationGrad", sh, [&](auto tag, auto itag) {
    using T = decltype(tag);
    using I = decltype(itag);
    bn_partial_grad_sums_kernel<T, I><<<partial_blocks(sh, sp), threads_for(sp.chunk), 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), mean, var, eps, partials, sh, sp);
  });
  CUDA_CHECK_LAUNCH();
  bn_merge_sums_kernel<<<blocks_for(sh.C), kThreads, 0, s>>>(partials, sum_dy, sum_dyxh, sh, sp);
  CUDA_CHECK_LAUNCH();
}

void launch_bn_grad_dx(ElemType t, const void* dy, const void* x, const float* mean,
                       const float* var, const float* scale, const float* sum_dy,
                       const float* sum_dyxh, bool training, float eps, void* dx, ChannelShape sh,
                       cudaStream_t s) {
  const int64_t n = sh.N * sh.C * sh.S;
  if (n == 0) return;
  dispatch_bn(t, "BatchNormalizationGrad", sh, [&](auto tag, auto itag) {
    using T = decltype(tag);
    using I = decltype(itag);
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    T* pdx = static_cast<T*>(dx);
    const bool packed = bn_packed<T>(pdy, pdx) && (!training || bn_packed<T>(px));
    bn_grad_dx_kernel<T, I><<<map_blocks(packed, pack_elems<T>(), n), kThreads, 0, s>>>(
        pdy, px, mean, var, scale, sum_dy, sum_dyxh, training, eps, pdx, sh, packed);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
