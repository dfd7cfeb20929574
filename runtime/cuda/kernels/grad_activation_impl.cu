#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/grad_activation_impl.h"
#include "runtime/cuda/kernels/vector_map.cuh"

namespace oat::cuda {

namespace {

// f'(v) for the saved value v (formulas in runtime/cpu/kernels/grad_activation.cc).
template <ActGrad Op>
__device__ __forceinline__ float slope(float v, float a, float b) {
  if constexpr (Op == ActGrad::Relu) return v > 0.f ? 1.f : 0.f;                // v = Y
  if constexpr (Op == ActGrad::LeakyRelu) return v > 0.f ? 1.f : a;              // v = X
  if constexpr (Op == ActGrad::Sigmoid) return v * (1.f - v);                    // v = Y
  if constexpr (Op == ActGrad::Tanh) return 1.f - v * v;                         // v = Y
  if constexpr (Op == ActGrad::Gelu) {
    const float cdf = 0.5f * (1.f + erff(v * 0.70710678118654752f));
    const float pdf = expf(-0.5f * v * v) * 0.3989422804014327f;
    return cdf + v * pdf;
  }
  if constexpr (Op == ActGrad::GeluTanh) {
    const float k = 0.7978845608028654f, c = 0.044715f;
    const float t = tanhf(k * (v + c * v * v * v));
    return 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * k * (1.f + 3.f * c * v * v);
  }
  if constexpr (Op == ActGrad::Clip) return v >= a && v <= b ? 1.f : 0.f;
  if constexpr (Op == ActGrad::Elu) return b * (v > 0.f ? 1.f : a * expf(v));
  if constexpr (Op == ActGrad::Softplus) return 1.f / (1.f + expf(-v));
  if constexpr (Op == ActGrad::HardSigmoid) {
    const float u = a * v + b;
    return u > 0.f && u < 1.f ? a : 0.f;
  }
  if constexpr (Op == ActGrad::HardSwish) return v < -3.f ? 0.f : (v <= 3.f ? v / 3.f + 0.5f : 1.f);
  return 0.f;
}

// Where a gradient is a mask, dX is 0 there whatever dY holds (the CPU kernels' select and
// PyTorch's threshold_backward / hardtanh_backward): an FP16 dY that overflowed to ±inf under a
// large loss scale at an inactive ReLU gives 0, not inf·0 = NaN, so the overflow stays masked and
// the step is taken, as on the CPU path (train/check.h).
template <ActGrad Op>
__device__ __forceinline__ bool masked_out(float v, float a, float b) {
  if constexpr (Op == ActGrad::Relu) return !(v > 0.f);
  if constexpr (Op == ActGrad::Clip) return !(v >= a && v <= b);
  if constexpr (Op == ActGrad::HardSigmoid) {
    const float u = a * v + b;
    return !(u > 0.f && u < 1.f);
  }
  if constexpr (Op == ActGrad::HardSwish) return v < -3.f;
  return false;
}

template <ActGrad Op, class T>
__global__ void act_grad_kernel(const T* dy, const T* v, T* dx, int64_t n, float a, float b,
                                bool packed) {
  map_elements<pack_elems<T>()>(
      packed, n,
      [=](T g, T saved) {
        const float x = to_float(saved);
        return from_float<T>(masked_out<Op>(x, a, b) ? 0.f : to_float(g) * slope<Op>(x, a, b));
      },
      dx, dy, v);
}

template <class T>
__global__ void prelu_grad_kernel(const T* dy, const T* x, const T* slope, T* dx, float* prod,
                                  int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    const float g = to_float(dy[i]), v = to_float(x[i]);
    if (dx) {
      int64_t off[1];
      broadcast_offsets<1>(ix, i, off);
      dx[i] = from_float<T>(v < 0.f ? to_float(slope[off[0]]) * g : g);
    }
    if (prod) prod[i] = v < 0.f ? g * v : 0.f;
  }
}

template <ActGrad Op>
void launch_op(ElemType t, const void* dy, const void* v, void* dx, int64_t n, float a, float b,
               cudaStream_t s) {
  dispatch_float(t, "activation gradient", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = pack_elems<T>();
    const T* pdy = static_cast<const T*>(dy);
    const T* pv = static_cast<const T*>(v);
    T* pdx = static_cast<T*>(dx);
    const bool packed = packs_aligned<V>(pdy, pv, pdx);
    act_grad_kernel<Op, T><<<map_blocks(packed, V, n), kThreads, 0, s>>>(pdy, pv, pdx, n, a, b,
                                                                         packed);
  });
}

}  // namespace

void launch_activation_grad(ActGrad op, ElemType t, const void* dy, const void* v, void* dx,
                            int64_t n, float a, float b, cudaStream_t s) {
  if (n == 0) return;
  switch (op) {
#define OAT_CASE(name) \
  case ActGrad::name: launch_op<ActGrad::name>(t, dy, v, dx, n, a, b, s); break;
    OAT_CASE(Relu) OAT_CASE(LeakyRelu) OAT_CASE(Sigmoid) OAT_CASE(Tanh) OAT_CASE(Gelu)
    OAT_CASE(GeluTanh) OAT_CASE(Clip) OAT_CASE(Elu) OAT_CASE(Softplus) OAT_CASE(HardSigmoid)
    OAT_CASE(HardSwish)
#undef OAT_CASE
  }
  CUDA_CHECK_LAUNCH();
}

void launch_prelu_grad(ElemType t, const void* dy, const void* x, const void* slope, void* dx,
                       float* prod, int64_t n, const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "PReluGrad", [&](auto tag) {
    using T = decltype(tag);
    prelu_grad_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(slope),
        static_cast<T*>(dx), prod, n, ix);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
