// Normalisation: BatchNormalization (inference and training mode), LayerNormalization,
// InstanceNormalization; LpNormalization is registered from here (lp_norm.cc).
//
// Statistics are computed two-pass (mean, then the mean of squared deviations) in the
// accumulation type Acc: double for BatchNorm/InstanceNorm statistics over whole channels, float
// (double for F64 tensors) for LayerNorm rows. Variances are population variances (divide by n),
// as ONNX defines them.
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics of Eigen's
// packet sqrt/reductions (GCC bug 105593); it must be silenced before the first include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

void register_lp_norm(KernelRegistry& r);  // lp_norm.cc: LpNormalization LpNormalizationGrad

namespace {

// Input i (a per-channel parameter of any floating dtype) as `n` values of type A.
template <class A>
std::vector<A> param_vector(const KernelContext& ctx, int i, int64_t n, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != n)
    ctx.fail(cat(what, " (input ", i, ") has shape ", shape_str(t.shape()), ", expected ", n,
                 " elements"));
  std::vector<A> v(static_cast<size_t>(n));
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* p = static_cast<const S*>(t.raw_data());
    for (int64_t k = 0; k < n; ++k) v[k] = static_cast<A>(static_cast<double>(p[k]));
  });
  return v;
}

// Writes `v` into output i, allocated with dtype `dtype` and shape `shape`.
template <class A>
void write_output(KernelContext& ctx, int i, DType dtype, const Shape& shape,
                  const std::vector<A>& v) {
  Tensor& t = ctx.allocate_output(i, dtype, shape);
  dispatch_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    S* p = static_cast<S*>(t.raw_data());
    for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<S>(static_cast<double>(v[k]));
  });
}

// Mean and population variance of each of `planes` groups; group g is the `count` chunks of
// `len` contiguous elements starting at x + g*len + j*stride (j < count). Two passes in double,
// each chunk summed in vector lanes (omp simd): a single running sum is one dependent add per
// element, and made ResNet-18's training-mode BatchNormalization cost 2x its gradient.
template <class T>
void plane_stats(const T* x, int64_t planes, int64_t count, int64_t len, int64_t stride,
                 std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(planes, 0.0);
  var.assign(planes, 0.0);
  const double n = static_cast<double>(count * len);
#pragma omp parallel for if (planes * count * len > 32768)
  for (int64_t g = 0; g < planes; ++g) {
    double s = 0;
    for (int64_t j = 0; j < count; ++j) {
      const T* p = x + g * len + j * stride;
#pragma omp simd reduction(+ : s)
      for (int64_t k = 0; k < len; ++k) s += static_cast<double>(p[k]);
    }
    const double m = n > 0 ? s / n : 0.0;
    double q = 0;
    for (int64_t j = 0; j < count; ++j) {
      const T* p = x + g * len + j * stride;
#pragma omp simd reduction(+ : q)
      for (int64_t k = 0; k < len; ++k) {
        const double d = static_cast<double>(p[k]) - m;
        q += d * d;
      }
    }
    mean[g] = m;
    var[g] = n > 0 ? q / n : 0.0;
  }
}

// y[n, c, s] = x[n, c, s] * a[c] + b[c], parallel over the N*C planes of S elements.
template <class T, class A>
void scale_shift(const T* x, T* y, int64_t N, int64_t C, int64_t S, const std::vector<A>& a,
                 const std::vector<A>& b) {
#pragma omp parallel for if (N * C * S > 32768)
  for (int64_t p = 0; p < N * C; ++p) {
    const int64_t c = p % C;
    const T* xp = x + p * S;
    T* yp = y + p * S;
    for (int64_t s = 0; s < S; ++s) yp[s] = static_cast<T>(static_cast<A>(xp[s]) * a[c] + b[c]);
  }
}

// BatchNormalization, X [N, C, D1, ...], per-channel scale, B, mean, var:
//   inference:  Y = (X - mean) / sqrt(var + epsilon) * scale + B
//   training:   current_mean/var = mean/population variance of X over all axes but 1;
//               Y uses them, and running_mean = input_mean * momentum + current_mean * (1 -
//               momentum) (running_var likewise), as the ONNX spec (opset 14/15) defines.
// Modes by opset: >= 14 the training_mode attribute (outputs Y, running_mean, running_var);
// 7..13 training when more than one output is present (outputs Y, mean, var, saved_mean,
// saved_var: the running statistics, then the batch mean and batch variance); <= 6 as 7..13
// unless is_test=1. spatial=0 (opset < 9): statistics per (C, D1, ...) element instead of per C.
class BatchNormKernelBase : public OpKernel {
 public:
  explicit BatchNormKernelBase(const Node& n)
      : epsilon_(n.attr_float("epsilon", 1e-5f)),
        momentum_(n.attr_float("momentum", 0.9f)),
        spatial_(n.opset < 9 ? n.attr_int("spatial", 1) != 0 : true) {
    if (n.opset >= 14) {
      training_ = n.attr_int("training_mode", 0) != 0;
    } else {
      int present = 0;
      for (size_t i = 1; i < n.outputs.size(); ++i) present += !n.outputs[i].empty();
      training_ = present > 0 && !(n.opset <= 6 && n.attr_int("is_test", 0) != 0);
    }
    legacy_outputs_ = n.opset < 14;
  }

 protected:
  float epsilon_, momentum_;
  bool spatial_, training_ = false, legacy_outputs_ = false;
};

template <class T>
class BatchNormKernel : public BatchNormKernelBase {
 public:
  using BatchNormKernelBase::BatchNormKernelBase;
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail(cat("X must be [N, C, ...], got ", shape_str(x.shape())));
    const int64_t N = x.dim(0);
    int64_t C = x.dim(1);
    int64_t S = x.numel() / std::max<int64_t>(1, N * C);
    if (!spatial_) {  // per-activation statistics: every (c, d1, ...) is its own channel
      C *= S;
      S = 1;
    }
    const auto scale = param_vector<A>(ctx, 1, C, "scale");
    const auto bias = param_vector<A>(ctx, 2, C, "B");
    const auto in_mean = param_vector<double>(ctx, 3, C, "input_mean");
    const auto in_var = param_vector<double>(ctx, 4, C, "input_var");
    Tensor& y = ctx.allocate_output(0, dtype_of<T>(), x.shape());
    std::vector<double> mean = in_mean, var = in_var;
    if (training_) plane_stats<T>(x.data<T>(), C, N, S, C * S, mean, var);
    std::vector<A> a(C), b(C);
    for (int64_t c = 0; c < C; ++c) {
      const double inv = 1.0 / std::sqrt(var[c] + static_cast<double>(epsilon_));
      a[c] = static_cast<A>(scale[c] * inv);
      b[c] = static_cast<A>(bias[c] - mean[c] * scale[c] * inv);
    }
    scale_shift<T, A>(x.data<T>(), y.data<T>(), N, C, S, a, b);
    if (!training_) return;
    const double mom = momentum_;
    std::vector<double> run_mean(C), run_var(C);
    for (int64_t c = 0; c < C; ++c) {
      run_mean[c] = in_mean[c] * mom + mean[c] * (1.0 - mom);
      run_var[c] = in_var[c] * mom + var[c] * (1.0 - mom);
    }
    const Shape& ps = ctx.input(3).shape();
    const DType pt = ctx.input(3).dtype();
    if (ctx.output_requested(1)) write_output(ctx, 1, pt, ps, run_mean);
    if (ctx.output_requested(2)) write_output(ctx, 2, pt, ps, run_var);
    if (legacy_outputs_ && ctx.output_requested(3)) write_output(ctx, 3, pt, ps, mean);
    if (legacy_outputs_ && ctx.output_requested(4)) write_output(ctx, 4, pt, ps, var);
  }
};

// LayerNormalization (opset 17): rows = prod(shape[:axis]), each row of n = prod(shape[axis:])
//   mean = Σx/n, var = Σ(x - mean)²/n, inv = 1/sqrt(var + epsilon)
//   Y = (x - mean) * inv * Scale + B;  optional outputs Mean and InvStdDev, shape[axis:] = 1.
// Scale and B have n elements (or broadcast to shape[axis:]). Rows run in parallel.
struct LayerNormAttrs {
  int64_t axis;
  float epsilon;
};

template <class T>
class LayerNormKernel : public OpKernel {
 public:
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  using Row = Eigen::Array<A, 1, Eigen::Dynamic>;
  explicit LayerNormKernel(const Node& n)
      : attrs_{n.attr_int("axis", -1), n.attr_float("epsilon", 1e-5f)} {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    const int64_t axis = attrs_.axis < 0 ? attrs_.axis + r : attrs_.axis;
    if (axis < 0 || axis >= std::max(r, 1))
      ctx.fail(cat("axis ", attrs_.axis, " is out of range for X ", shape_str(x.shape())));
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t n = numel(norm_shape);
    const int64_t rows = n > 0 ? x.numel() / n : 0;
    const Row scale = expand(ctx, 1, norm_shape, "Scale", A(1));
    const Row bias = expand(ctx, 2, norm_shape, "B", A(0));
    Tensor& y = ctx.allocate_output(0, dtype_of<T>(), x.shape());
    Shape stat_shape = x.shape();
    for (int d = static_cast<int>(axis); d < r; ++d) stat_shape[d] = 1;
    const DType stat_type = std::is_same_v<T, double> ? DType::F64 : DType::F32;
    A* mean_out = ctx.output_requested(1)
                      ? ctx.allocate_output(1, stat_type, stat_shape).template data<A>()
                      : nullptr;
    A* inv_out = ctx.output_requested(2)
                     ? ctx.allocate_output(2, stat_type, stat_shape).template data<A>()
                     : nullptr;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    const A eps = static_cast<A>(attrs_.epsilon);
#pragma omp parallel for if (rows * n > 16384)
    for (int64_t i = 0; i < rows; ++i) {
      auto normalise = [&](const auto& v) {
        const A m = n > 0 ? v.sum() / static_cast<A>(n) : A(0);
        const A var = n > 0 ? (v - m).square().sum() / static_cast<A>(n) : A(0);
        const A inv = A(1) / std::sqrt(var + eps);
        Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>>(yp + i * n, n) =
            (((v - m) * inv) * scale + bias).template cast<T>();
        if (mean_out) mean_out[i] = m;
        if (inv_out) inv_out[i] = inv;
      };
      const Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>> row(xp + i * n, n);
      if constexpr (std::is_same_v<T, A>) {
        normalise(row);
      } else {  // low precision: widen the row once
        normalise(Row(row.template cast<A>()));
      }
    }
  }

 private:
  // Input i as a row of n values broadcast to `shape`; `fill` when the input is omitted.
  Row expand(const KernelContext& ctx, int i, const Shape& shape, const char* what, A fill) const {
    const int64_t n = numel(shape);
    const Tensor* t = ctx.input_or_null(i);
    if (!t) return Row::Constant(n, fill);
    Row out(n);
    bool ok = t->rank() <= static_cast<int>(shape.size());
    for (int d = 0; ok && d < t->rank(); ++d) {
      const int64_t td = t->shape()[d], sd = shape[shape.size() - t->rank() + d];
      ok = td == sd || td == 1;
    }
    if (!ok)
      ctx.fail(cat(what, " ", shape_str(t->shape()), " does not broadcast to the normalised shape ",
                   shape_str(shape)));
    const auto st = broadcast_strides(t->shape(), shape);
    const std::vector<double> vals = [&] {
      std::vector<double> v(t->numel());
      for (int64_t k = 0; k < t->numel(); ++k) v[k] = t->item_as_double(k);
      return v;
    }();
    Shape idx(shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * st[d];
      out[k] = static_cast<A>(vals[off]);
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

  LayerNormAttrs attrs_;
};

// InstanceNormalization, X [N, C, D1, ...]: for each (n, c) plane of S = D1*... elements
//   Y = (x - mean) / sqrt(var + epsilon) * scale[c] + B[c]
template <class T>
class InstanceNormKernel : public OpKernel {
 public:
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  explicit InstanceNormKernel(const Node& n) : epsilon_(n.attr_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail(cat("X must be [N, C, ...], got ", shape_str(x.shape())));
    const int64_t N = x.dim(0), C = x.dim(1);
    const int64_t S = N * C > 0 ? x.numel() / (N * C) : 0;
    const auto scale = param_vector<double>(ctx, 1, C, "scale");
    const auto bias = param_vector<double>(ctx, 2, C, "B");
    std::vector<double> mean, var;
    plane_stats<T>(x.data<T>(), N * C, 1, S, 0, mean, var);
    std::vector<A> a(N * C), b(N * C);
    for (int64_t p = 0; p < N * C; ++p) {
      const int64_t c = p % C;
      const double inv = 1.0 / std::sqrt(var[p] + static_cast<double>(epsilon_));
      a[p] = static_cast<A>(scale[c] * inv);
      b[p] = static_cast<A>(bias[c] - mean[p] * scale[c] * inv);
    }
    Tensor& y = ctx.allocate_output(0, dtype_of<T>(), x.shape());
    // Every plane has its own (a, b): treat the N*C planes as one batch of N*C channels.
    scale_shift<T, A>(x.data<T>(), y.data<T>(), 1, N * C, S, a, b);
  }

 private:
  float epsilon_;
};

}  // namespace

void register_norm(KernelRegistry& r) {
  r.add(OpId::BatchNormalization, Device::CPU, DType::F32,
        kernel_factory<BatchNormKernel<float>>());
  // F16/BF16: FP32 compute on the widened data. BatchNormalization keeps scale, B, mean, var and
  // the running statistics (training outputs 1, 2) in FP32 (convert/precision.h's rule);
  // LayerNormalization's Mean/InvStdDev outputs are ONNX's stash type U (float by default).
  r.add(OpId::BatchNormalization, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<BatchNormKernel<float>>(), Fp32Io::of({1, 2, 3, 4}, {1, 2})));
  r.add(OpId::BatchNormalization, Device::CPU, DType::F64,
        kernel_factory<BatchNormKernel<double>>());
  r.add(OpId::LayerNormalization, Device::CPU, DType::F32,
        kernel_factory<LayerNormKernel<float>>());
  r.add(OpId::LayerNormalization, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<LayerNormKernel<float>>(), Fp32Io::of({}, {1, 2})));
  r.add(OpId::LayerNormalization, Device::CPU, DType::F64,
        kernel_factory<LayerNormKernel<double>>());
  r.add(OpId::InstanceNormalization, Device::CPU, DType::F32,
        kernel_factory<InstanceNormKernel<float>>());
  r.add(OpId::InstanceNormalization, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<InstanceNormKernel<float>>()));
  r.add(OpId::InstanceNormalization, Device::CPU, DType::F64,
        kernel_factory<InstanceNormKernel<double>>());
  register_lp_norm(r);
}

}  // namespace oat::cpu
