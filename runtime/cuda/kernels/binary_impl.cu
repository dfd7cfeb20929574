// Broadcasting binary, comparison, logic, Where and copy kernels (elementwise.cc registers them).
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/vector_map.cuh"

namespace oat::cuda {

namespace {

// a ⊙ b in float.
template <BinaryOp Op>
__device__ __forceinline__ float apply(float a, float b) {
  if constexpr (Op == BinaryOp::Add) return a + b;
  if constexpr (Op == BinaryOp::Sub) return a - b;
  if constexpr (Op == BinaryOp::Mul) return a * b;
  if constexpr (Op == BinaryOp::Div) return a / b;
  if constexpr (Op == BinaryOp::Pow) return powf(a, b);
  // Max/Min propagate NaN (numpy's maximum/minimum, the CPU's MaxOp/MinOp); fmaxf/fminf would
  // drop it and hide an overflow from the loss scaler.
  if constexpr (Op == BinaryOp::Max) return (a < b || isnan(b)) ? b : a;
  if constexpr (Op == BinaryOp::Min) return (b < a || isnan(b)) ? b : a;
  if constexpr (Op == BinaryOp::PRelu) return a < 0.f ? a * b : a;  // b: the slope
  if constexpr (Op == BinaryOp::Fmod) return fmodf(a, b);            // sign of the dividend
  return 0.f;
}

template <BinaryOp Op>
__device__ __forceinline__ bool compare(float a, float b) {
  if constexpr (Op == BinaryOp::Equal) return a == b;
  if constexpr (Op == BinaryOp::Less) return a < b;
  if constexpr (Op == BinaryOp::Greater) return a > b;
  if constexpr (Op == BinaryOp::LessOrEqual) return a <= b;
  return a >= b;
}

template <BinaryOp Op, class T>
__global__ void arith_kernel(const T* a, const T* b, T* y, int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    broadcast_offsets<2>(ix, i, off);
    y[i] = from_float<T>(apply<Op>(to_float(a[off[0]]), to_float(b[off[1]])));
  }
}

// Operands that need no index (FlatOperands): both the whole output, or one of them a single
// element read once per thread; packed loads where aligned (vector_map.cuh).
enum class Flat : int { Both, ScalarA, ScalarB };

template <BinaryOp Op, class T>
__global__ void arith_flat_kernel(const T* a, const T* b, T* y, int64_t n, Flat mode, bool packed) {
  constexpr int V = pack_elems<T>();
  auto f = [](float p, float q) { return from_float<T>(apply<Op>(p, q)); };
  if (mode == Flat::Both) {
    map_elements<V>(packed, n, [=](T p, T q) { return f(to_float(p), to_float(q)); }, y, a, b);
  } else if (mode == Flat::ScalarA) {
    const float sa = to_float(a[0]);
    map_elements<V>(packed, n, [=](T q) { return f(sa, to_float(q)); }, y, b);
  } else {
    const float sb = to_float(b[0]);
    map_elements<V>(packed, n, [=](T p) { return f(to_float(p), sb); }, y, a);
  }
}

template <BinaryOp Op, class T>
__global__ void compare_kernel(const T* a, const T* b, bool* y, int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    broadcast_offsets<2>(ix, i, off);
    y[i] = compare<Op>(to_float(a[off[0]]), to_float(b[off[1]]));
  }
}

template <BinaryOp Op>
__global__ void logic_kernel(const bool* a, const bool* b, bool* y, int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    broadcast_offsets<2>(ix, i, off);
    const bool p = a[off[0]], q = b[off[1]];
    y[i] = Op == BinaryOp::And ? (p && q) : Op == BinaryOp::Or ? (p || q) : (p != q);
  }
}

template <class T>
__global__ void where_kernel(const bool* c, const T* x, const T* y, T* out, int64_t n,
                             BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    broadcast_offsets<3>(ix, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <class T>
__global__ void copy_kernel(const T* x, T* out, int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    broadcast_offsets<1>(ix, i, off);
    out[i] = x[off[0]];
  }
}

template <class T>
__global__ void scatter_kernel(const T* x, T* out, int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    broadcast_offsets<1>(ix, i, off);
    out[off[0]] = x[i];
  }
}

template <class T>
__global__ void masked_scale_kernel(const T* dy, const bool* mask, T* dx, int64_t n, float scale,
                                    bool packed) {
  map_elements<pack_elems<T>()>(
      packed, n, [=](T g, bool keep) { return from_float<T>(keep ? to_float(g) * scale : 0.f); },
      dx, dy, mask);
}

// The index-free form of a broadcast, if it has one: both operands the whole output, or one a
// single element beside a whole one.
bool flat_mode(const BroadcastIndex& ix, Flat& mode) {
  if (ix.contiguous) {
    mode = Flat::Both;
    return true;
  }
  if (ix.rank != 1) return false;
  if (ix.strides[0][0] == 0 && ix.strides[1][0] == 1) mode = Flat::ScalarA;
  else if (ix.strides[0][0] == 1 && ix.strides[1][0] == 0) mode = Flat::ScalarB;
  else return false;
  return true;
}

template <BinaryOp Op>
void launch_typed(ElemType t, const void* a, const void* b, void* y, int64_t n,
                  const BroadcastIndex& ix, cudaStream_t s) {
  dispatch_float(t, "binary", [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    if constexpr (Op <= BinaryOp::Fmod) {
      T* py = static_cast<T*>(y);
      Flat mode;
      if (flat_mode(ix, mode)) {
        constexpr int V = pack_elems<T>();
        // A single-element operand is read as a scalar, so only the others need alignment.
        const bool packed = packs_aligned<V>(mode == Flat::ScalarA ? pb : pa, py) &&
                            (mode != Flat::Both || packs_aligned<V>(pb));
        arith_flat_kernel<Op, T><<<map_blocks(packed, V, n), kThreads, 0, s>>>(pa, pb, py, n,
                                                                                mode, packed);
      } else {
        arith_kernel<Op, T><<<blocks_for(n), kThreads, 0, s>>>(pa, pb, py, n, ix);
      }
    } else {
      compare_kernel<Op, T><<<blocks_for(n), kThreads, 0, s>>>(pa, pb, static_cast<bool*>(y), n, ix);
    }
  });
}

template <BinaryOp Op>
void launch_logic(const void* a, const void* b, void* y, int64_t n, const BroadcastIndex& ix,
                  cudaStream_t s) {
  logic_kernel<Op><<<blocks_for(n), kThreads, 0, s>>>(
      static_cast<const bool*>(a), static_cast<const bool*>(b), static_cast<bool*>(y), n, ix);
}

// A type of the given size for copies that do not look at values.
template <class F>
void dispatch_bytes(int bytes, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
    default: throw std::runtime_error("copy: unsupported element size " + std::to_string(bytes));
  }
}

int elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::F64: case ElemType::I64: return 8;
    case ElemType::F32: case ElemType::I32: return 4;
    case ElemType::F16: case ElemType::BF16: return 2;
    default: return 1;
  }
}

}  // namespace

void launch_binary(BinaryOp op, ElemType t, const void* a, const void* b, void* y, int64_t n,
                   const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  switch (op) {
    case BinaryOp::Add: launch_typed<BinaryOp::Add>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Sub: launch_typed<BinaryOp::Sub>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Mul: launch_typed<BinaryOp::Mul>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Div: launch_typed<BinaryOp::Div>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Pow: launch_typed<BinaryOp::Pow>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Max: launch_typed<BinaryOp::Max>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Min: launch_typed<BinaryOp::Min>(t, a, b, y, n, ix, s); break;
    case BinaryOp::PRelu: launch_typed<BinaryOp::PRelu>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Fmod: launch_typed<BinaryOp::Fmod>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Equal: launch_typed<BinaryOp::Equal>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Less: launch_typed<BinaryOp::Less>(t, a, b, y, n, ix, s); break;
    case BinaryOp::Greater: launch_typed<BinaryOp::Greater>(t, a, b, y, n, ix, s); break;
    case BinaryOp::LessOrEqual: launch_typed<BinaryOp::LessOrEqual>(t, a, b, y, n, ix, s); break;
    case BinaryOp::GreaterOrEqual:
      launch_typed<BinaryOp::GreaterOrEqual>(t, a, b, y, n, ix, s);
      break;
    case BinaryOp::And: launch_logic<BinaryOp::And>(a, b, y, n, ix, s); break;
    case BinaryOp::Or: launch_logic<BinaryOp::Or>(a, b, y, n, ix, s); break;
    case BinaryOp::Xor: launch_logic<BinaryOp::Xor>(a, b, y, n, ix, s); break;
  }
  CUDA_CHECK_LAUNCH();
}

void launch_where(ElemType t, const bool* cond, const void* x, const void* y, void* out,
                  int64_t n, const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  dispatch_bytes(elem_bytes(t), [&](auto tag) {
    using T = decltype(tag);
    where_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(cond, static_cast<const T*>(x),
                                                       static_cast<const T*>(y),
                                                       static_cast<T*>(out), n, ix);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_broadcast_copy(int bytes, const void* x, void* out, int64_t n,
                           const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  dispatch_bytes(bytes, [&](auto tag) {
    using T = decltype(tag);
    copy_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x),
                                                      static_cast<T*>(out), n, ix);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_strided_scatter(int bytes, const void* x, void* out, int64_t n,
                            const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  dispatch_bytes(bytes, [&](auto tag) {
    using T = decltype(tag);
    scatter_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x),
                                                         static_cast<T*>(out), n, ix);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_masked_scale(ElemType t, const void* dy, const bool* mask, void* dx, int64_t n,
                         float scale, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "DropoutGrad", [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = static_cast<const T*>(dy);
    T* pdx = static_cast<T*>(dx);
    constexpr int V = pack_elems<T>();
    const bool packed = packs_aligned<V>(pdy, mask, pdx);
    masked_scale_kernel<T><<<map_blocks(packed, V, n), kThreads, 0, s>>>(pdy, mask, pdx, n, scale,
                                                                         packed);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
