// Reductions: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceSumSquare ReduceL1
// ReduceL2 ReduceLogSum ReduceLogSumExp, and along one axis ArgMax ArgMin CumSum, and CumSum's
// gradient CumSumGrad (internal domain). TopK is registered from here (topk.cc).
//
// Axes come from the `axes` attribute, or from the optional input 1 (ReduceSum from opset 13, the
// others from opset 18). Empty axes reduce everything, unless noop_with_empty_axes=1, when the
// output is the input. Sums accumulate in double (int64 for integer Sum/Prod/SumSquare/L1) with
// eight interleaved partial accumulators, which both breaks the add latency chain and keeps
// the rounding error of long rows small.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

void register_topk(KernelRegistry& r);  // topk.cc: TopK

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

// Online log-sum-exp state: Σ exp(x) = s * exp(m).
struct LseAcc {
  double m = -std::numeric_limits<double>::infinity();
  double s = 0;
};

// Per-kind math: init (the value of an empty reduction), step(acc, x), merge(acc, acc),
// finish(acc, n) -> T.
//   Sum Σx  Mean Σx/n  Max  Min  Prod Πx  SumSquare Σx²  L1 Σ|x|  L2 sqrt(Σx²)  LogSum log Σx
//   LogSumExp log Σ exp(x) = m + log Σ exp(x - m)
template <class T, ReduceKind K>
struct Reducer {
  static constexpr bool kExtremum = K == ReduceKind::Max || K == ReduceKind::Min;
  static constexpr bool kIntAcc =
      std::is_integral_v<T> && (K == ReduceKind::Sum || K == ReduceKind::Prod ||
                                K == ReduceKind::SumSquare || K == ReduceKind::L1);
  using Acc = std::conditional_t<
      K == ReduceKind::LogSumExp, LseAcc,
      std::conditional_t<kExtremum, T, std::conditional_t<kIntAcc, int64_t, double>>>;

  static Acc init() {
    if constexpr (K == ReduceKind::LogSumExp) {
      return LseAcc{};
    } else if constexpr (K == ReduceKind::Max) {
      if constexpr (std::numeric_limits<T>::has_infinity)
        return -std::numeric_limits<T>::infinity();
      else
        return std::numeric_limits<T>::lowest();
    } else if constexpr (K == ReduceKind::Min) {
      if constexpr (std::numeric_limits<T>::has_infinity)
        return std::numeric_limits<T>::infinity();
      else
        return std::numeric_limits<T>::max();
    } else if constexpr (K == ReduceKind::Prod) {
      return Acc(1);
    } else {
      return Acc(0);
    }
  }
  static Acc step(Acc a, T x) {
    if constexpr (K == ReduceKind::Max) {
      return x > a ? x : a;
    } else if constexpr (K == ReduceKind::Min) {
      return x < a ? x : a;
    } else if constexpr (K == ReduceKind::Prod) {
      return a * static_cast<Acc>(x);
    } else if constexpr (K == ReduceKind::SumSquare || K == ReduceKind::L2) {
      return a + static_cast<Acc>(x) * static_cast<Acc>(x);
    } else if constexpr (K == ReduceKind::L1) {
      const Acc v = static_cast<Acc>(x);
      return a + (v < 0 ? -v : v);
    } else if constexpr (K == ReduceKind::LogSumExp) {
      const double v = static_cast<double>(x);
      if (v == -std::numeric_limits<double>::infinity()) return a;  // exp(-inf) adds nothing
      if (v <= a.m) return LseAcc{a.m, a.s + std::exp(v - a.m)};
      return LseAcc{v, a.s * std::exp(a.m - v) + 1.0};
    } else {
      return a + static_cast<Acc>(x);
    }
  }
  static Acc merge(Acc a, Acc b) {
    if constexpr (K == ReduceKind::Max) {
      return b > a ? b : a;
    } else if constexpr (K == ReduceKind::Min) {
      return b < a ? b : a;
    } else if constexpr (K == ReduceKind::Prod) {
      return a * b;
    } else if constexpr (K == ReduceKind::LogSumExp) {
      if (b.s == 0) return a;
      if (a.s == 0) return b;
      if (a.m < b.m) std::swap(a, b);
      return LseAcc{a.m, a.s + b.s * std::exp(b.m - a.m)};
    } else {
      return a + b;
    }
  }
  static T finish(Acc a, int64_t n) {
    if constexpr (K == ReduceKind::Mean) {
      return static_cast<T>(a / static_cast<double>(n));
    } else if constexpr (K == ReduceKind::L2) {
      return static_cast<T>(std::sqrt(a));
    } else if constexpr (K == ReduceKind::LogSum) {
      return static_cast<T>(std::log(a));
    } else if constexpr (K == ReduceKind::LogSumExp) {
      return static_cast<T>(a.m + std::log(a.s));
    } else {
      return static_cast<T>(a);
    }
  }
};

// y[o, i] = reduce over r of x[o, r, i], x viewed as [outer, R, inner].
template <class T, ReduceKind K>
void reduce_ori(const T* x, T* y, int64_t outer, int64_t R, int64_t inner) {
  using Red = Reducer<T, K>;
  using Acc = typename Red::Acc;
  const bool big = outer * R * inner > 32768;
  if (inner == 1) {
#pragma omp parallel for if (big && outer > 1)
    for (int64_t o = 0; o < outer; ++o) {
      const T* p = x + o * R;
      Acc a[8];
      for (auto& v : a) v = Red::init();
      int64_t r = 0;
      for (; r + 8 <= R; r += 8)
        for (int k = 0; k < 8; ++k) a[k] = Red::step(a[k], p[r + k]);
      for (; r < R; ++r) a[0] = Red::step(a[0], p[r]);
      for (int k = 1; k < 8; ++k) a[0] = Red::merge(a[0], a[k]);
      y[o] = Red::finish(a[0], R);
    }
    return;
  }
  const int64_t width = std::min<int64_t>(inner, 256);
  const int64_t chunks = (inner + width - 1) / width;
#pragma omp parallel for if (big && outer * chunks > 1)
  for (int64_t task = 0; task < outer * chunks; ++task) {
    const int64_t o = task / chunks, i0 = (task % chunks) * width;
    const int64_t w = std::min(width, inner - i0);
    Acc acc[256];
    for (int64_t i = 0; i < w; ++i) acc[i] = Red::init();
    for (int64_t r = 0; r < R; ++r) {
      const T* p = x + (o * R + r) * inner + i0;
      for (int64_t i = 0; i < w; ++i) acc[i] = Red::step(acc[i], p[i]);
    }
    for (int64_t i = 0; i < w; ++i) y[o * inner + i0 + i] = Red::finish(acc[i], R);
  }
}

// Any set of axes: every output element folds the elements at base[o] + roff[r].
template <class T, ReduceKind K>
void reduce_general(const T* x, T* y, const Shape& shape, const std::vector<bool>& reduced) {
  using Red = Reducer<T, K>;
  const auto strides = contiguous_strides(shape);
  std::vector<int64_t> roff{0}, base{0};
  for (size_t d = 0; d < shape.size(); ++d) {
    auto& v = reduced[d] ? roff : base;
    std::vector<int64_t> next;
    next.reserve(v.size() * shape[d]);
    for (int64_t b : v)
      for (int64_t k = 0; k < shape[d]; ++k) next.push_back(b + k * strides[d]);
    v.swap(next);
  }
  const int64_t O = static_cast<int64_t>(base.size()), R = static_cast<int64_t>(roff.size());
#pragma omp parallel for if (O * R > 32768)
  for (int64_t o = 0; o < O; ++o) {
    auto a = Red::init();
    for (int64_t r = 0; r < R; ++r) a = Red::step(a, x[base[o] + roff[r]]);
    y[o] = Red::finish(a, R);
  }
}

// Sorted, non-negative, unique axes; throws naming the axis and the shape when out of range.
std::vector<int64_t> normalise_axes(const KernelContext& ctx, std::vector<int64_t> axes,
                                    const Shape& shape) {
  const int64_t r = static_cast<int64_t>(shape.size());
  for (auto& a : axes) {
    if (a < -r || a >= r)
      ctx.fail(cat("axis ", a, " is out of range for input ", shape_str(shape)));
    if (a < 0) a += r;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

struct ReduceAttrs {
  bool keepdims;
  bool noop_with_empty_axes;
  bool axes_from_attr;
  std::vector<int64_t> axes;
};

template <class T, ReduceKind K>
class ReduceKernel : public OpKernel {
 public:
  explicit ReduceKernel(const Node& n)
      : attrs_{n.attr_int("keepdims", 1) != 0, n.attr_int("noop_with_empty_axes", 0) != 0,
               n.has_attr("axes"), n.attr_ints("axes")} {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    std::vector<int64_t> axes = attrs_.axes;
    if (!attrs_.axes_from_attr && ctx.has_input(1)) axes = ctx.input(1).to_int_vector();
    if (axes.empty()) {
      if (attrs_.noop_with_empty_axes) return ctx.set_output(0, x);
      for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
    }
    axes = normalise_axes(ctx, axes, shape);
    std::vector<bool> reduced(shape.size(), false);
    for (int64_t a : axes) reduced[a] = true;
    Shape out_shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!reduced[d])
        out_shape.push_back(shape[d]);
      else if (attrs_.keepdims)
        out_shape.push_back(1);
    }
    Tensor& y = ctx.allocate_output(0, dtype_of<T>(), out_shape);
    if (y.numel() == 0) return;

    // Drop size-1 dims and merge neighbours of the same kind: [kept][reduced][kept] fits
    // reduce_ori, anything longer (e.g. reduced, kept, reduced) goes through reduce_general.
    Shape dims;
    std::vector<bool> red;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      if (!red.empty() && red.back() == reduced[d]) {
        dims.back() *= shape[d];
      } else {
        dims.push_back(shape[d]);
        red.push_back(reduced[d]);
      }
    }
    int64_t outer = 1, R = 1, inner = 1;
    size_t g = 0;
    if (g < dims.size() && !red[g]) outer = dims[g++];
    if (g < dims.size() && red[g]) R = dims[g++];
    if (g < dims.size() && !red[g]) inner = dims[g++];
    if (g == dims.size()) {
      reduce_ori<T, K>(x.data<T>(), y.data<T>(), outer, R, inner);
    } else {
      reduce_general<T, K>(x.data<T>(), y.data<T>(), dims, red);
    }
  }

 private:
  ReduceAttrs attrs_;
};

// The [outer, len, inner] view of `shape` around `axis` (already normalised).
void split_at_axis(const Shape& shape, int64_t axis, int64_t& outer, int64_t& len, int64_t& inner) {
  outer = numel(Shape(shape.begin(), shape.begin() + axis));
  len = shape[axis];
  inner = numel(Shape(shape.begin() + axis + 1, shape.end()));
}

// ArgMax / ArgMin along `axis`: the index (int64) of the first extremum, or of the last when
// select_last_index=1. keepdims as for the reductions.
struct ArgAttrs {
  int64_t axis;
  bool keepdims, select_last;
};

template <class T, bool kMax>
class ArgKernel : public OpKernel {
 public:
  explicit ArgKernel(const Node& n)
      : attrs_{n.attr_int("axis", 0), n.attr_int("keepdims", 1) != 0,
               n.attr_int("select_last_index", 0) != 0} {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = normalise_axes(ctx, {attrs_.axis}, x.shape())[0];
    int64_t outer, len, inner;
    split_at_axis(x.shape(), axis, outer, len, inner);
    if (len == 0)
      ctx.fail(cat("cannot take the arg-extremum of an empty axis: input ", shape_str(x.shape()),
                   ", axis ", attrs_.axis));
    Shape out_shape = x.shape();
    if (attrs_.keepdims)
      out_shape[axis] = 1;
    else
      out_shape.erase(out_shape.begin() + axis);
    int64_t* y = ctx.allocate_output(0, DType::I64, out_shape).data<int64_t>();
    const T* xp = x.data<T>();
    const bool last = attrs_.select_last;
#pragma omp parallel for if (outer * len * inner > 32768)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = xp + o * len * inner + i;
        T best = p[0];
        int64_t arg = 0;
        for (int64_t l = 1; l < len; ++l) {
          const T v = p[l * inner];
          const bool better =
              kMax ? (v > best || (last && v == best)) : (v < best || (last && v == best));
          if (better) best = v, arg = l;
        }
        y[o * inner + i] = arg;
      }
    }
  }

 private:
  ArgAttrs attrs_;
};

// CumSum along the axis given by input 1 (a scalar or 1-element int tensor):
//   y[k] = Σ_{j <= k} x[j]; exclusive: j < k; reverse: sums run from the end.
// Floating sums accumulate in double.
// CumSumGrad(dY, axis) with the forward's attributes exclusive and reverse: dX_j = Σ_{k ≥ j} dY_k
// (k > j when exclusive), i.e. CumSum(dY) with the same 'exclusive' and the opposite 'reverse'
// (kGrad flips it). The autodiff emits that CumSum itself; CumSumGrad is the same as one node.
struct CumSumAttrs {
  bool exclusive, reverse;
};

template <class T, bool kGrad = false>
class CumSumKernel : public OpKernel {
 public:
  using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
  explicit CumSumKernel(const Node& n)
      : attrs_{n.attr_int("exclusive", 0) != 0, (n.attr_int("reverse", 0) != 0) != kGrad} {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& axis_t = ctx.input(1);
    if (axis_t.numel() != 1)
      ctx.fail(cat("axis must hold one value, got shape ", shape_str(axis_t.shape())));
    if (x.rank() == 0) ctx.fail("CumSum needs an input of rank >= 1, got a scalar");
    const int64_t axis = normalise_axes(ctx, {axis_t.item_as_int(0)}, x.shape())[0];
    int64_t outer, len, inner;
    split_at_axis(x.shape(), axis, outer, len, inner);
    T* y = ctx.allocate_output(0, dtype_of<T>(), x.shape()).template data<T>();
    const T* xp = x.data<T>();
    const bool excl = attrs_.exclusive, rev = attrs_.reverse;
#pragma omp parallel for if (outer * len * inner > 32768)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        Acc s = 0;
        for (int64_t k = 0; k < len; ++k) {
          const int64_t off = base + (rev ? len - 1 - k : k) * inner;
          if (excl) {
            y[off] = static_cast<T>(s);
            s += static_cast<Acc>(xp[off]);
          } else {
            s += static_cast<Acc>(xp[off]);
            y[off] = static_cast<T>(s);
          }
        }
      }
    }
  }

 private:
  CumSumAttrs attrs_;
};

template <ReduceKind K>
void add_reduce(KernelRegistry& r, OpId op) {
  r.add(op, Device::CPU, DType::F32, kernel_factory<ReduceKernel<float, K>>());
  r.add(op, Device::CPU, kLowFloats, in_fp32(kernel_factory<ReduceKernel<float, K>>()));
  r.add(op, Device::CPU, DType::F64, kernel_factory<ReduceKernel<double, K>>());
  r.add(op, Device::CPU, DType::I32, kernel_factory<ReduceKernel<int32_t, K>>());
  r.add(op, Device::CPU, DType::I64, kernel_factory<ReduceKernel<int64_t, K>>());
  if constexpr (K == ReduceKind::Max || K == ReduceKind::Min) {
    r.add(op, Device::CPU, DType::I8, kernel_factory<ReduceKernel<int8_t, K>>());
    r.add(op, Device::CPU, DType::U8, kernel_factory<ReduceKernel<uint8_t, K>>());
  }
}

template <bool kMax>
void add_arg(KernelRegistry& r, OpId op) {
  r.add(op, Device::CPU, DType::F32, kernel_factory<ArgKernel<float, kMax>>());
  r.add(op, Device::CPU, kLowFloats, in_fp32(kernel_factory<ArgKernel<float, kMax>>()));
  r.add(op, Device::CPU, DType::F64, kernel_factory<ArgKernel<double, kMax>>());
  r.add(op, Device::CPU, DType::I32, kernel_factory<ArgKernel<int32_t, kMax>>());
  r.add(op, Device::CPU, DType::I64, kernel_factory<ArgKernel<int64_t, kMax>>());
  r.add(op, Device::CPU, DType::I8, kernel_factory<ArgKernel<int8_t, kMax>>());
  r.add(op, Device::CPU, DType::U8, kernel_factory<ArgKernel<uint8_t, kMax>>());
}

}  // namespace

void register_reduce(KernelRegistry& r) {
  add_reduce<ReduceKind::Sum>(r, OpId::ReduceSum);
  add_reduce<ReduceKind::Mean>(r, OpId::ReduceMean);
  add_reduce<ReduceKind::Max>(r, OpId::ReduceMax);
  add_reduce<ReduceKind::Min>(r, OpId::ReduceMin);
  add_reduce<ReduceKind::Prod>(r, OpId::ReduceProd);
  add_reduce<ReduceKind::SumSquare>(r, OpId::ReduceSumSquare);
  add_reduce<ReduceKind::L1>(r, OpId::ReduceL1);
  add_reduce<ReduceKind::L2>(r, OpId::ReduceL2);
  add_reduce<ReduceKind::LogSum>(r, OpId::ReduceLogSum);
  add_reduce<ReduceKind::LogSumExp>(r, OpId::ReduceLogSumExp);
  add_arg<true>(r, OpId::ArgMax);
  add_arg<false>(r, OpId::ArgMin);
  r.add(OpId::CumSum, Device::CPU, DType::F32, kernel_factory<CumSumKernel<float>>());
  r.add(OpId::CumSum, Device::CPU, kLowFloats, in_fp32(kernel_factory<CumSumKernel<float>>()));
  r.add(OpId::CumSum, Device::CPU, DType::F64, kernel_factory<CumSumKernel<double>>());
  r.add(OpId::CumSum, Device::CPU, DType::I32, kernel_factory<CumSumKernel<int32_t>>());
  r.add(OpId::CumSum, Device::CPU, DType::I64, kernel_factory<CumSumKernel<int64_t>>());
  using CumSumGradF32 = CumSumKernel<float, true>;
  r.add(OpId::CumSumGrad, Device::CPU, DType::F32, kernel_factory<CumSumGradF32>());
  r.add(OpId::CumSumGrad, Device::CPU, kLowFloats, in_fp32(kernel_factory<CumSumGradF32>()));
  r.add(OpId::CumSumGrad, Device::CPU, DType::F64, kernel_factory<CumSumKernel<double, true>>());
  register_topk(r);
}

}  // namespace oat::cpu
