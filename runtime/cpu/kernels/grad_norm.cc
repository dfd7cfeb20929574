// Gradient kernels of the normalisations (internal domain).
//
// BatchNormalizationGrad(dY, X, scale, [mean, var]) -> (dX, dScale, dBias)
//   attrs training_mode (0), epsilon (1e-5), spatial (1), instance (0).
//   Per channel c, over its m = N·D1·… elements, x̂ = (x − μ)/σ, σ = √(var + ε):
//   training_mode=1 (μ, var are the batch statistics, recomputed here; they depend on X):
//     dX = (γ/σ)·(dY − mean(dY) − x̂·mean(dY⊙x̂))
//   training_mode=0 (μ, var are the inputs mean/var, constants):
//     dX = dY·γ/σ
//   both: dScale = Σ dY⊙x̂,  dBias = Σ dY  (dScale/dBias have scale's shape and dtype).
//   spatial=0 (BatchNormalization before opset 9): every (c, d1, …) is its own channel.
//   instance=1 is InstanceNormalization: statistics per (n, c) plane (always as training_mode=1),
//   dScale/dBias summed over n.
// LayerNormalizationGrad(dY, X, Scale, [Mean, InvStdDev]) -> (dX, dScale, dBias)
//   attrs axis (-1), epsilon (1e-5). Rows are X's elements before `axis`, each row normalised over
//   the n elements from `axis` on; g = dY⊙γ (Scale broadcast to shape[axis:]):
//     dX = σ⁻¹·(g − mean(g) − x̂·mean(g⊙x̂))
//     dScale = Σ_rows dY⊙x̂,  dBias = Σ_rows dY      (both of shape shape[axis:]; the builder sums
//                                                      them to Scale's and B's own shapes)
//   Mean/InvStdDev are the forward node's optional outputs; without them they are recomputed.
// Sums: BatchNorm/InstanceNorm sum each contiguous chunk (an (n, c) plane) in the element type,
// vectorised, and the chunks of a channel in double; LayerNorm sums rows in the element type and
// dScale/dBias across rows in per-thread partial sums.
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics of Eigen's
// packet reductions (GCC bug 105593); it must be silenced before the first include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {
namespace {

// Input i (any floating dtype) as `n` doubles; fails naming the input when the count differs.
std::vector<double> param_doubles(const KernelContext& ctx, int i, int64_t n, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != n)
    ctx.fail(cat(what, " (input ", i, ") has shape ", shape_str(t.shape()), ", expected ", n,
                 " elements"));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[k] = t.item_as_double(k);
  return v;
}

// Writes `v` into output i with the dtype and shape of `like`.
void write_like(KernelContext& ctx, int i, const Tensor& like, const std::vector<double>& v) {
  Tensor& t = ctx.allocate_output(i, like.dtype(), like.shape());
  dispatch_dtype(like.dtype(), [&](auto tag) {
    using S = decltype(tag);
    S* p = static_cast<S*>(t.raw_data());
    for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<S>(v[k]);
  });
}

struct StatNormAttrs {
  bool training, spatial, instance;
  double epsilon;
};

template <class T>
class BatchNormGradKernel : public OpKernel {
 public:
  explicit BatchNormGradKernel(const Node& n)
      : attrs_{n.attr_int("training_mode", 0) != 0 || n.attr_int("instance", 0) != 0,
               n.attr_int("spatial", 1) != 0, n.attr_int("instance", 0) != 0,
               n.attr_float("epsilon", 1e-5f)} {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (x.rank() < 2) ctx.fail(cat("X must be [N, C, ...], got ", shape_str(x.shape())));
    if (dy.shape() != x.shape() || dy.dtype() != x.dtype())
      ctx.fail(cat("gradient dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()),
                   " does not match X ", dtype_name(x.dtype()), " ", shape_str(x.shape())));
    const int64_t N = x.dim(0);
    int64_t C = x.dim(1);
    int64_t S = N * C > 0 ? x.numel() / (N * C) : 0;
    if (!attrs_.spatial && !attrs_.instance) {
      C *= S;
      S = 1;
    }
    const auto scale = param_doubles(ctx, 2, C, "scale");
    std::vector<double> mean_in, var_in;
    if (!attrs_.training) {
      if (!ctx.has_input(3) || !ctx.has_input(4))
        ctx.fail("inference mode (training_mode=0) needs the mean and var inputs (3 and 4)");
      mean_in = param_doubles(ctx, 3, C, "mean");
      var_in = param_doubles(ctx, 4, C, "var");
    }
    // Group g: `count` chunks of S contiguous elements at g·S + j·stride, channel g % C.
    const int64_t groups = attrs_.instance ? N * C : C;
    const int64_t count = attrs_.instance ? 1 : N;
    const int64_t stride = attrs_.instance ? 0 : C * S;
    const double m = static_cast<double>(count * S);
    const T* xp = x.data<T>();
    const T* gp = dy.data<T>();
    T* dxp = ctx.output_requested(0)
                 ? ctx.allocate_output(0, x.dtype(), x.shape()).template data<T>()
                 : nullptr;
    std::vector<double> sum_dy(groups), sum_dyxhat(groups);
#pragma omp parallel for if (x.numel() > 32768)
    for (int64_t grp = 0; grp < groups; ++grp) {
      const int64_t c = grp % C;
      // Chunk sums run in T (vectorised: omp simd), the sums across chunks in double.
      double mu = 0;
      if (attrs_.training) {
        double s = 0;
        for (int64_t j = 0; j < count; ++j) {
          const T* xc = xp + grp * S + j * stride;
          T sj = 0;
#pragma omp simd reduction(+ : sj)
          for (int64_t k = 0; k < S; ++k) sj += xc[k];
          s += static_cast<double>(sj);
        }
        mu = m > 0 ? s / m : 0.0;
      } else {
        mu = mean_in[c];
      }
      const T tmu = static_cast<T>(mu);
      double q = 0, sg = 0, sgx = 0;  // Σ (x − μ)², Σ dY, Σ dY·(x − μ)
      for (int64_t j = 0; j < count; ++j) {
        const int64_t o = grp * S + j * stride;
        const T* xc = xp + o;
        const T* gc = gp + o;
        T qj = 0, gj = 0, gxj = 0;
#pragma omp simd reduction(+ : qj, gj, gxj)
        for (int64_t k = 0; k < S; ++k) {
          const T d = xc[k] - tmu;
          qj += d * d;
          gj += gc[k];
          gxj += gc[k] * d;
        }
        q += static_cast<double>(qj);
        sg += static_cast<double>(gj);
        sgx += static_cast<double>(gxj);
      }
      const double var = attrs_.training ? (m > 0 ? q / m : 0.0) : var_in[c];
      const double inv = 1.0 / std::sqrt(var + attrs_.epsilon);
      sum_dy[grp] = sg;
      sum_dyxhat[grp] = sgx * inv;
      if (!dxp) continue;
      // dX = a·dY − k·(x − μ) − b, a = γ/σ; training: b = a·mean(dY), k = a·mean(dY⊙x̂)/σ.
      const double a = scale[c] * inv;
      const T ta = static_cast<T>(a);
      const T tk = static_cast<T>(attrs_.training && m > 0 ? a * inv * sgx * inv / m : 0.0);
      const T tb = static_cast<T>(attrs_.training && m > 0 ? a * sg / m : 0.0);
      for (int64_t j = 0; j < count; ++j) {
        const int64_t o = grp * S + j * stride;
        const T* xc = xp + o;
        const T* gc = gp + o;
        T* dc = dxp + o;
#pragma omp simd
        for (int64_t k = 0; k < S; ++k) dc[k] = ta * gc[k] - tk * (xc[k] - tmu) - tb;
      }
    }
    if (!ctx.output_requested(1) && !ctx.output_requested(2)) return;
    std::vector<double> dscale(C, 0.0), dbias(C, 0.0);
    for (int64_t grp = 0; grp < groups; ++grp) {
      dscale[grp % C] += sum_dyxhat[grp];
      dbias[grp % C] += sum_dy[grp];
    }
    if (ctx.output_requested(1)) write_like(ctx, 1, ctx.input(2), dscale);
    if (ctx.output_requested(2)) write_like(ctx, 2, ctx.input(2), dbias);
  }

 private:
  StatNormAttrs attrs_;
};

struct LayerNormAttrs {
  int64_t axis;
  float epsilon;
};

template <class T>
class LayerNormGradKernel : public OpKernel {
 public:
  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  using RowMap = Eigen::Map<const Row>;
  explicit LayerNormGradKernel(const Node& n)
      : attrs_{n.attr_int("axis", -1), n.attr_float("epsilon", 1e-5f)} {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (dy.shape() != x.shape() || dy.dtype() != x.dtype())
      ctx.fail(cat("gradient dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()),
                   " does not match X ", dtype_name(x.dtype()), " ", shape_str(x.shape())));
    const int r = x.rank();
    const int64_t axis = attrs_.axis < 0 ? attrs_.axis + r : attrs_.axis;
    if (axis < 0 || axis >= std::max(r, 1))
      ctx.fail(cat("axis ", attrs_.axis, " is out of range for X ", shape_str(x.shape())));
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t n = numel(norm_shape);
    const int64_t rows = n > 0 ? x.numel() / n : 0;
    const Row scale = expand_scale(ctx, norm_shape);
    const T* saved_mean = saved(ctx, 3, rows, "Mean");
    const T* saved_inv = saved(ctx, 4, rows, "InvStdDev");
    const bool use_saved = saved_mean && saved_inv;
    const T* xp = x.data<T>();
    const T* gp = dy.data<T>();
    T* dxp = ctx.output_requested(0)
                 ? ctx.allocate_output(0, x.dtype(), x.shape()).template data<T>()
                 : nullptr;
    const bool want_params = ctx.output_requested(1) || ctx.output_requested(2);
    const T eps = static_cast<T>(attrs_.epsilon);
    const bool parallel = rows * n > 16384;
    const int max_threads = parallel ? num_threads() : 1;
    // Per-thread partial sums of dY⊙x̂ and dY over the rows, merged after the loop.
    std::vector<Row> part_scale(want_params ? max_threads : 0, Row::Zero(n));
    std::vector<Row> part_bias(want_params ? max_threads : 0, Row::Zero(n));
#pragma omp parallel for if (parallel) num_threads(max_threads)
    for (int64_t i = 0; i < rows; ++i) {
      const RowMap xr(xp + i * n, n), gr(gp + i * n, n);
      T mu, inv;
      if (use_saved) {
        mu = saved_mean[i];
        inv = saved_inv[i];
      } else {
        mu = xr.sum() / static_cast<T>(n);
        inv = T(1) / std::sqrt((xr - mu).square().sum() / static_cast<T>(n) + eps);
      }
      // Expressions only (no per-row temporaries): x̂ = (x − μ)·σ⁻¹, g = dY⊙γ.
      const auto xhat = (xr - mu) * inv;
      if (dxp) {
        const auto g = gr * scale;
        const T mean_g = g.sum() / static_cast<T>(n);
        const T mean_gx = (g * xhat).sum() / static_cast<T>(n);
        Eigen::Map<Row>(dxp + i * n, n) = inv * (g - mean_g - xhat * mean_gx);
      }
      if (want_params) {
        const int t = thread_id();
        part_scale[t] += gr * xhat;
        part_bias[t] += gr;
      }
    }
    if (!want_params) return;
    for (int t = 1; t < max_threads; ++t) {
      part_scale[0] += part_scale[t];
      part_bias[0] += part_bias[t];
    }
    for (int k = 1; k <= 2; ++k) {
      if (!ctx.output_requested(k)) continue;
      Tensor& out = ctx.allocate_output(k, x.dtype(), norm_shape);
      Eigen::Map<Row>(out.data<T>(), n) = k == 1 ? part_scale[0] : part_bias[0];
    }
  }

 private:
  static int thread_id() {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
  }

  // Input i (Mean or InvStdDev from the forward node) when present: `rows` values of type T.
  static const T* saved(const KernelContext& ctx, int i, int64_t rows, const char* what) {
    const Tensor* t = ctx.input_or_null(i);
    if (!t) return nullptr;
    if (t->dtype() != dtype_of<T>() || t->numel() != rows)
      ctx.fail(cat(what, " (input ", i, ") is ", dtype_name(t->dtype()), " ", shape_str(t->shape()),
                   ", expected ", dtype_name(dtype_of<T>()), " with ", rows, " elements"));
    return t->data<T>();
  }

  // Scale (input 2) broadcast to the normalised shape, as the forward kernel reads it.
  static Row expand_scale(const KernelContext& ctx, const Shape& shape) {
    const Tensor& t = ctx.input(2);
    bool ok = t.rank() <= static_cast<int>(shape.size());
    for (int d = 0; ok && d < t.rank(); ++d) {
      const int64_t td = t.shape()[d], sd = shape[shape.size() - t.rank() + d];
      ok = td == sd || td == 1;
    }
    if (!ok)
      ctx.fail(cat("Scale ", shape_str(t.shape()), " does not broadcast to the normalised shape ",
                   shape_str(shape)));
    const int64_t n = numel(shape);
    Row out(n);
    const auto st = broadcast_strides(t.shape(), shape);
    Shape idx(shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * st[d];
      out[k] = static_cast<T>(t.item_as_double(off));
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

  LayerNormAttrs attrs_;
};

}  // namespace

void register_grad_norm(KernelRegistry& r) {
  r.add(OpId::BatchNormalizationGrad, Device::CPU, DType::F32,
        kernel_factory<BatchNormGradKernel<float>>());
  // F16/BF16: dY and X (and dX) in the storage type; BatchNormalizationGrad's scale, mean, var
  // and dScale/dBias stay FP32, LayerNormalizationGrad's saved Mean/InvStdDev may be FP32.
  r.add(OpId::BatchNormalizationGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<BatchNormGradKernel<float>>(), Fp32Io::of({2, 3, 4}, {1, 2})));
  r.add(OpId::BatchNormalizationGrad, Device::CPU, DType::F64,
        kernel_factory<BatchNormGradKernel<double>>());
  r.add(OpId::LayerNormalizationGrad, Device::CPU, DType::F32,
        kernel_factory<LayerNormGradKernel<float>>());
  r.add(OpId::LayerNormalizationGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<LayerNormGradKernel<float>>(), Fp32Io::of({3, 4}, {})));
  r.add(OpId::LayerNormalizationGrad, Device::CPU, DType::F64,
        kernel_factory<LayerNormGradKernel<double>>());
}

}  // namespace oat::cpu
