#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/batch_norm_impl.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"

namespace oat::cuda {

namespace {

// Element k of channel c: index (n·C + c)·S + s for k = n·S + s.
__device__ __forceinline__ int64_t channel_index(int64_t k, int64_t c, ChannelShape sh) {
  const int64_t n = k / sh.S;
  return (n * sh.C + c) * sh.S + (k - n * sh.S);
}

// The scale/bias entry of statistics channel c.
__device__ __forceinline__ int64_t param_index(int64_t c, ChannelShape sh) {
  return sh.params > 0 ? c % sh.params : c;
}

template <class T>
__global__ void bn_stats_kernel(const T* x, float* mean, float* var, ChannelShape sh) {
  const int64_t c = blockIdx.x, m = sh.N * sh.S;
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < m; k += blockDim.x) s += to_float(x[channel_index(k, c, sh)]);
  const float mu = m > 0 ? block_sum(s) / static_cast<float>(m) : 0.f;
  float q = 0.f;
  for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
    const float d = to_float(x[channel_index(k, c, sh)]) - mu;
    q += d * d;
  }
  q = block_sum(q);
  if (threadIdx.x == 0) {
    mean[c] = mu;
    var[c] = m > 0 ? q / static_cast<float>(m) : 0.f;
  }
}

template <class T>
__global__ void bn_apply_kernel(const T* x, T* y, const float* mean, const float* var,
                                const float* scale, const float* bias, float eps,
                                ChannelShape sh) {
  OAT_GRID_STRIDE_LOOP(i, sh.N * sh.C * sh.S) {
    const int64_t c = (i / sh.S) % sh.C, pc = param_index(c, sh);
    const float a = scale[pc] * rsqrtf(var[c] + eps);
    y[i] = from_float<T>((to_float(x[i]) - mean[c]) * a + bias[pc]);
  }
}

__global__ void blend_kernel(const float* p, const float* q, float* out, float a, int64_t n) {
  OAT_GRID_STRIDE_LOOP(i, n) { out[i] = p[i] * a + q[i] * (1.f - a); }
}

template <class T>
__global__ void bn_grad_sums_kernel(const T* dy, const T* x, const float* mean, const float* var,
                                    float eps, float* sum_dy, float* sum_dyxh, ChannelShape sh) {
  const int64_t c = blockIdx.x, m = sh.N * sh.S;
  const float mu = mean[c], inv = rsqrtf(var[c] + eps);
  float sg = 0.f, sgx = 0.f;
  for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
    const int64_t i = channel_index(k, c, sh);
    const float g = to_float(dy[i]);
    sg += g;
    sgx += g * (to_float(x[i]) - mu) * inv;
  }
  sg = block_sum(sg);
  sgx = block_sum(sgx);
  if (threadIdx.x == 0) {
    sum_dy[c] = sg;
    sum_dyxh[c] = sgx;
  }
}

template <class T>
__global__ void bn_grad_dx_kernel(const T* dy, const T* x, const float* mean, const float* var,
                                  const float* scale, const float* sum_dy, const float* sum_dyxh,
                                  bool training, float eps, T* dx, ChannelShape sh) {
  const float m = static_cast<float>(sh.N * sh.S);
  OAT_GRID_STRIDE_LOOP(i, sh.N * sh.C * sh.S) {
    const int64_t c = (i / sh.S) % sh.C;
    const float inv = rsqrtf(var[c] + eps);
    const float g = to_float(dy[i]);
    float v = g;
    if (training) {
      const float xh = (to_float(x[i]) - mean[c]) * inv;
      v = g - sum_dy[c] / m - xh * sum_dyxh[c] / m;
    }
    dx[i] = from_float<T>(scale[param_index(c, sh)] * inv * v);
  }
}

int threads_for(int64_t m) { return m >= 1024 ? 256 : (m >= 128 ? 128 : 32); }

}  // namespace

void launch_bn_stats(ElemType t, const void* x, float* mean, float* var, ChannelShape sh,
                     cudaStream_t s) {
  if (sh.C == 0) return;
  dispatch_float(t, "BatchNormalization", [&](auto tag) {
    using T = decltype(tag);
    bn_stats_kernel<T><<<static_cast<unsigned>(sh.C), threads_for(sh.N * sh.S), 0, s>>>(
        static_cast<const T*>(x), mean, var, sh);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_bn_apply(ElemType t, const void* x, void* y, const float* mean, const float* var,
                     const float* scale, const float* bias, float eps, ChannelShape sh,
                     cudaStream_t s) {
  const int64_t n = sh.N * sh.C * sh.S;
  if (n == 0) return;
  dispatch_float(t, "BatchNormalization", [&](auto tag) {
    using T = decltype(tag);
    bn_apply_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), mean, var, scale, bias, eps, sh);
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
                         ChannelShape sh, cudaStream_t s) {
  if (sh.C == 0) return;
  dispatch_float(t, "BatchNormalizationGrad", [&](auto tag) {
    using T = decltype(tag);
    bn_grad_sums_kernel<T><<<static_cast<unsigned>(sh.C), threads_for(sh.N * sh.S), 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), mean, var, eps, sum_dy, sum_dyxh, sh);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_bn_grad_dx(ElemType t, const void* dy, const void* x, const float* mean,
                       const float* var, const float* scale, const float* sum_dy,
                       const float* sum_dyxh, bool training, float eps, void* dx, ChannelShape sh,
                       cudaStream_t s) {
  const int64_t n = sh.N * sh.C * sh.S;
  if (n == 0) return;
  dispatch_float(t, "BatchNormalizationGrad", [&](auto tag) {
    using T = decltype(tag);
    bn_grad_dx_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), mean, var, scale, sum_dy, sum_dyxh,
        training, eps, static_cast<T*>(dx), sh);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
