// Tensor: a dense, contiguous, row-major array with a dtype, a shape and a device.
//
// Storage is reference counted and shared by copies and by reshaped views (Reshape, Flatten,
// Identity cost nothing). Buffers are 64-byte aligned so Eigen's vectorised kernels apply.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace oat {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3, 4]"

enum class Device : uint8_t { CPU, CUDA };
const char* device_name(Device d);

// A block of bytes on one device. CPU blocks come from host_allocate (host_allocator.h: large
// blocks are cached for reuse); the CUDA backend supplies its own allocator through
// Storage::make_external.
class Storage {
 public:
  static std::shared_ptr<Storage> allocate(size_t bytes, Device device = Device::CPU);
  static std::shared_ptr<Storage> make_external(void* ptr, size_t bytes, Device device,
                                                void (*deleter)(void*));
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  Storage() = default;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  Device device_ = Device::CPU;
  void (*deleter_)(void*) = nullptr;
};

// What a Tensor object holds: a tensor, or one of ONNX's non-tensor values: a sequence of
// tensors or of maps, an optional (a tensor, a sequence, or nothing), a map (keys to scalar
// values: ai.onnx.ml's ZipMap, DictVectorizer, CastMap). The non-tensor values travel as Tensor
// objects so the executor, If, Loop and the kernel interface pass them like any value; the
// sequence, optional and map ops read them (runtime/cpu/kernels/sequence.cc, ml_maps.cc; on the
// host in every executor). Such a value has no storage and the shape [0] (nbytes() 0), its dtype
// is the element (a map's value) type, and data<T>() on it throws; the executor gives non-tensor
// inputs only to the ops that take them.
enum class ValueKind : uint8_t { Tensor, Sequence, Optional, Map };
const char* value_kind_name(ValueKind k);  // "tensor", "sequence", "optional", "map"

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised contents.
  Tensor(DType dtype, Shape shape, Device device = Device::CPU);

  static Tensor zeros(DType dtype, Shape shape);
  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(shape));
    if (static_cast<int64_t>(values.size()) != t.numel())
      throw Error(cat("Tensor::from_vector: ", values.size(), " values for shape ",
                      shape_str(t.shape())));
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <class T>
  static Tensor scalar(T v) {
    return from_vector<T>({}, {v});
  }

  // A sequence of tensors of element type `elem` (every item a tensor of that type; Undefined
  // only for an empty sequence of unknown type).
  static Tensor sequence(DType elem, std::vector<Tensor> items);
  // A map: 1-D `keys` (an integer type or string) and 1-D `values` of the same length, the
  // value type being the map's dtype(). Stored sorted by key, as ONNX Runtime's std::map; a key
  // given twice keeps its last value (ZipMap over repeated labels does the same there). An
  // undefined `values` makes an empty map of no value type yet (read from a MapProto file
  // without values; the input reader gives it the model's declared type).
  static Tensor map(Tensor keys, Tensor values);
  // A sequence of maps, every item a map from `key` to `value` (a sequence() of maps also
  // takes its types from its first item; this form also makes an empty one).
  static Tensor map_sequence(DType key, DType value, std::vector<Tensor> items);
  // An optional holding `value` (a tensor or a sequence), or, when `value` is undefined, an empty
  // optional of a tensor or sequence (`inner`) of element type `elem`.
  static Tensor optional(DType elem, ValueKind inner, Tensor value);
  static Tensor optional(DType elem, ValueKind inner);  // empty

  ValueKind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == ValueKind::Tensor; }
  // A sequence's items; an optional's element (none or one); a map's {keys, values}. Throws for
  // a tensor.
  const std::vector<Tensor>& items() const;
  // An optional's kind of element (Tensor or Sequence); a sequence's kind of item (Tensor or
  // Map).
  ValueKind inner_kind() const { return inner_; }
  // A map's (or a sequence of maps') key type; Undefined otherwise.
  DType key_dtype() const { return key_; }
  const Tensor& map_keys() const;    // a map's keys, ascending
  const Tensor& map_values() const;  // the values, in the keys' order
  // "tensor(float32) [2, 3]", "sequence(float32) of 3", "optional(sequence(int64))",
  // "map(string, float32) of 3", "sequence(map(int64, float32)) of 2", ...
  std::string describe() const;

  bool defined() const { return dtype_ != DType::Undefined || kind_ != ValueKind::Tensor; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(i < 0 ? i + rank() : i); }
  int64_t numel() const { return oat::numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw_data() { return storage_ ? storage_->data() : nullptr; }
  const void* raw_data() const { return storage_ ? storage_->data() : nullptr; }

  template <class T>
  T* data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(raw_data());
  }

  // Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // Deep copy.
  Tensor clone() const;
  // Element i converted to double / int64 (any dtype). For shapes, indices and tests, not hot loops.
  double item_as_double(int64_t i = 0) const;
  int64_t item_as_int(int64_t i = 0) const;
  // All elements as int64 (shape, axes and index inputs of any integer dtype).
  std::vector<int64_t> to_int_vector() const;
  std::vector<float> to_float_vector() const;

  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  void check_type(DType want) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::Undefined;
  Device device_ = Device::CPU;
  ValueKind kind_ = ValueKind::Tensor;
  ValueKind inner_ = ValueKind::Tensor;               // optionals: what they hold; sequences: items
  DType key_ = DType::Undefined;                      // maps and sequences of maps: key type
  std::shared_ptr<const std::vector<Tensor>> items_;  // sequences, optionals, maps
};

// Converts every element to `to` (ONNX Cast semantics: float→int truncates toward zero,
// anything→bool is x != 0, float→F16/BF16 rounds to nearest even).
Tensor cast_tensor(const Tensor& t, DType to);

}  // namespace oat
