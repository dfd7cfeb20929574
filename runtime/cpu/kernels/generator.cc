// Generators: Constant, ConstantOfShape, Range, Dropout. F16/BF16: Constant and ConstantOfShape
// copy their value's bits; Range runs in float on float copies and rounds each element once;
// Dropout scales in float and rounds once; its training mask is numpy's MT19937 stream, as the
// ONNX reference draws it (dropout_mask.h, shared with the CUDA kernel). Cast and CastLike are in
// cast.cc and register from register_generator().
#include <cmath>
#include <random>
#include <type_traits>

#include "runtime/cpu/kernels/dropout_mask.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// Constant: the tensor named by exactly one of value, value_float(s), value_int(s),
// value_string(s).
class ConstantKernel : public OpKernel {
 public:
  explicit ConstantKernel(const Node& n) {
    using K = Attribute::Kind;
    if (const Attribute* a = n.attr("value"); a && a->kind == K::Tensor) {
      value_ = a->t;
    } else if (n.has_attr("value_float")) {
      value_ = Tensor::scalar<float>(n.attr_float("value_float", 0.0f));
    } else if (n.has_attr("value_floats")) {
      auto v = n.attr_floats("value_floats");
      value_ = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
    } else if (n.has_attr("value_int")) {
      value_ = Tensor::scalar<int64_t>(n.attr_int("value_int", 0));
    } else if (n.has_attr("value_ints")) {
      auto v = n.attr_ints("value_ints");
      value_ = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
    } else if (n.has_attr("sparse_value")) {
      throw Unsupported(cat(n.describe(), ": sparse_value is not supported"),
                        "Constant(sparse_value)");
    } else if (const Attribute* s = n.attr("value_string"); s && s->kind == K::String) {
      value_ = Tensor::scalar<std::string>(s->s);
    } else if (const Attribute* ss = n.attr("value_strings"); ss && ss->kind == K::Strings) {
      value_ = Tensor::from_vector<std::string>({static_cast<int64_t>(ss->strings.size())},
                                                ss->strings);
    } else if (n.has_attr("value_string") || n.has_attr("value_strings")) {
      throw Error(cat(n.describe(), ": value_string must be a string, value_strings strings"));
    } else {
      throw Error(cat(n.describe(), ": no value attribute"));
    }
  }
  void compute(KernelContext& ctx) override { ctx.set_output(0, value_); }

 private:
  Tensor value_;
};

// ConstantOfShape: a tensor of shape `input` filled with the one-element 'value' (float 0).
class ConstantOfShapeKernel : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const Node& n) : value_(Tensor::scalar<float>(0.0f)) {
    if (const Attribute* a = n.attr("value")) {
      if (a->kind != Attribute::Kind::Tensor || a->t.numel() != 1)
        throw Error(cat(n.describe(), ": 'value' must be a one-element tensor"));
      value_ = a->t;
    }
  }
  void compute(KernelContext& ctx) override {
    const std::vector<int64_t> shape = ctx.input(0).to_int_vector();
    for (int64_t d : shape)
      if (d < 0) ctx.fail(cat("shape ", shape_str(shape), " has a negative dimension"));
    Tensor& y = ctx.allocate_output(0, value_.dtype(), shape);
    dispatch_word(dtype_size(value_.dtype()), [&](auto w) {
      using W = decltype(w);
      W* d = static_cast<W*>(y.raw_data());
      std::fill(d, d + y.numel(), *static_cast<const W*>(value_.raw_data()));
    });
  }

 private:
  Tensor value_;
};

// Range: Y[i] = start + i * delta for i < max(ceil((limit - start) / delta), 0).
template <class T>
void range(KernelContext& ctx) {
  auto scalar = [&](int i, const char* what) {
    const Tensor& t = ctx.input(i);
    if (t.numel() != 1 || t.dtype() != dtype_of<T>())
      ctx.fail(cat(what, " must be a ", dtype_name(dtype_of<T>()), " scalar, got ",
                   dtype_name(t.dtype()), " ", shape_str(t.shape())));
    return t.data<T>()[0];
  };
  const T start = scalar(0, "start"), limit = scalar(1, "limit"), delta = scalar(2, "delta");
  if (delta == T(0)) ctx.fail("delta is 0");
  int64_t n;
  if constexpr (std::is_integral_v<T>) {
    const int64_t diff = static_cast<int64_t>(limit) - start, dl = delta;
    n = diff / dl + ((diff % dl != 0 && (diff > 0) == (dl > 0)) ? 1 : 0);
  } else {
    n = static_cast<int64_t>(std::ceil(static_cast<double>(limit - start) / delta));
  }
  n = std::max<int64_t>(n, 0);
  T* y = ctx.allocate_output(0, dtype_of<T>(), {n}).template data<T>();
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

// Dropout: inference (default, or training_mode false, or ratio 0) is Y = X with mask all true.
// Training: keep = u >= ratio with u ~ U[0, 1) (dropout_mask.h), Y = keep ? X / (1 - ratio) : 0.
// Mode, ratio and mask dtype by opset: dropout_mode in dropout_mask.h.
template <class T>
class DropoutKernel : public OpKernel {
 public:
  explicit DropoutKernel(const Node& n)
      : seeded_(dropout_is_seeded(n)), key_(dropout_philox_key(n)), gen_(dropout_generator(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const DropoutMode mode = dropout_mode(ctx, ctx.input_or_null(1), ctx.input_or_null(2));
    const bool want_mask = ctx.output_requested(1);
    const int64_t count = x.numel();
    std::vector<uint8_t> keep;  // all true unless drawn
    if (mode.drops() || want_mask) keep.assign(static_cast<size_t>(count), 1);
    if (!mode.drops()) {
      ctx.set_output(0, x);
    } else {
      if (seeded_) draw_dropout_keep(gen_, mode.ratio, count, keep.data());
      else if (count) draw_dropout_keep_philox(key_, draws_++, mode.ratio, count, keep.data());
      const T* src = x.data<T>();
      T* y = ctx.allocate_output(0, x.dtype(), x.shape()).template data<T>();
      // F16/BF16: x·scale in float, rounded once (the scale itself is not rounded to 16 bits).
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C scale = static_cast<C>(1.0 / (1.0 - mode.ratio));
      for (int64_t i = 0; i < count; ++i)
        y[i] = keep[i] ? static_cast<T>(static_cast<C>(src[i]) * scale) : T(0);
    }
    if (want_mask) {
      Tensor& m = ctx.allocate_output(1, mode.mask_dtype, x.shape());
      dispatch_dtype(mode.mask_dtype, [&](auto tag) {
        using M = decltype(tag);
        M* md = m.data<M>();
        for (int64_t i = 0; i < count; ++i) md[i] = M(keep[i]);
      });
    }
  }

 private:
  bool seeded_;
  uint64_t key_;
  uint64_t draws_ = 0;  // Philox draws so far (the counter's high half)
  std::mt19937 gen_;
};

}  // namespace

void register_generator(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::Constant, cpu, kAnyDType, kernel_factory<ConstantKernel>());
  r.add(OpId::ConstantOfShape, cpu, kAnyDType, kernel_factory<ConstantOfShapeKernel>());
  r.add(OpId::Range, cpu, DType::F32, function_kernel(range<float>));
  r.add(OpId::Range, cpu, kLowFloats, in_fp32(function_kernel(range<float>)));
  r.add(OpId::Range, cpu, DType::F64, function_kernel(range<double>));
  r.add(OpId::Range, cpu, DType::I64, function_kernel(range<int64_t>));
  r.add(OpId::Range, cpu, DType::I32, function_kernel(range<int32_t>));
  r.add(OpId::Dropout, cpu, DType::F32, kernel_factory<DropoutKernel<float>>());
  r.add(OpId::Dropout, cpu, DType::F64, kernel_factory<DropoutKernel<double>>());
  r.add(OpId::Dropout, cpu, DType::F16, kernel_factory<DropoutKernel<Eigen::half>>());
  r.add(OpId::Dropout, cpu, DType::BF16, kernel_factory<DropoutKernel<Eigen::bfloat16>>());
  register_cast(r);
}

}  // namespace oat::cpu
