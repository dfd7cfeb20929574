// ai.onnx.ml category encoders: scikit-learn's LabelEncoder, OrdinalEncoder / OneHotEncoder
// and string-to-id maps. Every output has the input's shape (OneHotEncoder adds a last dim).
//
//   LabelEncoder, opset 1: classes_strings = [c_0, ..., c_{k-1}]
//       string x -> int64 y = i where c_i == x, else default_int64 (-1)
//       int64 x  -> string y = c_x when 0 <= x < k, else default_string ("_Unused")
//   LabelEncoder, opset 2 (ai.onnx.ml 2 and 3): keys_{strings|int64s|floats} -> values_{strings|
//       int64s|floats}, one list each, of one length: y = values[i] where keys[i] == x, else
//       default_{string|int64|float} ("_Unused", -1, -0.0). X has the keys' type, Y the values'.
//       A NaN key matches a NaN x.
//   CategoryMapper: cats_strings[i] <-> cats_int64s[i]; a string x gives its int64 (else
//       default_int64, -1), an int64 x its string (else default_string, "_Unused").
//   OneHotEncoder(X [...]) -> Y float [..., k]: y[..., i] = 1 where x == cats[i]
//       (cats_int64s, or cats_strings for string X; float/double/int32 X is cast to int64
//       first). An x in no category gives a row of zeros, or, with zeros = 0, an error.
// No gradients; on CUDA they run on the host.
#include <cmath>
#include <map>
#include <unordered_map>

#include "runtime/cpu/kernels/ml_common.h"

namespace oat::cpu {

namespace {

using ml::strings_attr;

// The element type a key or value list names.
enum class Kind { String, Int64, Float };

DType dtype_of(Kind k) {
  return k == Kind::String ? DType::String : k == Kind::Int64 ? DType::I64 : DType::F32;
}

// A key -> value table over the three element kinds (string, int64, float); a NaN float key
// is held aside, since NaN != NaN.
class Table {
 public:
  void add_key(const std::string& s) { strings_.emplace(s, keys_++); }
  void add_key(int64_t i) { ints_.emplace(i, keys_++); }
  void add_key(float f) {
    if (std::isnan(f)) {
      if (nan_ < 0) nan_ = keys_;
      ++keys_;
    } else {
      floats_.emplace(f, keys_++);
    }
  }
  // The position of x among the keys, -1 when absent.
  int64_t find(const std::string& x) const {
    auto it = strings_.find(x);
    return it == strings_.end() ? -1 : it->second;
  }
  int64_t find(int64_t x) const {
    auto it = ints_.find(x);
    return it == ints_.end() ? -1 : it->second;
  }
  int64_t find(float x) const {
    if (std::isnan(x)) return nan_;
    auto it = floats_.find(x);
    return it == floats_.end() ? -1 : it->second;
  }
  int64_t size() const { return keys_; }

 private:
  // first occurrence wins (emplace keeps it)
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<int64_t, int64_t> ints_;
  std::map<float, int64_t> floats_;
  int64_t nan_ = -1;
  int64_t keys_ = 0;
};

// A list of values of one kind, with the default for a missing key.
struct Values {
  Kind kind = Kind::Int64;
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string default_string = "_Unused";
  int64_t default_int = -1;
  float default_float = -0.0f;

  int64_t size() const {
    return static_cast<int64_t>(kind == Kind::String  ? strings.size()
                                : kind == Kind::Int64 ? ints.size()
                                                      : floats.size());
  }
  // y[i] = values[pos[i]], or the default where pos[i] < 0.
  void write(const std::vector<int64_t>& pos, Tensor& y) const {
    const size_t n = pos.size();
    if (kind == Kind::String) {
      std::string* out = y.data<std::string>();
      for (size_t i = 0; i < n; ++i) out[i] = pos[i] < 0 ? default_string : strings[pos[i]];
    } else if (kind == Kind::Int64) {
      int64_t* out = y.data<int64_t>();
      for (size_t i = 0; i < n; ++i) out[i] = pos[i] < 0 ? default_int : ints[pos[i]];
    } else {
      float* out = y.data<float>();
      for (size_t i = 0; i < n; ++i) out[i] = pos[i] < 0 ? default_float : floats[pos[i]];
    }
  }
};

// Positions of X's elements among the keys (X must have the keys' element type).
std::vector<int64_t> positions(const KernelContext& ctx, const Table& keys, Kind key_kind,
                               const Tensor& x) {
  if (x.dtype() != dtype_of(key_kind))
    ctx.fail(cat("X must be ", dtype_name(dtype_of(key_kind)), " (the keys' type), got ",
                 x.describe()));
  std::vector<int64_t> pos(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < pos.size(); ++i) {
    if (key_kind == Kind::String)
      pos[i] = keys.find(x.data<std::string>()[i]);
    else if (key_kind == Kind::Int64)
      pos[i] = keys.find(x.data<int64_t>()[i]);
    else
      pos[i] = keys.find(x.data<float>()[i]);
  }
  return pos;
}

// LabelEncoder (both opsets) and CategoryMapper: a key list, a value list, their defaults.
class EncoderKernel : public OpKernel {
 public:
  explicit EncoderKernel(const Node& n) {
    auto bad = [&](const std::string& why) { throw Error(cat(n.describe(), ": ", why)); };
    values_.default_string = n.attr_string("default_string", "_Unused");
    values_.default_int = n.attr_int("default_int64", -1);
    values_.default_float = n.attr_float("default_float", -0.0f);
    if (n.op == OpId::CategoryMapper) {
      const auto& s = strings_attr(n, "cats_strings");
      const std::vector<int64_t> ints = n.attr_ints("cats_int64s");
      if (s.size() != ints.size())
        bad(cat("cats_strings has ", s.size(), " values and cats_int64s ", ints.size(),
                " (they pair up)"));
      // Both directions: which one runs depends on X's type (string or int64).
      for (const auto& k : s) keys_.add_key(k);
      for (int64_t k : ints) back_keys_.add_key(k);
      values_.kind = Kind::Int64;
      values_.ints = ints;
      back_.kind = Kind::String;
      back_.strings = s;
      back_.default_string = values_.default_string;
      two_way_ = true;
    } else if (n.opset < 2) {
      // opset 1: classes_strings, string -> its index, int64 -> the string at it
      const auto& s = strings_attr(n, "classes_strings");
      for (const auto& k : s) keys_.add_key(k);
      values_.kind = Kind::Int64;
      for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
        values_.ints.push_back(i);
        back_keys_.add_key(i);
      }
      back_.kind = Kind::String;
      back_.strings = s;
      back_.default_string = values_.default_string;
      two_way_ = true;
    } else {
      int lists = 0;
      if (const Attribute* a = n.attr("keys_strings")) {
        for (const auto& k : a->strings) keys_.add_key(k);
        key_kind_ = Kind::String;
        ++lists;
      }
      if (const Attribute* a = n.attr("keys_int64s")) {
        for (int64_t k : a->ints) keys_.add_key(k);
        key_kind_ = Kind::Int64;
        ++lists;
      }
      if (const Attribute* a = n.attr("keys_floats")) {
        for (float k : a->floats) keys_.add_key(k);
        key_kind_ = Kind::Float;
        ++lists;
      }
      if (lists != 1) bad("needs exactly one of keys_strings, keys_int64s and keys_floats");
      lists = 0;
      if (const Attribute* a = n.attr("values_strings")) {
        values_.kind = Kind::String;
        values_.strings = a->strings;
        ++lists;
      }
      if (const Attribute* a = n.attr("values_int64s")) {
        values_.kind = Kind::Int64;
        values_.ints = a->ints;
        ++lists;
      }
      if (const Attribute* a = n.attr("values_floats")) {
        values_.kind = Kind::Float;
        values_.floats = a->floats;
        ++lists;
      }
      if (lists != 1) bad("needs exactly one of values_strings, values_int64s and values_floats");
      if (values_.size() != keys_.size())
        bad(cat("has ", keys_.size(), " keys and ", values_.size(), " values (they pair up)"));
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (two_way_) {
      // string -> int64, or int64 -> string
      if (x.dtype() == DType::String) {
        Tensor& y = ctx.allocate_output(0, DType::I64, x.shape());
        values_.write(positions(ctx, keys_, Kind::String, x), y);
      } else if (x.dtype() == DType::I64) {
        Tensor& y = ctx.allocate_output(0, DType::String, x.shape());
        back_.write(positions(ctx, back_keys_, Kind::Int64, x), y);
      } else {
        ctx.fail(cat("X must be string or int64, got ", x.describe()));
      }
      return;
    }
    const std::vector<int64_t> pos = positions(ctx, keys_, key_kind_, x);
    Tensor& y = ctx.allocate_output(0, dtype_of(values_.kind), x.shape());
    values_.write(pos, y);
  }

 private:
  Table keys_, back_keys_;
  Kind key_kind_ = Kind::String;
  Values values_, back_;
  bool two_way_ = false;
};

class OneHotEncoderKernel : public OpKernel {
 public:
  explicit OneHotEncoderKernel(const Node& n) : zeros_(n.attr_int("zeros", 1) != 0) {
    const auto& s = strings_attr(n, "cats_strings");
    const std::vector<int64_t> ints = n.attr_ints("cats_int64s");
    if (s.empty() == ints.empty())
      throw Error(cat(n.describe(), ": needs exactly one of cats_strings and cats_int64s"));
    strings_ = !s.empty();
    for (const auto& k : s) cats_.add_key(k);
    for (int64_t k : ints) cats_.add_key(k);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> pos;
    if (x.dtype() == DType::String) {
      if (!strings_) ctx.fail("X is string but the categories are cats_int64s");
      pos = positions(ctx, cats_, Kind::String, x);
    } else {
      if (strings_) ctx.fail(cat("X is ", dtype_name(x.dtype()), " but the categories are cats_strings"));
      const std::vector<double> v = ml::numbers_of(ctx, x);
      pos.resize(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        pos[i] = std::isfinite(v[i]) && std::fabs(v[i]) < 9.2e18 ? cats_.find(static_cast<int64_t>(v[i]))
                                                               : -1;
    }
    Shape shape = x.shape();
    const int64_t k = cats_.size();
    shape.push_back(k);
    Tensor& y = ctx.allocate_output(0, DType::F32, shape);
    float* out = y.data<float>();
    std::fill_n(out, y.numel(), 0.0f);
    for (size_t i = 0; i < pos.size(); ++i) {
      if (pos[i] >= 0) {
        out[static_cast<int64_t>(i) * k + pos[i]] = 1.0f;
      } else if (!zeros_) {
        ctx.fail(cat("element ", i, " of X is in no category, and zeros = 0 makes that an error"));
      }
    }
  }

 private:
  Table cats_;
  bool strings_ = false;
  bool zeros_ = true;
};

}  // namespace

void register_ml_encoders(KernelRegistry& r) {
  r.add(OpId::LabelEncoder, Device::CPU, {DType::String, DType::I64, DType::F32},
        kernel_factory<EncoderKernel>());
  r.add(OpId::CategoryMapper, Device::CPU, {DType::String, DType::I64},
        kernel_factory<EncoderKernel>());
  r.add(OpId::OneHotEncoder, Device::CPU,
        {DType::String, DType::I64, DType::I32, DType::F32, DType::F64},
        kernel_factory<OneHotEncoderKernel>());
}

}  // namespace oat::cpu
