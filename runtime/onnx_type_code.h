// ONNX TensorProto.DataType codes of the element types the runtime stores, both ways, for the
// attributes that name a type by its code (Cast's `to`, the generators' `dtype`,
// SequenceEmpty's `dtype`, the windows' `output_datatype`) and for the nodes passes write.
// (onnx_loader/proto_convert.h maps the same codes with protobuf's enum, for tensors.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/dtype.h"

namespace oat {

// The DType of a code, nothing for a type the runtime does not store (complex, float8, ...).
inline std::optional<DType> dtype_of_onnx_code(int64_t code) {
  switch (code) {
    case 1:
      return DType::F32;
    case 2:
      return DType::U8;
    case 3:
      return DType::I8;
    case 6:
      return DType::I32;
    case 7:
      return DType::I64;
    case 9:
      return DType::Bool;
    case 10:
      return DType::F16;
    case 11:
      return DType::F64;
    case 16:
      return DType::BF16;
    case 4:
      return DType::U16;
    case 5:
      return DType::I16;
    case 12:
      return DType::U32;
    case 13:
      return DType::U64;
    case 8:
      return DType::String;
    default:
      return std::nullopt;
  }
}

// The code of a stored DType (0, UNDEFINED, for DType::Undefined).
inline int64_t onnx_code_of(DType t) {
  switch (t) {
    case DType::F32:
      return 1;
    case DType::U8:
      return 2;
    case DType::I8:
      return 3;
    case DType::I32:
      return 6;
    case DType::I64:
      return 7;
    case DType::Bool:
      return 9;
    case DType::F16:
      return 10;
    case DType::F64:
      return 11;
    case DType::BF16:
      return 16;
    case DType::U16:
      return 4;
    case DType::I16:
      return 5;
    case DType::U32:
      return 12;
    case DType::U64:
      return 13;
    case DType::String:
      return 8;
    case DType::Undefined:
      break;
  }
  return 0;
}

// The DType of a TensorProto.DataType name ("FLOAT", "UINT16", ...: Cast's `to` as a string,
// before opset 6), nothing for a type the runtime does not store.
inline std::optional<DType> dtype_of_onnx_name(const std::string& name) {
  static const std::pair<const char*, DType> names[] = {
      {"FLOAT", DType::F32},  {"FLOAT16", DType::F16}, {"BFLOAT16", DType::BF16},
      {"DOUBLE", DType::F64}, {"INT64", DType::I64},   {"INT32", DType::I32},
      {"INT8", DType::I8},    {"UINT8", DType::U8},    {"BOOL", DType::Bool},
      {"INT16", DType::I16},  {"UINT16", DType::U16},  {"UINT32", DType::U32},
      {"UINT64", DType::U64}, {"STRING", DType::String}};
  for (const auto& [n, t] : names)
    if (name == n) return t;
  return std::nullopt;
}

}  // namespace oat
