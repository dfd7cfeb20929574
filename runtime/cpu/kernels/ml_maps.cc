// ai.onnx.ml's map ops (opset 1): what scikit-learn's classifiers (ZipMap, skl2onnx's default
// output) and DictVectorizer export to. Maps are values of ValueKind Map (runtime/tensor.h):
// keys ascending, one value per key, as ONNX Runtime's std::map.
//
//   ZipMap(X float [N, C] or [C]) -> Z sequence(map(label, float)), N maps (one for [C]):
//       Z[n] = { labels[j]: x[n, j] }, labels = classlabels_strings or classlabels_int64s
//       (exactly one; C of them; a label given twice keeps its last column, as ONNX Runtime).
//   DictVectorizer(X map(key, V)) -> Y V [1, len(vocabulary)]:
//       y[0, i] = X[vocabulary[i]] where X has that key, else 0 ("" for strings);
//       vocabulary = string_vocabulary (string keys) or int64_vocabulary (integer keys).
//   CastMap(X map(integer, string | float)) -> Y [1, M] of cast_to (TO_FLOAT, TO_INT64,
//   TO_STRING; default TO_FLOAT):
//       DENSE (default):  M = |X|, y[0, i] = cast(value of the i-th smallest key)
//       SPARSE:           M = max_map (default 1, > 0), y[0, k] = cast(X[k]) for keys k in
//                         [0, M), the rest padded with 0 (the string "0.f" for TO_STRING, as ONNX
//                         Runtime writes); a negative key is an error, keys >= M are dropped.
//       casts as ONNX Runtime's: string -> float strtof, -> int64 strtoll (leading number; none
//       is an error), float -> string "%f" (std::to_string), float -> int64 truncates.
// No gradients; on CUDA they run on the host (maps live there).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "runtime/cpu/kernels/ml_common.h"

namespace oat::cpu {

namespace {

class ZipMapKernel : public OpKernel {
 public:
  explicit ZipMapKernel(const Node& n)
      : strings_(ml::strings_attr(n, "classlabels_strings")),
        ints_(n.attr_ints("classlabels_int64s")) {
    if (strings_.empty() == ints_.empty())
      throw Error(cat(n.describe(), ": give exactly one of classlabels_strings and "
                                    "classlabels_int64s (",
                      strings_.empty() ? "neither" : "both", " given)"));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 1 || x.rank() > 2)
      ctx.fail(cat("X must be [N, C] or [C], got ", shape_str(x.shape())));
    const int64_t n = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t c = x.dim(x.rank() - 1);
    const bool text = !strings_.empty();
    const int64_t labels = static_cast<int64_t>(text ? strings_.size() : ints_.size());
    if (c != labels)
      ctx.fail(cat("X has ", c, " columns but ", labels, " class labels are given (",
                   text ? "classlabels_strings" : "classlabels_int64s", ")"));
    Tensor keys = text ? Tensor(DType::String, {c}) : Tensor::from_vector<int64_t>({c}, ints_);
    if (text) std::copy(strings_.begin(), strings_.end(), keys.data<std::string>());
    const float* xv = x.data<float>();
    std::vector<Tensor> maps;
    maps.reserve(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      Tensor row(DType::F32, {c});
      std::copy(xv + r * c, xv + (r + 1) * c, row.data<float>());
      maps.push_back(Tensor::map(keys, std::move(row)));
    }
    ctx.set_output(0, Tensor::map_sequence(keys.dtype(), DType::F32, std::move(maps)));
  }

 private:
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
};

const Tensor& map_input(KernelContext& ctx) {
  const Tensor& m = ctx.input(0);
  if (m.kind() != ValueKind::Map) ctx.fail(cat("X must be a map, got a ", m.describe()));
  if (m.dtype() == DType::Undefined) ctx.fail("X is an empty map of no value type");
  return m;
}

class DictVectorizerKernel : public OpKernel {
 public:
  explicit DictVectorizerKernel(const Node& n)
      : strings_(ml::strings_attr(n, "string_vocabulary")),
        ints_(n.attr_ints("int64_vocabulary")) {
    if (strings_.empty() == ints_.empty())
      throw Error(cat(n.describe(), ": give exactly one of string_vocabulary and "
                                    "int64_vocabulary (",
                      strings_.empty() ? "neither" : "both", " given)"));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& m = map_input(ctx);
    const bool text = !strings_.empty();
    if (text != (m.key_dtype() == DType::String))
      ctx.fail(cat("X is a ", m.describe(), " but the vocabulary is ",
                   text ? "string_vocabulary (string keys)" : "int64_vocabulary (integer keys)"));
    const Tensor& keys = m.map_keys();
    const Tensor& values = m.map_values();
    const int64_t v = static_cast<int64_t>(text ? strings_.size() : ints_.size());
    Tensor& y = ctx.allocate_output(0, values.dtype(), {1, v});
    // Binary search in the ascending keys; -1 where the key is absent.
    std::vector<int64_t> ik;
    if (!text) ik = keys.to_int_vector();
    const int64_t n = keys.numel();
    auto find = [&](int64_t i) -> int64_t {
      int64_t lo = 0, hi = n;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const bool less = text ? keys.data<std::string>()[mid] < strings_[i] : ik[mid] < ints_[i];
        if (less) lo = mid + 1;
        else hi = mid;
      }
      if (lo == n) return -1;
      const bool equal = text ? keys.data<std::string>()[lo] == strings_[i] : ik[lo] == ints_[i];
      return equal ? lo : -1;
    };
    auto fill = [&](auto tag) {
      using T = decltype(tag);
      const T* src = values.data<T>();
      T* out = y.data<T>();
      for (int64_t i = 0; i < v; ++i) {
        const int64_t at = find(i);
        out[i] = at < 0 ? T{} : src[at];
      }
    };
    if (values.dtype() == DType::String)
      fill(std::string{});
    else
      dispatch_dtype(values.dtype(), fill);
  }

 private:
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
};

class CastMapKernel : public OpKernel {
 public:
  explicit CastMapKernel(const Node& n)
      : cast_to_(n.attr_string("cast_to", "TO_FLOAT")),
        form_(n.attr_string("map_form", "DENSE")),
        max_map_(n.attr_int("max_map", 1)) {
    if (cast_to_ != "TO_FLOAT" && cast_to_ != "TO_INT64" && cast_to_ != "TO_STRING")
      throw Error(cat(n.describe(), ": cast_to must be TO_FLOAT, TO_INT64 or TO_STRING, got \"",
                      cast_to_, "\""));
    if (form_ != "DENSE" && form_ != "SPARSE")
      throw Error(cat(n.describe(), ": map_form must be DENSE or SPARSE, got \"", form_, "\""));
    if (form_ == "SPARSE" && max_map_ <= 0)
      throw Error(cat(n.describe(), ": max_map must be > 0 with map_form SPARSE, got ", max_map_));
    if (form_ == "SPARSE" && max_map_ > (int64_t{1} << 40))
      throw Error(cat(n.describe(), ": max_map ", max_map_, " is too large"));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& m = map_input(ctx);
    if (!is_integer(m.key_dtype()) || (m.dtype() != DType::F32 && m.dtype() != DType::String))
      ctx.fail(cat("X must be a map(int64, string) or map(int64, float32), got a ", m.describe()));
    const std::vector<int64_t> keys = m.map_keys().to_int_vector();
    const Tensor& values = m.map_values();
    const bool sparse = form_ == "SPARSE";
    if (sparse && !keys.empty() && keys.front() < 0)
      ctx.fail(cat("map_form SPARSE takes keys >= 0 (output positions); X has the key ",
                   keys.front()));
    const int64_t width = sparse ? max_map_ : static_cast<int64_t>(keys.size());
    const DType to = cast_to_ == "TO_FLOAT"   ? DType::F32
                     : cast_to_ == "TO_INT64" ? DType::I64
                                              : DType::String;
    Tensor& y = ctx.allocate_output(0, to, {1, width});
    // Output position of entry i (its rank in DENSE, its key in SPARSE; -1: dropped).
    auto position = [&](size_t i) -> int64_t {
      if (!sparse) return static_cast<int64_t>(i);
      return keys[i] < width ? keys[i] : -1;
    };
    if (sparse) {  // the padding first, then the entries over it
      if (to == DType::String)
        std::fill(y.data<std::string>(), y.data<std::string>() + width, std::string("0.f"));
      else if (to == DType::F32)
        std::fill(y.data<float>(), y.data<float>() + width, 0.0f);
      else
        std::fill(y.data<int64_t>(), y.data<int64_t>() + width, int64_t{0});
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      const int64_t at = position(i);
      if (at < 0) continue;
      const int64_t k = static_cast<int64_t>(i);
      if (values.dtype() == DType::String) {
        const std::string& s = values.data<std::string>()[k];
        if (to == DType::String) {
          y.data<std::string>()[at] = s;
          continue;
        }
        char* end = nullptr;
        errno = 0;
        if (to == DType::F32) {
          const float f = std::strtof(s.c_str(), &end);
          if (end == s.c_str())
            ctx.fail(cat("the value \"", s, "\" of key ", keys[i], " is not a number"));
          y.data<float>()[at] = f;
        } else {
          const long long v = std::strtoll(s.c_str(), &end, 10);
          if (end == s.c_str() || errno == ERANGE)
            ctx.fail(cat("the value \"", s, "\" of key ", keys[i], " is not an int64"));
          y.data<int64_t>()[at] = static_cast<int64_t>(v);
        }
      } else {
        const float f = values.data<float>()[k];
        if (to == DType::F32) {
          y.data<float>()[at] = f;
        } else if (to == DType::String) {
          y.data<std::string>()[at] = std::to_string(f);
        } else {
          // truncation; NaN and out-of-range values give INT64_MIN (x86's cvttss2si, as there)
          const bool in_range = std::isfinite(f) && f >= -9.2233720368547758e18f &&
                                f < 9.2233720368547758e18f;
          y.data<int64_t>()[at] = in_range ? static_cast<int64_t>(f) : INT64_MIN;
        }
      }
    }
  }

 private:
  std::string cast_to_, form_;
  int64_t max_map_;
};

}  // namespace

void register_ml_maps(KernelRegistry& r) {
  r.add(OpId::ZipMap, Device::CPU, DType::F32, kernel_factory<ZipMapKernel>());
  // keyed by the map's value type
  r.add(OpId::DictVectorizer, Device::CPU, {DType::F32, DType::F64, DType::I64, DType::String},
        kernel_factory<DictVectorizerKernel>());
  r.add(OpId::CastMap, Device::CPU, {DType::F32, DType::String}, kernel_factory<CastMapKernel>());
}

}  // namespace oat::cpu
