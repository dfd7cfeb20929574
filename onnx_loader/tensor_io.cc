#include "onnx_loader/tensor_io.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "onnx_loader/proto_convert.h"

namespace oat::onnx_loader {

namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(cat(path, ": no such file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot be opened for reading"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(cat(path, ": cannot write, folder '", dir.string(), "' does not exist"));
  std::random_device rd;
  const std::string tmp =
      (dir / (target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
              std::to_string(rd() % 100000)))
          .string();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(cat(path, ": cannot write (folder not writable?)"));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error(cat(path, ": write failed (disk full?)"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(cat(path, ": cannot replace the file (is it a folder, or read-only?)"));
  }
}

NamedTensor read_tensor_pb(const std::string& path) {
  const std::string bytes = read_all(path);
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes))
    throw Error(cat(path, ": not a TensorProto (.pb) file"));
  try {
    return {p.name(), tensor_from_proto(p, fs::path(path).parent_path().string())};
  } catch (const Unsupported& e) {
    throw Unsupported(cat(path, ": ", e.what()), e.key());
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
}

void write_tensor_pb(const Tensor& t, const std::string& name, const std::string& path) {
  onnx::TensorProto p;
  tensor_to_proto(t, name, &p);
  std::string bytes;
  p.SerializeToString(&bytes);
  write_file_atomic(path, bytes);
}

namespace {

DType npy_dtype(const std::string& descr, const std::string& path) {
  // descr is like '<f4', '|u1', '|b1'. Big-endian ('>') data is refused.
  if (descr.size() < 3) throw Error(cat(path, ": bad .npy dtype '", descr, "'"));
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  if (order == '>' && kind != "i1" && kind != "u1" && kind != "b1")
    throw Error(cat(path, ": big-endian .npy data ('", descr, "') is not supported"));
  if (kind == "f4") return DType::F32;
  if (kind == "f2") return DType::F16;
  if (kind == "f8") return DType::F64;
  if (kind == "i8") return DType::I64;
  if (kind == "i4") return DType::I32;
  if (kind == "i1") return DType::I8;
  if (kind == "u1") return DType::U8;
  if (kind == "b1") return DType::Bool;
  throw Error(cat(path, ": .npy dtype '", descr, "' is not supported"));
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::F64: return "<f8";
    case DType::I64: return "<i8";
    case DType::I32: return "<i4";
    case DType::I8: return "|i1";
    case DType::U8: return "|u1";
    case DType::Bool: return "|b1";
    default: break;
  }
  throw Error(cat(".npy cannot store dtype ", dtype_name(t)));
}

}  // namespace

Tensor read_npy(const std::string& path) {
  const std::string bytes = read_all(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw Error(cat(path, ": not a .npy file (bad magic)"));
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(cat(path, ": truncated .npy header"));
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    throw Error(cat(path, ": unsupported .npy version ", major));
  }
  if (header_start + header_len > bytes.size()) throw Error(cat(path, ": truncated .npy header"));
  const std::string header = bytes.substr(header_start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    throw Error(cat(path, ": .npy header has no descr"));
  const DType dt = npy_dtype(m[1], path);
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    throw Error(cat(path, ": Fortran-ordered .npy arrays are not supported"));
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    throw Error(cat(path, ": .npy header has no shape"));
  Shape shape;
  std::stringstream dims(m[1].str());
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    shape.push_back(std::stoll(item));
  }
  Tensor t(dt, shape);
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start < t.nbytes())
    throw Error(cat(path, ": .npy data is truncated (", bytes.size() - data_start, " bytes, shape ",
                    shape_str(shape), " of ", dtype_name(dt), " needs ", t.nbytes(), ")"));
  if (t.nbytes()) std::memcpy(t.raw_data(), bytes.data() + data_start, t.nbytes());
  return t;
}

void write_npy(const Tensor& t, const std::string& path) {
  // numpy's tuple syntax: () for a scalar, (5,) for one dimension, (2, 3) otherwise.
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";
  std::string dict = cat("{'descr': '", npy_descr(t.dtype()), "', 'fortran_order': False, 'shape': ",
                         shape, ", }");
  // Pad so the data starts on a 64-byte boundary; the header ends in '\n'.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(1);
  bytes += static_cast<char>(0);
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>((dict.size() >> 8) & 0xff);
  bytes += dict;
  bytes.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  write_file_atomic(path, bytes);
}

NamedTensor read_tensor_file(const std::string& path) {
  if (fs::path(path).extension() == ".npy") return {fs::path(path).stem().string(), read_npy(path)};
  return read_tensor_pb(path);
}

}  // namespace oat::onnx_loader
