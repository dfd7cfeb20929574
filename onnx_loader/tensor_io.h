// Tensors to and from files: ONNX TensorProto (.pb, the test_data_set layout) and NumPy .npy.
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace oat::onnx_loader {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// TensorProto .pb file. Throws Error naming the file when it cannot be read or parsed.
NamedTensor read_tensor_pb(const std::string& path);
// Written to a temporary file and renamed.
void write_tensor_pb(const Tensor& t, const std::string& name, const std::string& path);

// A value file of ONNX's test-data layout for `kind`: TensorProto (a tensor), SequenceProto of
// tensors or of maps (a sequence), MapProto (a map: integer or string keys, its values one
// scalar tensor per key as onnx.numpy_helper.from_dict writes, or one tensor of them all),
// OptionalProto of a tensor or such a sequence (an optional). An empty sequence of tensors has
// no element type (Undefined). Throws Error naming the file.
NamedTensor read_value_pb(const std::string& path, ValueKind kind);
// Writes any value (tensor, sequence, map, optional) as its proto, atomically.
void write_value_pb(const Tensor& v, const std::string& name, const std::string& path);

// NumPy .npy (format 1.0-3.0, little-endian, C order; dtypes f2 f4 f8 i1 i4 i8 u1 b1). Reading
// is strict: the data must be exactly what the header's shape needs. bfloat16 has no .npy dtype:
// write_npy refuses it (use .pb).
Tensor read_npy(const std::string& path);
void write_npy(const Tensor& t, const std::string& path);

// Reads .npy (by extension or by its magic bytes; the name is the file stem) or else a .pb.
NamedTensor read_tensor_file(const std::string& path);

// The whole file at `path`. Throws Error naming the path when it does not exist, is a directory
// (": is a directory, not <kind>", e.g. kind "an ONNX model"), or cannot be opened or read.
std::string read_file_bytes(const std::string& path, const char* kind);

// Writes `bytes` to path atomically: a hidden temporary file in the same folder, fsync, then
// rename. Throws Error naming the path when the folder cannot be written; a failure removes the
// temporary file, so nothing is left behind.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace oat::onnx_loader
