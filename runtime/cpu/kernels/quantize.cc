// The quantization ops (opsets 10 and 13; layout of scale / zero_point in quantize_args.h).
// Rounding is round half to even (std::nearbyint in the default rounding mode, numpy's rint),
// saturation clamps to the quantized type's range [qmin, qmax]; arithmetic in float32 (F16/BF16
// operands widened first, float outputs rounded once to their type).
//
//   QuantizeLinear(x, y_scale, [y_zero_point]) -> y in zero_point's type (uint8 without one):
//       y = saturate(rint(x / scale) + zero_point)      (int32 x: x / scale in double)
//     a NaN x gives the zero point (rint(NaN) is taken as 0).
//   DequantizeLinear(x, x_scale, [x_zero_point]) -> y in scale's type:
//       y = (x − zero_point) · scale                     (x uint8, int8 or int32)
//   DynamicQuantizeLinear(x) -> (y uint8, y_scale float32 scalar, y_zero_point uint8 scalar):
//       lo = min(0, min x), hi = max(0, max x), scale = (hi − lo) / 255,
//       zero_point = saturate(rint(0 − lo / scale)), y = saturate(rint(x / scale) + zero_point)
//     (ONNX's formula; when hi = lo = 0 the formula divides by 0: scale is 1, as ONNX Runtime.)
//   MatMulInteger(A, B, [a_zero_point], [b_zero_point]) -> int32, numpy matmul batching:
//       Y[.., m, n] = Σ_k (A[.., m, k] − a_zp) · (B[.., k, n] − b_zp)     in int32
//     a_zp per tensor, per row of A ([M], or A's shape with the last dim 1), b_zp per tensor or
//     per column of B ([N], or B's shape with dim −2 of 1).
//   ConvInteger(x, w, [x_zero_point], [w_zero_point]) -> int32, Conv's attributes:
//       Y[n, m, p] = Σ_{c, k} (x[n, c, p·s + k·d − pad] − x_zp) · (w[m, c, k] − w_zp[m])
//     padding reads x_zp (contributes 0); x_zp per tensor, w_zp per tensor or per output channel.
//   QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y in y_zp's type:
//       acc = MatMulInteger(a, b, a_zp, b_zp);  y = saturate(rint(acc · (a_s·b_s / y_s)) + y_zp)
//     the multiplier a_s·b_s / y_s in float32 as ONNX Runtime; a's and y's parameters per tensor
//     or per row, b's per tensor or per column.
//   QLinearConv(x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp, [B int32]) -> y in y_zp's type:
//       acc = ConvInteger(x, w, x_zp, w_zp) + B[m];  y = saturate(rint(acc · (x_s·w_s[m] / y_s)) + y_zp)
//   QuantizeLinearGrad(dY, X, scale, [zero_point]) -> dX in dY's type, the forward's axis
//     (training through fake quantization X -> QuantizeLinear -> DequantizeLinear; the
//     straight-through estimator of PyTorch's fake_quantize):
//       dX = dY where qmin <= rint(X / scale) + zero_point <= qmax, else 0.
// Integer sums accumulate in int32 as the spec says (wrapping, as ONNX Runtime, on overflow).
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/matmul_shape.h"
#include "runtime/cpu/kernels/quantize_args.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// A tensor's values as float32: its own storage (F32) or a widened copy (F16, BF16).
struct FloatValues {
  Tensor hold;
  const float* p = nullptr;
};
FloatValues float_values(const KernelContext& ctx, const Tensor& t, const char* what) {
  FloatValues v;
  if (t.dtype() == DType::F32) v.hold = t;
  else if (is_low_float(t.dtype())) v.hold = widen_tensor(t);
  else
    ctx.fail(cat(what, " has dtype ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                 ", expected float32, float16 or bfloat16"));
  v.p = v.hold.data<float>();
  return v;
}

// An integer tensor's values as int32 (zero points), or `n` zeros when absent.
std::vector<int32_t> int_values(const Tensor* t, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n), 0);
  if (t)
    for (int64_t i = 0; i < t->numel(); ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(t->item_as_int(i));
  return v;
}

// A zero point's dtype must be the quantized type (`want`, or either of uint8/int8).
void check_zero_point_type(const KernelContext& ctx, const Tensor* zp, DType want,
                           const char* what) {
  if (zp && zp->dtype() != want)
    ctx.fail(cat(what, " has dtype ", dtype_name(zp->dtype()), ", expected ", dtype_name(want),
                 " (the quantized input's type)"));
}

// saturate(rint(v) + zp) as the quantized type's int32 value; NaN gives zp.
inline int32_t quantize_one(float v, int32_t zp, QuantRange r) {
  float q = std::nearbyint(v);
  if (std::isnan(q)) q = 0.f;
  q += static_cast<float>(zp);
  return q <= static_cast<float>(r.lo) ? r.lo
         : q >= static_cast<float>(r.hi) ? r.hi
                                         : static_cast<int32_t>(q);
}

// Writes float32 results `f` (X's shape) into `out` of dtype `t`, rounding once for F16/BF16.
void store_float(const Tensor& f, Tensor& out) {
  if (out.dtype() == DType::F32) return;  // written in place
  const Tensor r = round_tensor(f, out.dtype());
  std::copy_n(static_cast<const char*>(r.raw_data()), r.nbytes(),
              static_cast<char*>(out.raw_data()));
}

template <class Q>
void write_quantized(Tensor& y, int64_t n, const std::function<int32_t(int64_t)>& q) {
  Q* out = y.data<Q>();
  parallel_chunks(n, n >= kParallelBytes, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = static_cast<Q>(q(i));
  });
}

// ---- QuantizeLinear ---------------------------------------------------------------------------

void quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.input_or_null(2);
  const QuantLayout l = quant_layout(ctx, x.shape(), scale, zp);
  const DType qt = zp ? zp->dtype() : DType::U8;
  const QuantRange r = quant_range(ctx, qt, "y_zero_point");
  const FloatValues s = float_values(ctx, scale, "y_scale");
  const std::vector<int32_t> z = int_values(zp, l.channels);
  Tensor& y = ctx.allocate_output(0, qt, x.shape());
  const int64_t n = x.numel();
  auto channel = [&](int64_t i) { return l.channels == 1 ? 0 : (i / l.inner) % l.channels; };
  std::function<int32_t(int64_t)> q;
  FloatValues xv;
  if (x.dtype() == DType::I32) {  // opset 10/13 allow int32 x: the quotient in double
    const int32_t* xi = x.data<int32_t>();
    q = [&](int64_t i) {
      const int64_t c = channel(i);
      double v = std::nearbyint(static_cast<double>(xi[i]) / static_cast<double>(s.p[c]));
      if (std::isnan(v)) v = 0;
      v += z[static_cast<size_t>(c)];
      return static_cast<int32_t>(std::clamp(v, static_cast<double>(r.lo), static_cast<double>(r.hi)));
    };
  } else {
    xv = float_values(ctx, x, "x");
    q = [&](int64_t i) {
      const int64_t c = channel(i);
      return quantize_one(xv.p[i] / s.p[c], z[static_cast<size_t>(c)], r);
    };
  }
  if (qt == DType::U8) write_quantized<uint8_t>(y, n, q);
  else write_quantized<int8_t>(y, n, q);
}

// ---- DequantizeLinear -------------------------------------------------------------------------

void dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.input_or_null(2);
  if (x.dtype() != DType::U8 && x.dtype() != DType::I8 && x.dtype() != DType::I32)
    ctx.fail(cat("x has dtype ", dtype_name(x.dtype()), ": DequantizeLinear reads uint8, int8 or int32"));
  check_zero_point_type(ctx, zp, x.dtype(), "x_zero_point");
  const QuantLayout l = quant_layout(ctx, x.shape(), scale, zp);
  const FloatValues s = float_values(ctx, scale, "x_scale");
  const std::vector<int32_t> z = int_values(zp, l.channels);
  Tensor& y = ctx.allocate_output(0, scale.dtype(), x.shape());
  const int64_t n = x.numel();
  Tensor f = y.dtype() == DType::F32 ? y : Tensor(DType::F32, x.shape());
  float* out = f.data<float>();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* xi = x.data<T>();
      parallel_chunks(n, n >= kParallelBytes, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t c = l.channels == 1 ? 0 : (i / l.inner) % l.channels;
          out[i] = static_cast<float>(static_cast<int64_t>(xi[i]) - z[static_cast<size_t>(c)]) *
                   s.p[c];
        }
      });
    }
  });
  store_float(f, y);
}

// ---- QuantizeLinearGrad -----------------------------------------------------------------------

void quantize_linear_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  const Tensor* zp = ctx.input_or_null(3);
  if (dy.shape() != x.shape())
    ctx.fail(cat("dY ", shape_str(dy.shape()), " and X ", shape_str(x.shape()), " must match"));
  const QuantLayout l = quant_layout(ctx, x.shape(), scale, zp);
  const QuantRange r = quant_range(ctx, zp ? zp->dtype() : DType::U8, "zero_point");
  const FloatValues s = float_values(ctx, scale, "scale");
  const FloatValues xv = float_values(ctx, x, "X");
  const FloatValues g = float_values(ctx, dy, "dY");
  const std::vector<int32_t> z = int_values(zp, l.channels);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  Tensor f = dx.dtype() == DType::F32 ? dx : Tensor(DType::F32, dy.shape());
  float* out = f.data<float>();
  const int64_t n = x.numel();
  parallel_chunks(n, n >= kParallelBytes, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t c = l.channels == 1 ? 0 : (i / l.inner) % l.channels;
      // NaN fails both comparisons: no gradient.
      const float q = std::nearbyint(xv.p[i] / s.p[c]) + static_cast<float>(z[static_cast<size_t>(c)]);
      out[i] = q >= static_cast<float>(r.lo) && q <= static_cast<float>(r.hi) ? g.p[i] : 0.f;
    }
  });
  store_float(f, dx);
}

// ---- DynamicQuantizeLinear --------------------------------------------------------------------

void dynamic_quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const FloatValues xv = float_values(ctx, x, "x");
  const int64_t n = x.numel();
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, xv.p[i]);
    hi = std::max(hi, xv.p[i]);
  }
  const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  const QuantRange r{0, 255};
  const int32_t zp = quantize_one(0.f - lo / scale, 0, r);
  Tensor& y = ctx.allocate_output(0, DType::U8, x.shape());
  write_quantized<uint8_t>(y, n, [&](int64_t i) { return quantize_one(xv.p[i] / scale, zp, r); });
  if (ctx.output_requested(1)) ctx.allocate_output(1, DType::F32, {}).data<float>()[0] = scale;
  if (ctx.output_requested(2))
    ctx.allocate_output(2, DType::U8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

// ---- integer MatMul ---------------------------------------------------------------------------

// A per-row (A side) or per-column (B side) parameter of MatMulInteger / QLinearMatMul: one value,
// a vector along the rows (columns), or one vector per batch matrix (the operand's shape with
// the contracted dim 1). at(matrix, j): matrix = the operand's own batch index.
struct MatParam {
  std::vector<double> v;
  int64_t per_matrix = 0;  // values per batch matrix (0: per tensor)
  bool batched = false;
  double at(int64_t matrix, int64_t j) const {
    if (per_matrix == 0) return v.empty() ? 0.0 : v[0];
    return v[static_cast<size_t>((batched ? matrix * per_matrix : 0) + j)];
  }
};

// `row_side`: A's parameter (one per row m, the shape A with K as 1); otherwise B's (one per
// column n, the shape B with K as 1).
MatParam mat_param(const KernelContext& ctx, const Tensor* t, const Shape& operand, bool row_side,
                   int64_t len, const char* what) {
  MatParam p;
  if (!t) return p;
  for (int64_t i = 0; i < t->numel(); ++i) p.v.push_back(t->item_as_double(i));
  if (t->numel() == 1) return p;
  p.per_matrix = len;
  if (t->rank() == 1 && t->dim(0) == len) return p;
  Shape want = operand.size() == 1 ? Shape{len} : operand;
  if (want.size() >= 2) want[want.size() - (row_side ? 1 : 2)] = 1;
  if (t->shape() == want && want.size() >= 2) {
    p.batched = true;
    return p;
  }
  ctx.fail(cat(what, " ", shape_str(t->shape()), " must be a scalar, [", len, "] (per ",
               row_side ? "row" : "column", ") or ", shape_str(want), " for ",
               row_side ? "A " : "B ", shape_str(operand)));
}

// acc[batch, M, N] (int32) = Σ_k (A − a_zp)(B − b_zp).
template <class TA, class TB>
void matmul_int32(const MatMulShape& s, const TA* a, const TB* b, const MatParam& azp,
                  const MatParam& bzp, int32_t* acc) {
  const auto off_a = batch_offsets(s.batch_a, s.batch), off_b = batch_offsets(s.batch_b, s.batch);
  const int64_t nb = static_cast<int64_t>(off_a.size()), M = s.M, N = s.N, K = s.K;
  parallel_chunks(nb * M, nb * M * N * K >= (1 << 16), [&](int64_t begin, int64_t end) {
    std::vector<int32_t> row(static_cast<size_t>(K));
    for (int64_t bm = begin; bm < end; ++bm) {
      const int64_t bi = bm / M, m = bm % M, ma = off_a[bi], mb = off_b[bi];
      const TA* ar = a + (ma * M + m) * K;
      const int32_t za = static_cast<int32_t>(azp.at(ma, m));
      for (int64_t k = 0; k < K; ++k) row[k] = static_cast<int32_t>(ar[k]) - za;
      const TB* bm0 = b + mb * K * N;
      int32_t* out = acc + (bi * M + m) * N;
      for (int64_t n = 0; n < N; ++n) {
        const int32_t zb = static_cast<int32_t>(bzp.at(mb, n));
        uint32_t sum = 0;  // int32 arithmetic that wraps (unsigned: defined in C++)
        for (int64_t k = 0; k < K; ++k)
          sum += static_cast<uint32_t>(row[k] * (static_cast<int32_t>(bm0[k * N + n]) - zb));
        out[n] = static_cast<int32_t>(sum);
      }
    }
  });
}

void check_quantized_operand(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::U8 && t.dtype() != DType::I8)
    ctx.fail(cat(what, " has dtype ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                 ": expected uint8 or int8"));
}

// The int32 product of MatMulInteger, shared with QLinearMatMul. azp_t / bzp_t may be null.
Tensor integer_matmul(const KernelContext& ctx, const Tensor& A, const Tensor& B, const Tensor* azp_t,
                      const Tensor* bzp_t, MatMulShape* shape_out) {
  check_quantized_operand(ctx, A, "A");
  check_quantized_operand(ctx, B, "B");
  check_zero_point_type(ctx, azp_t, A.dtype(), "a_zero_point");
  check_zero_point_type(ctx, bzp_t, B.dtype(), "b_zero_point");
  const MatMulShape s = matmul_shape(ctx, A.shape(), B.shape());
  const MatParam azp = mat_param(ctx, azp_t, A.shape(), true, s.M, "a_zero_point");
  const MatParam bzp = mat_param(ctx, bzp_t, B.shape(), false, s.N, "b_zero_point");
  Tensor acc(DType::I32, s.out);
  int32_t* out = acc.data<int32_t>();
  auto run = [&](auto ta, auto tb) {
    using TA = decltype(ta);
    using TB = decltype(tb);
    matmul_int32<TA, TB>(s, A.data<TA>(), B.data<TB>(), azp, bzp, out);
  };
  const bool au = A.dtype() == DType::U8, bu = B.dtype() == DType::U8;
  if (au && bu) run(uint8_t{}, uint8_t{});
  else if (au) run(uint8_t{}, int8_t{});
  else if (bu) run(int8_t{}, uint8_t{});
  else run(int8_t{}, int8_t{});
  *shape_out = s;
  return acc;
}

void matmul_integer(KernelContext& ctx) {
  MatMulShape s;
  Tensor acc = integer_matmul(ctx, ctx.input(0), ctx.input(1), ctx.input_or_null(2),
                              ctx.input_or_null(3), &s);
  ctx.set_output(0, acc);
}

// y = saturate(rint(acc · mult) + zp) into the quantized type of `y`.
void requantize(const KernelContext& ctx, const int32_t* acc, int64_t n,
                const std::function<float(int64_t)>& mult, const std::function<int32_t(int64_t)>& zp,
                Tensor& y) {
  const QuantRange r = quant_range(ctx, y.dtype(), "y_zero_point");
  auto q = [&](int64_t i) { return quantize_one(static_cast<float>(acc[i]) * mult(i), zp(i), r); };
  if (y.dtype() == DType::U8) write_quantized<uint8_t>(y, n, q);
  else write_quantized<int8_t>(y, n, q);
}

void qlinear_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& y_zp = ctx.input(7);
  MatMulShape s;
  Tensor acc = integer_matmul(ctx, a, b, &ctx.input(2), &ctx.input(5), &s);
  for (int i : {1, 4, 6})
    if (ctx.input(i).dtype() != DType::F32)
      ctx.fail(cat("input ", i, " (a scale) has dtype ", dtype_name(ctx.input(i).dtype()),
                   ", expected float32"));
  const MatParam as = mat_param(ctx, &ctx.input(1), a.shape(), true, s.M, "a_scale");
  const MatParam bs = mat_param(ctx, &ctx.input(4), b.shape(), false, s.N, "b_scale");
  const MatParam ys = mat_param(ctx, &ctx.input(6), a.shape(), true, s.M, "y_scale");
  const MatParam yz = mat_param(ctx, &y_zp, a.shape(), true, s.M, "y_zero_point");
  Tensor& y = ctx.allocate_output(0, y_zp.dtype(), s.out);
  const auto off_a = batch_offsets(s.batch_a, s.batch), off_b = batch_offsets(s.batch_b, s.batch);
  const int64_t M = s.M, N = s.N;
  auto where = [&](int64_t i, int64_t* ma, int64_t* mb, int64_t* m, int64_t* n) {
    const int64_t bi = i / (M * N);
    *ma = off_a[bi], *mb = off_b[bi], *m = (i / N) % M, *n = i % N;
  };
  requantize(
      ctx, acc.data<int32_t>(), acc.numel(),
      [&](int64_t i) {
        int64_t ma, mb, m, n;
        where(i, &ma, &mb, &m, &n);
        return static_cast<float>(as.at(ma, m)) * static_cast<float>(bs.at(mb, n)) /
               static_cast<float>(ys.at(ma, m));
      },
      [&](int64_t i) {
        int64_t ma, mb, m, n;
        where(i, &ma, &mb, &m, &n);
        return static_cast<int32_t>(yz.at(ma, m));
      },
      y);
}

// ---- integer Conv -----------------------------------------------------------------------------

class IntegerConv {
 public:
  explicit IntegerConv(const Node& n) : attrs_(parse_window_attrs(n)), group_(n.attr_int("group", 1)) {}

  // acc[N, M, spatial...] = Σ (x − x_zp)(w − w_zp[m]) over each window (padding reads x_zp).
  Tensor run(const KernelContext& ctx, const Tensor& X, const Tensor& W, const Tensor* xzp_t,
             const Tensor* wzp_t) const {
    check_quantized_operand(ctx, X, "x");
    check_quantized_operand(ctx, W, "w");
    check_zero_point_type(ctx, xzp_t, X.dtype(), "x_zero_point");
    check_zero_point_type(ctx, wzp_t, W.dtype(), "w_zero_point");
    check_conv_ranks(ctx, X.shape(), W.shape());
    check_conv_groups(ctx, X.shape(), W.shape(), group_);
    const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), G = group_;
    if (xzp_t && xzp_t->numel() != 1)
      ctx.fail(cat("x_zero_point ", shape_str(xzp_t->shape()), " must be a scalar (per tensor)"));
    if (wzp_t && wzp_t->numel() != 1 && !(wzp_t->rank() == 1 && wzp_t->dim(0) == M))
      ctx.fail(cat("w_zero_point ", shape_str(wzp_t->shape()), " must be a scalar or [", M,
                   "] (per output channel) for w ", shape_str(W.shape())));
    const int32_t xzp = xzp_t ? static_cast<int32_t>(xzp_t->item_as_int()) : 0;
    std::vector<int32_t> wzp(static_cast<size_t>(M), 0);
    if (wzp_t)
      for (int64_t m = 0; m < M; ++m) wzp[m] = static_cast<int32_t>(wzp_t->item_as_int(wzp_t->numel() == 1 ? 0 : m));
    const std::vector<int64_t> kernel = conv_kernel_of(ctx, attrs_.kernel_shape, W.shape());
    const Window3 w = forward_window(ctx, attrs_, X.shape(), kernel);
    Shape ys = {N, M};
    for (int64_t d : w.out_shape()) ys.push_back(d);
    Tensor acc(DType::I32, ys);
    int32_t* out = acc.data<int32_t>();
    const int64_t Cg = C / G, Mg = M / G, P = w.out_size(), plane = w.in_size(), K = w.k_size();
    auto body = [&](auto tx, auto tw) {
      using TX = decltype(tx);
      using TW = decltype(tw);
      const TX* x = X.data<TX>();
      const TW* wt = W.data<TW>();
      parallel_chunks(N * M, N * M * P * Cg * K >= (1 << 16), [&](int64_t begin, int64_t end) {
        for (int64_t nm = begin; nm < end; ++nm) {
          const int64_t n = nm / M, m = nm % M, g = m / Mg;
          int32_t* y = out + nm * P;
          for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
            for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
              for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
                uint32_t sum = 0;  // wrapping int32 arithmetic
                for (int64_t c = 0; c < Cg; ++c) {
                  const TX* xc = x + (n * C + g * Cg + c) * plane;
                  const TW* wc = wt + (m * Cg + c) * K;
                  for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
                    const int64_t i0 = o0 * w.stride[0] - w.pad[0] + k0 * w.dil[0];
                    if (i0 < 0 || i0 >= w.in[0]) continue;
                    for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
                      const int64_t i1 = o1 * w.stride[1] - w.pad[1] + k1 * w.dil[1];
                      if (i1 < 0 || i1 >= w.in[1]) continue;
                      for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                        const int64_t i2 = o2 * w.stride[2] - w.pad[2] + k2 * w.dil[2];
                        if (i2 < 0 || i2 >= w.in[2]) continue;
                        const int32_t xv = static_cast<int32_t>(xc[(i0 * w.in[1] + i1) * w.in[2] + i2]) - xzp;
                        const int32_t wv = static_cast<int32_t>(wc[(k0 * w.k[1] + k1) * w.k[2] + k2]) - wzp[m];
                        sum += static_cast<uint32_t>(xv * wv);
                      }
                    }
                  }
                }
                y[(o0 * w.out[1] + o1) * w.out[2] + o2] = static_cast<int32_t>(sum);
              }
        }
      });
    };
    const bool xu = X.dtype() == DType::U8, wu = W.dtype() == DType::U8;
    if (xu && wu) body(uint8_t{}, uint8_t{});
    else if (xu) body(uint8_t{}, int8_t{});
    else if (wu) body(int8_t{}, uint8_t{});
    else body(int8_t{}, int8_t{});
    return acc;
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

class ConvIntegerKernel : public OpKernel {
 public:
  explicit ConvIntegerKernel(const Node& n) : conv_(n) {}
  void compute(KernelContext& ctx) override {
    ctx.set_output(0, conv_.run(ctx, ctx.input(0), ctx.input(1), ctx.input_or_null(2),
                                ctx.input_or_null(3)));
  }

 private:
  IntegerConv conv_;
};

class QLinearConvKernel : public OpKernel {
 public:
  explicit QLinearConvKernel(const Node& n) : conv_(n) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x_s = ctx.input(1);
    const Tensor& w = ctx.input(3);
    const Tensor& w_s = ctx.input(4);
    const Tensor& y_s = ctx.input(6);
    const Tensor& y_zp = ctx.input(7);
    const Tensor* B = ctx.input_or_null(8);
    Tensor acc = conv_.run(ctx, ctx.input(0), w, &ctx.input(2), &ctx.input(5));
    const int64_t M = acc.dim(1), P = acc.numel() / std::max<int64_t>(1, acc.dim(0) * M);
    for (int i : {1, 4, 6})
      if (ctx.input(i).dtype() != DType::F32)
        ctx.fail(cat("input ", i, " (a scale) has dtype ", dtype_name(ctx.input(i).dtype()),
                     ", expected float32"));
    if (x_s.numel() != 1 || y_s.numel() != 1 || y_zp.numel() != 1)
      ctx.fail(cat("x_scale ", shape_str(x_s.shape()), ", y_scale ", shape_str(y_s.shape()),
                   " and y_zero_point ", shape_str(y_zp.shape()), " must be scalars (per tensor)"));
    if (w_s.numel() != 1 && !(w_s.rank() == 1 && w_s.dim(0) == M))
      ctx.fail(cat("w_scale ", shape_str(w_s.shape()), " must be a scalar or [", M,
                   "] (per output channel)"));
    if (B && (B->dtype() != DType::I32 || B->rank() != 1 || B->dim(0) != M))
      ctx.fail(cat("B ", dtype_name(B->dtype()), " ", shape_str(B->shape()), " must be int32 [", M, "]"));
    int32_t* a = acc.data<int32_t>();
    if (B) {
      const int32_t* b = B->data<int32_t>();
      for (int64_t i = 0; i < acc.numel(); ++i)
        a[i] = static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(b[(i / P) % M]));
    }
    const float xs = x_s.data<float>()[0], ys = y_s.data<float>()[0];
    std::vector<float> mult(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) mult[m] = xs * w_s.data<float>()[w_s.numel() == 1 ? 0 : m] / ys;
    const int32_t zp = static_cast<int32_t>(y_zp.item_as_int());
    Tensor& y = ctx.allocate_output(0, y_zp.dtype(), acc.shape());
    requantize(
        ctx, a, acc.numel(), [&](int64_t i) { return mult[static_cast<size_t>((i / P) % M)]; },
        [&](int64_t) { return zp; }, y);
  }

 private:
  IntegerConv conv_;
};

}  // namespace

void register_quantize(KernelRegistry& r) {
  const std::initializer_list<DType> floats = {DType::F32, DType::F16, DType::BF16};
  r.add(OpId::QuantizeLinear, Device::CPU, {DType::F32, DType::F16, DType::BF16, DType::I32},
        function_kernel(quantize_linear));
  r.add(OpId::DequantizeLinear, Device::CPU, {DType::U8, DType::I8, DType::I32},
        function_kernel(dequantize_linear));
  r.add(OpId::QuantizeLinearGrad, Device::CPU, floats, function_kernel(quantize_linear_grad));
  r.add(OpId::DynamicQuantizeLinear, Device::CPU, floats, function_kernel(dynamic_quantize_linear));
  r.add(OpId::MatMulInteger, Device::CPU, {DType::U8, DType::I8}, function_kernel(matmul_integer));
  r.add(OpId::QLinearMatMul, Device::CPU, {DType::U8, DType::I8}, function_kernel(qlinear_matmul));
  r.add(OpId::ConvInteger, Device::CPU, {DType::U8, DType::I8}, kernel_factory<ConvIntegerKernel>());
  r.add(OpId::QLinearConv, Device::CPU, {DType::U8, DType::I8}, kernel_factory<QLinearConvKernel>());
}

}  // namespace oat::cpu
