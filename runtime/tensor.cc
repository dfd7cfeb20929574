#include "runtime/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "runtime/cuda/device.h"
#include "runtime/host_allocator.h"
#include "runtime/string_convert.h"

namespace oat {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

const char* device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }

std::shared_ptr<Storage> Storage::allocate(size_t bytes, Device device) {
  if (device == Device::CUDA) return cuda::allocate_storage(bytes);
  if (device != Device::CPU)
    throw Error(cat("Storage::allocate: no allocator for device ", device_name(device)));
  std::shared_ptr<Storage> s(new Storage());
  s->bytes_ = bytes;
  s->device_ = device;
  if (bytes > 0) {
    s->ptr_ = host_allocate(bytes);
    if (!s->ptr_) throw Error(cat("out of memory allocating ", bytes, " bytes"));
    s->deleter_ = bytes < kHostCacheMinBytes ? std::free : host_release;
  }
  return s;
}

std::shared_ptr<Storage> Storage::make_external(void* ptr, size_t bytes, Device device,
                                                void (*deleter)(void*)) {
  std::shared_ptr<Storage> s(new Storage());
  s->ptr_ = ptr;
  s->bytes_ = bytes;
  s->device_ = device;
  s->deleter_ = deleter;
  return s;
}

Storage::~Storage() {
  if (ptr_ && deleter_) deleter_(ptr_);
}

namespace {

void delete_strings(void* p) { delete[] static_cast<std::string*>(p); }

}  // namespace

Tensor::Tensor(DType dtype, Shape shape, Device device)
    : shape_(std::move(shape)), dtype_(dtype), device_(device) {
  for (int64_t d : shape_)
    if (d < 0) throw Error(cat("negative dimension in shape ", shape_str(shape_)));
  if (dtype == DType::String) {
    // Constructed (empty) strings, freed by delete[]: the bytes are objects, never copied raw.
    if (device != Device::CPU)
      throw Error(cat("string tensors live on the host; cannot make one on ",
                      device_name(device)));
    const int64_t n = numel();
    storage_ = Storage::make_external(n ? new std::string[static_cast<size_t>(n)] : nullptr,
                                      nbytes(), Device::CPU, delete_strings);
    return;
  }
  storage_ = Storage::allocate(nbytes(), device);
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  if (dtype == DType::String) return t;  // empty strings
  if (t.nbytes()) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::Tensor:
      return "tensor";
    case ValueKind::Sequence:
      return "sequence";
    case ValueKind::Optional:
      return "optional";
    case ValueKind::Map:
      return "map";
  }
  return "?";
}

Tensor Tensor::sequence(DType elem, std::vector<Tensor> items) {
  if (!items.empty() && items.front().kind() == ValueKind::Map) {
    const DType key = items.front().key_dtype();
    return map_sequence(key, elem, std::move(items));
  }
  for (const Tensor& t : items) {
    if (!t.is_tensor()) throw Error(cat("a sequence holds tensors or maps, not a ", t.describe()));
    if (t.dtype() != elem)
      throw Error(cat("a sequence of ", dtype_name(elem), " cannot hold a tensor of ",
                      dtype_name(t.dtype())));
  }
  Tensor r;
  r.kind_ = ValueKind::Sequence;
  r.dtype_ = elem;
  r.shape_ = {0};
  r.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return r;
}

Tensor Tensor::map_sequence(DType key, DType value, std::vector<Tensor> items) {
  for (const Tensor& t : items)
    if (t.kind() != ValueKind::Map || t.key_dtype() != key || t.dtype() != value)
      throw Error(cat("a sequence(map(", dtype_name(key), ", ", dtype_name(value),
                      ")) cannot hold a ", t.describe()));
  Tensor r;
  r.kind_ = ValueKind::Sequence;
  r.inner_ = ValueKind::Map;
  r.key_ = key;
  r.dtype_ = value;
  r.shape_ = {0};
  r.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return r;
}

namespace {

// Element i of a host tensor copied to element j of another of the same dtype.
void copy_element(const Tensor& from, int64_t i, Tensor& to, int64_t j) {
  if (from.dtype() == DType::String) {
    to.data<std::string>()[j] = from.data<std::string>()[i];
    return;
  }
  const size_t b = dtype_size(from.dtype());
  std::memcpy(static_cast<char*>(to.raw_data()) + j * b,
              static_cast<const char*>(from.raw_data()) + i * b, b);
}

}  // namespace

// Keys sorted ascending (stable, so equal keys keep their order and the last of a run wins).
Tensor Tensor::map(Tensor keys, Tensor values) {
  if (!keys.is_tensor() || !values.is_tensor())
    throw Error(cat("a map's keys and values are tensors, not ",
                    (keys.is_tensor() ? values : keys).describe()));
  if (keys.device() != Device::CPU || values.device() != Device::CPU)
    throw Error("a map lives on the host");
  if (keys.dtype() != DType::String && !is_integer(keys.dtype()))
    throw Error(cat("a map's keys are integers or strings, not ", dtype_name(keys.dtype())));
  // An undefined `values`: an empty map whose value type is not known yet (a MapProto file
  // without values; the input reader gives it the model's declared type).
  const bool untyped = !values.defined();
  if (untyped ? keys.numel() != 0 || keys.rank() != 1
              : keys.rank() != 1 || values.rank() != 1 || keys.numel() != values.numel())
    throw Error(cat("a map needs 1-D keys and values of one length, not ", shape_str(keys.shape()),
                    " and ", untyped ? std::string("no values") : shape_str(values.shape())));
  const int64_t n = keys.numel();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<int64_t> ints;
  if (keys.dtype() != DType::String) ints = keys.to_int_vector();
  auto less = [&](int64_t a, int64_t b) {
    if (keys.dtype() == DType::String) return keys.data<std::string>()[a] < keys.data<std::string>()[b];
    return ints[a] < ints[b];
  };
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<int64_t> kept;  // the last index of each run of equal keys
  for (size_t i = 0; i < order.size(); ++i)
    if (i + 1 == order.size() || less(order[i], order[i + 1])) kept.push_back(order[i]);
  const int64_t m = static_cast<int64_t>(kept.size());
  Tensor k(keys.dtype(), {m}), v = untyped ? Tensor() : Tensor(values.dtype(), {m});
  for (int64_t j = 0; j < m; ++j) {
    copy_element(keys, kept[j], k, j);
    copy_element(values, kept[j], v, j);
  }
  Tensor r;
  r.kind_ = ValueKind::Map;
  r.key_ = keys.dtype();
  r.dtype_ = values.dtype();
  r.shape_ = {0};
  r.items_ = std::make_shared<const std::vector<Tensor>>(std::vector<Tensor>{k, v});
  return r;
}

const Tensor& Tensor::map_keys() const {
  if (kind_ != ValueKind::Map) throw Error(cat("a ", describe(), " is not a map"));
  return (*items_)[0];
}

const Tensor& Tensor::map_values() const {
  if (kind_ != ValueKind::Map) throw Error(cat("a ", describe(), " is not a map"));
  return (*items_)[1];
}

Tensor Tensor::optional(DType elem, ValueKind inner, Tensor value) {
  if (inner == ValueKind::Optional) throw Error("an optional cannot hold an optional");
  std::vector<Tensor> items;
  if (value.defined()) {
    if (value.kind() != inner)
      throw Error(
          cat("an optional of a ", value_kind_name(inner), " cannot hold a ", value.describe()));
    elem = value.dtype();
    items.push_back(std::move(value));
  }
  Tensor r;
  r.kind_ = ValueKind::Optional;
  r.inner_ = inner;
  r.dtype_ = elem;
  r.shape_ = {0};
  r.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return r;
}

Tensor Tensor::optional(DType elem, ValueKind inner) { return optional(elem, inner, Tensor()); }

const std::vector<Tensor>& Tensor::items() const {
  if (kind_ == ValueKind::Tensor || !items_) throw Error("a tensor has no items (not a sequence)");
  return *items_;
}

std::string Tensor::describe() const {
  switch (kind_) {
    case ValueKind::Sequence:
      if (inner_ == ValueKind::Map)
        return cat("sequence(map(", dtype_name(key_), ", ", dtype_name(dtype_), ")) of ",
                   items_->size());
      return cat("sequence(", dtype_name(dtype_), ") of ", items_->size());
    case ValueKind::Map:
      return cat("map(", dtype_name(key_), ", ", dtype_name(dtype_), ") of ",
                 (*items_)[0].numel());
    case ValueKind::Optional:
      return items_->empty() ? cat("empty optional(", value_kind_name(inner_), ")")
                             : cat("optional(", (*items_)[0].describe(), ")");
    case ValueKind::Tensor:
      break;
  }
  return cat("tensor(", dtype_name(dtype_), ") ", shape_str(shape_));
}

void Tensor::check_type(DType want) const {
  if (kind_ != ValueKind::Tensor)
    throw Error(cat("a ", describe(),
                    " is not a tensor (its elements are read by the sequence, optional "
                    "and map ops)"));
  if (want != dtype_)
    throw Error(cat("tensor of dtype ", dtype_name(dtype_), " accessed as ", dtype_name(want)));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (oat::numel(shape) != numel())
    throw Error(cat("cannot reshape ", shape_str(shape_), " to ", shape_str(shape)));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_, device_);
  if (dtype_ == DType::String) {
    std::copy(data<std::string>(), data<std::string>() + numel(), t.data<std::string>());
    return t;
  }
  if (nbytes() && device_ == Device::CUDA)
    cuda::copy_bytes(t.raw_data(), true, raw_data(), true, nbytes());
  else if (nbytes())
    std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

// Element reads dereference host pointers: a device tensor must be downloaded first.
static void require_host(const Tensor& t, const char* what) {
  if (t.device() != Device::CPU)
    throw Error(cat(what, ": the tensor is on ", device_name(t.device()), ", download it first"));
}

// A string is not a number: its readers say so, naming what they wanted.
static void require_numeric(const Tensor& t, const char* what) {
  if (t.dtype() == DType::String)
    throw Error(cat(what, ": a string tensor has no numeric value (Cast it to a number first)"));
}

double Tensor::item_as_double(int64_t i) const {
  require_host(*this, "Tensor::item_as_double");
  require_numeric(*this, "Tensor::item_as_double");
  return dispatch_dtype(dtype_, [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(static_cast<const T*>(raw_data())[i]);
  });
}

int64_t Tensor::item_as_int(int64_t i) const {
  require_host(*this, "Tensor::item_as_int");
  require_numeric(*this, "Tensor::item_as_int");
  return dispatch_dtype(dtype_, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    const T v = static_cast<const T*>(raw_data())[i];
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(static_cast<double>(v));
    }
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = item_as_int(i);
  return v;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = static_cast<float>(item_as_double(i));
  return v;
}

namespace {

template <class To, class From>
To convert_one(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_integral_v<From>) {
      return x != From{};
    } else {
      return static_cast<double>(x) != 0.0;
    }
  } else if constexpr (std::is_same_v<To, Eigen::half> &&
                       (std::is_same_v<From, double> || std::is_integral_v<From>)) {
    return half_from_double(static_cast<double>(x));  // one rounding, not via float
  } else if constexpr (std::is_same_v<To, Eigen::bfloat16> &&
                       (std::is_same_v<From, double> || std::is_integral_v<From>)) {
    return bfloat16_from_double(static_cast<double>(x));
  } else if constexpr (std::is_same_v<To, Eigen::half> || std::is_same_v<To, Eigen::bfloat16>) {
    return To(static_cast<float>(x));
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
    // Float -> int truncates toward zero (C semantics, what ONNX Runtime does); a negative
    // value cast to an unsigned type wraps as through int64 (numpy's result).
    double d = static_cast<double>(x);
    if (std::isnan(d)) return To{};
    if constexpr (std::is_unsigned_v<To>)
      if (d < 0) return static_cast<To>(static_cast<int64_t>(d));
    return static_cast<To>(d);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace

Tensor cast_tensor(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  require_host(t, "cast_tensor");
  Tensor out(to, t.shape());
  const int64_t n = t.numel();
  if (t.dtype() == DType::String) {  // parse each element (runtime/string_convert.h)
    const std::string* src = t.data<std::string>();
    dispatch_dtype(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      To* dst = static_cast<To*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = parse_element<To>(src[i], i);
    });
    return out;
  }
  if (to == DType::String) {  // the shortest text that reads back as the same value
    std::string* dst = out.data<std::string>();
    dispatch_dtype(t.dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      const From* src = static_cast<const From*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = format_element(src[i]);
    });
    return out;
  }
  dispatch_dtype(t.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    const From* src = static_cast<const From*>(t.raw_data());
    dispatch_dtype(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      To* dst = static_cast<To*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = convert_one<To, From>(src[i]);
    });
  });
  return out;
}

}  // namespace oat
