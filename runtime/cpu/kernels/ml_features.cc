// ai.onnx.ml feature preprocessing (opset 1): what scikit-learn's scalers, normalizers, imputers
// and column selection export to. X is float, double, int64 or int32 unless noted; outputs are
// float32 except where the type is kept. Arithmetic in float32, as ONNX Runtime does.
//
//   Scaler(X [.., C]) -> Y float:   y[., j] = (x[., j] - offset[j]) · scale[j]
//       offset and scale hold C values or one (shared by every feature).
//   Normalizer(X [N, C] or [C]) -> Y float, per row:
//       MAX  y = x / max_j x_j        L1  y = x / Σ|x_j|        L2  y = x / √(Σ x_j²)
//       (a row whose max / sum is 0 is copied unchanged).
//   Binarizer(X) -> Y same type:    y = x > threshold ? 1 : 0
//   Imputer(X [.., C] float or int64) -> Y same type:
//       y = x, except where x is replaced_value (NaN: where x is NaN) y = imputed_value[j]
//       (imputed_value_floats / imputed_value_int64s: C values or one).
//   ArrayFeatureExtractor(X [.., C] any type incl. string, Y int64 indices) -> Z:
//       z[..., k] = x[..., Y_k]; Z is X's shape with the last dim len(Y) ([C] gives [1, len(Y)]).
//   FeatureVectorizer(X_1 .. X_n, each [N, C_i] or [C_i]) -> Y float [N, Σ d_i]:
//       the rows side by side, input i given d_i = inputdimensions[i] columns (cut, or padded
//       with zeros when C_i < d_i).
// No gradients; on CUDA they run on the host (no device kernels).
#include <algorithm>
#include <cmath>

#include "runtime/cpu/kernels/ml_common.h"

namespace oat::cpu {

namespace {

using ml::numbers_of;
using ml::rows_of;

// A per-feature list of `want` values, or one value shared by every feature.
float per_feature(const KernelContext& ctx, const std::vector<float>& v, int64_t j, int64_t c,
                  const char* name) {
  if (v.size() == 1) return v[0];
  if (static_cast<int64_t>(v.size()) != c)
    ctx.fail(cat(name, " has ", v.size(), " values; X has ", c, " features (give ", c, " or 1)"));
  return v[static_cast<size_t>(j)];
}

int64_t last_dim(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() == 0) ctx.fail("X must have at least one dimension, got a scalar");
  return x.dim(x.rank() - 1);
}

class ScalerKernel : public OpKernel {
 public:
  explicit ScalerKernel(const Node& n)
      : offset_(n.attr_floats("offset")), scale_(n.attr_floats("scale")) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const std::vector<double> v = numbers_of(ctx, x);
    const int64_t c = last_dim(ctx, x);
    std::vector<float> off(static_cast<size_t>(c), 0.0f), sc(static_cast<size_t>(c), 1.0f);
    for (int64_t j = 0; j < c; ++j) {
      if (!offset_.empty()) off[j] = per_feature(ctx, offset_, j, c, "offset");
      if (!scale_.empty()) sc[j] = per_feature(ctx, scale_, j, c, "scale");
    }
    Tensor& y = ctx.allocate_output(0, DType::F32, x.shape());
    float* out = y.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i)
      out[i] = (static_cast<float>(v[static_cast<size_t>(i)]) - off[i % c]) * sc[i % c];
  }

 private:
  std::vector<float> offset_, scale_;
};

class NormalizerKernel : public OpKernel {
 public:
  explicit NormalizerKernel(const Node& n) : norm_(n.attr_string("norm", "MAX")) {
    if (norm_ != "MAX" && norm_ != "L1" && norm_ != "L2")
      throw Error(cat(n.describe(), ": norm must be MAX, L1 or L2, got \"", norm_, "\""));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = rows_of(ctx, x);
    const std::vector<double> v = numbers_of(ctx, x);
    Tensor& y = ctx.allocate_output(0, DType::F32, x.shape());
    float* out = y.data<float>();
    for (int64_t i = 0; i < r.n; ++i) {
      const double* in = v.data() + i * r.c;
      float* o = out + i * r.c;
      float d = 0;
      if (norm_ == "MAX") {
        d = std::numeric_limits<float>::lowest();
        for (int64_t j = 0; j < r.c; ++j) d = std::max(d, static_cast<float>(in[j]));
      } else if (norm_ == "L1") {
        for (int64_t j = 0; j < r.c; ++j) d += std::fabs(static_cast<float>(in[j]));
      } else {
        for (int64_t j = 0; j < r.c; ++j) d += static_cast<float>(in[j] * in[j]);
      }
      for (int64_t j = 0; j < r.c; ++j) {
        const float xj = static_cast<float>(in[j]);
        if (d == 0.0f || r.c == 0) {
          o[j] = xj;
        } else if (norm_ == "L2") {
          const float q = std::sqrt(static_cast<float>(in[j] * in[j]) / d);
          o[j] = xj < 0 ? -q : q;
        } else {
          o[j] = xj / d;
        }
      }
    }
  }

 private:
  std::string norm_;
};

template <typename T>
void binarize(const Tensor& x, Tensor& y, float threshold) {
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for (int64_t i = 0; i < x.numel(); ++i)
    out[i] = static_cast<float>(in[i]) > threshold ? T(1) : T(0);
}

void binarizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float t = ctx.node().attr_float("threshold", 0.0f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  switch (x.dtype()) {
    case DType::F32: binarize<float>(x, y, t); break;
    case DType::F64: binarize<double>(x, y, t); break;
    case DType::I64: binarize<int64_t>(x, y, t); break;
    case DType::I32: binarize<int32_t>(x, y, t); break;
    default: ctx.fail(cat("X must be float, double, int64 or int32, got ", x.describe()));
  }
}

class ImputerKernel : public OpKernel {
 public:
  explicit ImputerKernel(const Node& n)
      : floats_(n.attr_floats("imputed_value_floats")),
        ints_(n.attr_ints("imputed_value_int64s")),
        replaced_float_(n.attr_float("replaced_value_float", 0.0f)),
        replaced_int_(n.attr_int("replaced_value_int64", 0)) {
    if (floats_.empty() == ints_.empty())
      throw Error(cat(n.describe(),
                      ": needs exactly one of imputed_value_floats and imputed_value_int64s"));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int64_t c = last_dim(ctx, x);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (x.dtype() == DType::F32) {
      if (floats_.empty()) ctx.fail("X is float but the imputed values are imputed_value_int64s");
      const float* in = x.data<float>();
      float* out = y.data<float>();
      const bool nan = std::isnan(replaced_float_);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const bool hit = nan ? std::isnan(in[i]) : in[i] == replaced_float_;
        out[i] = hit ? per_feature(ctx, floats_, c ? i % c : 0, c, "imputed_value_floats") : in[i];
      }
    } else if (x.dtype() == DType::I64) {
      if (ints_.empty()) ctx.fail("X is int64 but the imputed values are imputed_value_floats");
      const int64_t* in = x.data<int64_t>();
      int64_t* out = y.data<int64_t>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (in[i] != replaced_int_) {
          out[i] = in[i];
        } else if (ints_.size() == 1) {
          out[i] = ints_[0];
        } else if (static_cast<int64_t>(ints_.size()) == c) {
          out[i] = ints_[static_cast<size_t>(i % c)];
        } else {
          ctx.fail(cat("imputed_value_int64s has ", ints_.size(), " values; X has ", c,
                       " features (give ", c, " or 1)"));
        }
      }
    } else {
      ctx.fail(cat("X must be float or int64, got ", x.describe()));
    }
  }

 private:
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  float replaced_float_;
  int64_t replaced_int_;
};

void array_feature_extractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  if (idx.dtype() != DType::I64) ctx.fail(cat("Y must be int64 indices, got ", idx.describe()));
  const int64_t c = last_dim(ctx, x);
  const int64_t k = idx.numel();
  const int64_t* ix = idx.data<int64_t>();
  for (int64_t j = 0; j < k; ++j)
    if (ix[j] < 0 || ix[j] >= c)
      ctx.fail(cat("index ", ix[j], " (Y[", j, "]) is out of range for X's last dimension of ", c));
  Shape out_shape = x.rank() == 1 ? Shape{1, k} : x.shape();
  out_shape.back() = k;
  Tensor& z = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t rows = c ? x.numel() / c : 0;
  if (x.dtype() == DType::String) {
    const std::string* in = x.data<std::string>();
    std::string* out = z.data<std::string>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) out[r * k + j] = in[r * c + ix[j]];
    return;
  }
  const size_t es = dtype_size(x.dtype());
  const auto* in = static_cast<const unsigned char*>(x.raw_data());
  auto* out = static_cast<unsigned char*>(z.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      std::copy_n(in + (r * c + ix[j]) * es, es, out + (r * k + j) * es);
}

class FeatureVectorizerKernel : public OpKernel {
 public:
  explicit FeatureVectorizerKernel(const Node& n) : dims_(n.attr_ints("inputdimensions")) {
    if (dims_.size() != n.inputs.size())
      throw Error(cat(n.describe(), ": inputdimensions has ", dims_.size(), " values for ",
                      n.inputs.size(), " inputs"));
    for (int64_t d : dims_)
      if (d < 0 || d >= (int64_t{1} << 40))
        throw Error(cat(n.describe(), ": inputdimensions must be in [0, 2^40), got ", d));
  }
  void compute(KernelContext& ctx) override {
    int64_t total = 0;
    for (int64_t d : dims_) total += d;
    int64_t n = -1;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      const int64_t rows = x.rank() <= 1 ? 1 : x.dim(0);
      if (n >= 0 && rows != n)
        ctx.fail(cat("input ", i, " '", ctx.node().inputs[static_cast<size_t>(i)], "' has ", rows,
                     " rows; input 0 has ", n));
      n = rows;
    }
    Tensor& y = ctx.allocate_output(0, DType::F32, {std::max<int64_t>(n, 0), total});
    float* out = y.data<float>();
    std::fill_n(out, y.numel(), 0.0f);
    int64_t at = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      const std::vector<double> v =
          numbers_of(ctx, x, cat("input ", i, " '", ctx.node().inputs[static_cast<size_t>(i)], "'").c_str());
      const int64_t stride = n > 0 ? x.numel() / n : 0;
      const int64_t d = dims_[static_cast<size_t>(i)];
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < std::min(stride, d); ++j)
          out[r * total + at + j] = static_cast<float>(v[static_cast<size_t>(r * stride + j)]);
      at += d;
    }
  }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace

void register_ml_features(KernelRegistry& r) {
  const std::initializer_list<DType> numeric = {DType::F32, DType::F64, DType::I64, DType::I32};
  r.add(OpId::Scaler, Device::CPU, numeric, kernel_factory<ScalerKernel>());
  r.add(OpId::Normalizer, Device::CPU, numeric, kernel_factory<NormalizerKernel>());
  r.add(OpId::Binarizer, Device::CPU, numeric, function_kernel(binarizer));
  r.add(OpId::Imputer, Device::CPU, {DType::F32, DType::I64}, kernel_factory<ImputerKernel>());
  r.add(OpId::ArrayFeatureExtractor, Device::CPU,
        {DType::F32, DType::F64, DType::I64, DType::I32, DType::String},
        function_kernel(array_feature_extractor));
  r.add(OpId::FeatureVectorizer, Device::CPU, numeric,
        kernel_factory<FeatureVectorizerKernel>());
}

}  // namespace oat::cpu
