#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/norm_impl.h"

namespace oat::cuda {

namespace {

// Two-pass row statistics: μ = Σx/n, σ⁻¹ = 1/√(Σ(x − μ)²/n + ε).
template <class T>
__device__ __forceinline__ void row_stats(const T* xr, int64_t n, float eps, float& mu,
                                          float& inv) {
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += to_float(xr[j]);
  mu = block_sum(s) / static_cast<float>(n);
  float q = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = to_float(xr[j]) - mu;
    q += d * d;
  }
  inv = rsqrtf(block_sum(q) / static_cast<float>(n) + eps);
}

template <class T>
__global__ void layer_norm_kernel(const T* x, const float* scale, const float* bias, T* y,
                                  float* mean, float* inv, int64_t n, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * n;
  float mu, iv;
  row_stats(xr, n, eps, mu, iv);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = (to_float(xr[j]) - mu) * iv * (scale ? scale[j] : 1.f) + (bias ? bias[j] : 0.f);
    y[row * n + j] = from_float<T>(v);
  }
  if (threadIdx.x == 0) {
    if (mean) mean[row] = mu;
    if (inv) inv[row] = iv;
  }
}

// dX = σ⁻¹·(g − mean(g) − x̂·mean(g⊙x̂)), g = dY⊙γ.
template <class T>
__global__ void layer_norm_dx_kernel(const T* dy, const T* x, const float* scale, float* mean,
                                     float* inv, bool have_stats, T* dx, int64_t n, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * n;
  const T* gr = dy + row * n;
  float mu, iv;
  if (have_stats) {
    mu = mean[row];
    iv = inv[row];
  } else {
    row_stats(xr, n, eps, mu, iv);
    if (threadIdx.x == 0) {
      mean[row] = mu;
      inv[row] = iv;
    }
  }
  if (!dx) return;
  float sg = 0.f, sgx = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float g = to_float(gr[j]) * (scale ? scale[j] : 1.f);
    sg += g;
    sgx += g * (to_float(xr[j]) - mu) * iv;
  }
  const float mean_g = block_sum(sg) / static_cast<float>(n);
  const float mean_gx = block_sum(sgx) / static_cast<float>(n);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float g = to_float(gr[j]) * (scale ? scale[j] : 1.f);
    const float xh = (to_float(xr[j]) - mu) * iv;
    dx[row * n + j] = from_float<T>(iv * (g - mean_g - xh * mean_gx));
  }
}

// Column sums dScale_j = Σ_rows dY⊙x̂, dBias_j = Σ_rows dY: a block of 32 x kParamLanes threads
// takes 32 neighbouring columns (a warp reads 32 neighbouring elements of a row), lane
// threadIdx.y sums rows y, y + lanes, … of the chunk [blockIdx.y·chunk, (blockIdx.y+1)·chunk);
// the lanes combine in lane order. One chunk: the sums are stored; several: the raw partials go
// to partial[k·n + j] (dScale) and partial[(splits + k)·n + j] (dBias), combined by
// layer_norm_params_finish_kernel in chunk order (launch.h split_reduction).
constexpr int kParamLanes = 8;
template <class T>
__global__ void layer_norm_params_kernel(const T* dy, const T* x, const float* mean,
                                         const float* inv, T* dscale, T* dbias, float* partial,
                                         int64_t rows, int64_t n, int64_t chunk, int64_t splits) {
  __shared__ float lane_s[kParamLanes][33], lane_b[kParamLanes][33];
  const int64_t r0 = blockIdx.y * chunk;
  const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  const int64_t tiles = (n + 31) / 32;
  for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {  // uniform in the block
    const int64_t j = b * 32 + threadIdx.x;
    float ss = 0.f, sb = 0.f;
    if (j < n) {
      for (int64_t r = r0 + threadIdx.y; r < r1; r += kParamLanes) {
        const float g = to_float(dy[r * n + j]);
        ss += g * (to_float(x[r * n + j]) - mean[r]) * inv[r];
        sb += g;
      }
    }
    lane_s[threadIdx.y][threadIdx.x] = ss;
    lane_b[threadIdx.y][threadIdx.x] = sb;
    __syncthreads();
    if (threadIdx.y == 0 && j < n) {
      for (int k = 1; k < kParamLanes; ++k) {
        ss += lane_s[k][threadIdx.x];
        sb += lane_b[k][threadIdx.x];
      }
      if (splits > 1) {
        partial[blockIdx.y * n + j] = ss;
        partial[(splits + blockIdx.y) * n + j] = sb;
      } else {
        if (dscale) dscale[j] = from_float<T>(ss);
        if (dbias) dbias[j] = from_float<T>(sb);
      }
    }
    __syncthreads();  // the lane arrays are reused by the next tile
  }
}

template <class T>
__global__ void layer_norm_params_finish_kernel(const float* partial, T* dscale, T* dbias,
                                                int64_t n, int64_t splits) {
  OAT_GRID_STRIDE_LOOP(j, n) {
    float ss = 0.f, sb = 0.f;
    for (int64_t k = 0; k < splits; ++k) {
      ss += partial[k * n + j];
      sb += partial[(splits + k) * n + j];
    }
    if (dscale) dscale[j] = from_float<T>(ss);
    if (dbias) dbias[j] = from_float<T>(sb);
  }
}

ReductionSplit param_split(int64_t rows, int64_t n) {
  return split_reduction((n + 31) / 32, rows, 64);  // a lane sums at least 8 rows of a chunk
}

int threads_for(int64_t n) { return n >= 1024 ? 256 : (n >= 128 ? 128 : 32); }

}  // namespace

void launch_layer_norm(ElemType t, const void* x, const float* scale, const float* bias, void* y,
                       float* mean, float* inv, int64_t rows, int64_t n, float eps,
                       cudaStream_t s) {
  if (rows == 0 || n == 0) return;
  if (rows > 0x7fffffff) throw std::runtime_error("LayerNormalization: too many rows");
  dispatch_float(t, "LayerNormalization", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_kernel<T><<<static_cast<unsigned>(rows), threads_for(n), 0, s>>>(
        static_cast<const T*>(x), scale, bias, static_cast<T*>(y), mean, inv, n, eps);
  });
  CUDA_CHECK_LAUNCH();
}

int64_t layer_norm_grad_scratch_floats(int64_t rows, int64_t n) {
  const ReductionSplit sp = param_split(rows, n);
  return sp.splits > 1 ? 2 * sp.splits * n : 0;
}

void launch_layer_norm_grad(ElemType t, const void* dy, const void* x, const float* scale,
                            float* mean, float* inv, bool have_stats, void* dx, void* dscale,
                            void* dbias, float* scratch, int64_t rows, int64_t n, float eps,
                            cudaStream_t s) {
  if (rows == 0 || n == 0) return;
  if (rows > 0x7fffffff) throw std::runtime_error("LayerNormalizationGrad: too many rows");
  dispatch_float(t, "LayerNormalizationGrad", [&](auto tag) {
    using T = decltype(tag);
    if (dx || !have_stats)
      layer_norm_dx_kernel<T><<<static_cast<unsigned>(rows), threads_for(n), 0, s>>>(
          static_cast<const T*>(dy), static_cast<const T*>(x), scale, mean, inv, have_stats,
          static_cast<T*>(dx), n, eps);
    if (dscale || dbias) {
      const ReductionSplit sp = param_split(rows, n);
      if (sp.splits > 1 && !scratch)
        throw std::runtime_error("LayerNormalizationGrad: split without scratch");
      const int64_t tiles = (n + 31) / 32;
      const unsigned grid_x = static_cast<unsigned>(tiles < 65535 * 4 ? tiles : 65535 * 4);
      layer_norm_params_kernel<T>
          <<<dim3(grid_x, static_cast<unsigned>(sp.splits)), dim3(32, kParamLanes), 0, s>>>(
              static_cast<const T*>(dy), static_cast<const T*>(x), mean, inv,
              static_cast<T*>(dscale), static_cast<T*>(dbias), scratch, rows, n, sp.chunk,
              sp.splits);
      if (sp.splits > 1)
        layer_norm_params_finish_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
            scratch, static_cast<T*>(dscale), static_cast<T*>(dbias), n, sp.splits);
    }
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
