#include "onnx_loader/tensor_io.h"

#include <fcntl.h>
#include <onnx/onnx-data_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "onnx_loader/proto_convert.h"
#include "runtime/utf8.h"

namespace oat::onnx_loader {

namespace fs = std::filesystem;

namespace {

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string read_file_bytes(const std::string& path, const char* kind) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(cat(path, ": no such file"));
  if (fs::is_directory(path, ec)) throw Error(cat(path, ": is a directory, not ", kind));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot be opened for reading"));
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(cat(path, ": cannot read its size (", ec.message(), ")"));
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size) throw Error(cat(path, ": read failed"));
  return bytes;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(cat(path, ": cannot write, '", dir.string(), "' is not an existing folder"));
  if (fs::is_directory(target, ec)) throw Error(cat(path, ": cannot write, it is a folder"));
  std::random_device rd;
  const std::string tmp =
      (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
              std::to_string(rd() % 1000000)))
          .string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error(cat(path, ": cannot write in '", dir.string(), "' (", std::strerror(errno), ")"));
  // Data reaches the disk before the rename makes it visible, so a crash leaves the old file
  // or the new one, never a torn one.
  const bool ok = write_all(fd, bytes) && ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw Error(cat(path, ": write failed (", std::strerror(ok ? errno : err), ")"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_err = errno;
    std::remove(tmp.c_str());
    throw Error(cat(path, ": cannot replace the file (", std::strerror(rename_err), ")"));
  }
}

NamedTensor read_tensor_pb(const std::string& path) {
  const std::string bytes = read_file_bytes(path, "a tensor file");
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes) || p.data_type() == onnx::TensorProto_DataType_UNDEFINED)
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
  if (!t.defined()) throw Error(cat(path, ": cannot write an undefined tensor"));
  onnx::TensorProto p;
  tensor_to_proto(t, name, &p);
  std::string bytes;
  if (!p.SerializeToString(&bytes))
    throw Error(cat(path, ": tensor '", name, "' could not be serialised (over 2 GB?)"));
  write_file_atomic(path, bytes);
}

namespace {

Tensor map_from_proto(const onnx::MapProto& p, const std::string& dir);

Tensor sequence_from_proto(const onnx::SequenceProto& p, const std::string& dir) {
  if (p.elem_type() == onnx::SequenceProto::MAP) {  // sequence(map): what ZipMap writes
    std::vector<Tensor> items;
    for (const auto& m : p.map_values()) items.push_back(map_from_proto(m, dir));
    if (items.empty())
      throw Error("an empty sequence of maps has no key and value types; give it one map");
    const DType key = items.front().key_dtype(), value = items.front().dtype();
    return Tensor::map_sequence(key, value, std::move(items));
  }
  if (p.elem_type() != onnx::SequenceProto::TENSOR &&
      p.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw Unsupported("a sequence of sequences, optionals or sparse tensors is not supported",
                      "sequence of non-tensors");
  std::vector<Tensor> items;
  for (const auto& t : p.tensor_values()) items.push_back(tensor_from_proto(t, dir));
  const DType elem = items.empty() ? DType::Undefined : items.front().dtype();
  return Tensor::sequence(elem, std::move(items));
}

// MapProto: key_type, keys (integers) or string_keys, and values, a SequenceProto of tensors:
// one scalar per key (onnx.numpy_helper.from_dict's form) or one tensor of all the values.
Tensor map_from_proto(const onnx::MapProto& p, const std::string& dir) {
  const DType key = dtype_from_onnx(p.key_type(), cat("map '", p.name(), "' key"));
  if (key != DType::String && !is_integer(key))
    throw Error(cat("map '", p.name(), "': keys of type ", dtype_name(key),
                    " (ONNX map keys are integers or strings)"));
  const int64_t n = key == DType::String ? p.string_keys_size() : p.keys_size();
  Tensor keys(key == DType::String ? DType::String : DType::I64, {n});
  if (key == DType::String)
    for (int64_t i = 0; i < n; ++i) keys.data<std::string>()[i] = p.string_keys(static_cast<int>(i));
  else
    for (int64_t i = 0; i < n; ++i) keys.data<int64_t>()[i] = p.keys(static_cast<int>(i));
  if (p.values().elem_type() != onnx::SequenceProto::TENSOR &&
      p.values().elem_type() != onnx::SequenceProto::UNDEFINED)
    throw Unsupported(cat("map '", p.name(), "': values that are not tensors are not supported"),
                      "map of non-tensors");
  std::vector<Tensor> parts;
  for (const auto& t : p.values().tensor_values()) parts.push_back(tensor_from_proto(t, dir));
  int64_t count = 0;
  for (const Tensor& t : parts) {
    if (t.dtype() != parts.front().dtype())
      throw Error(cat("map '", p.name(), "': values of types ", dtype_name(parts.front().dtype()),
                      " and ", dtype_name(t.dtype())));
    count += t.numel();
  }
  if (count != n || (parts.size() != 1 && parts.size() != static_cast<size_t>(n)))
    throw Error(cat("map '", p.name(), "': ", n, " keys and ", count, " values in ", parts.size(),
                    " tensors (one scalar per key, or one tensor of all the values)"));
  if (parts.empty()) return Tensor::map(std::move(keys), Tensor());  // empty: typed by the reader
  Tensor values(parts.front().dtype(), {n});
  int64_t at = 0;
  for (const Tensor& t : parts) {
    if (t.dtype() == DType::String)
      std::copy(t.data<std::string>(), t.data<std::string>() + t.numel(),
                values.data<std::string>() + at);
    else if (t.nbytes())
      std::memcpy(static_cast<char*>(values.raw_data()) + at * dtype_size(t.dtype()),
                  t.raw_data(), t.nbytes());
    at += t.numel();
  }
  if (key != DType::String && key != DType::I64) keys = cast_tensor(keys, key);
  return Tensor::map(std::move(keys), std::move(values));
}

// One scalar tensor per value, as onnx.numpy_helper.from_dict writes (and to_dict reads).
void map_to_proto(const Tensor& m, const std::string& name, onnx::MapProto* p) {
  p->set_name(name);
  p->set_key_type(dtype_to_onnx(m.key_dtype()));
  const Tensor& keys = m.map_keys();
  const Tensor& values = m.map_values();
  if (keys.dtype() == DType::String)
    for (int64_t i = 0; i < keys.numel(); ++i) p->add_string_keys(keys.data<std::string>()[i]);
  else
    for (int64_t k : keys.to_int_vector()) p->add_keys(k);
  auto* seq = p->mutable_values();
  seq->set_elem_type(onnx::SequenceProto::TENSOR);
  const size_t b = values.dtype() == DType::String ? 0 : dtype_size(values.dtype());
  for (int64_t i = 0; i < values.numel(); ++i) {
    Tensor one(values.dtype(), {});
    if (values.dtype() == DType::String)
      one.data<std::string>()[0] = values.data<std::string>()[i];
    else
      std::memcpy(one.raw_data(), static_cast<const char*>(values.raw_data()) + i * b, b);
    tensor_to_proto(one, "", seq->add_tensor_values());
  }
}

void sequence_to_proto(const Tensor& s, const std::string& name, onnx::SequenceProto* p) {
  p->set_name(name);
  if (s.inner_kind() == ValueKind::Map) {
    p->set_elem_type(onnx::SequenceProto::MAP);
    for (const Tensor& m : s.items()) map_to_proto(m, "", p->add_map_values());
    return;
  }
  p->set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Tensor& t : s.items()) tensor_to_proto(t, "", p->add_tensor_values());
}

}  // namespace

NamedTensor read_value_pb(const std::string& path, ValueKind kind) {
  if (kind == ValueKind::Tensor) return read_tensor_pb(path);
  const std::string bytes = read_file_bytes(path, "a value file");
  const std::string dir = fs::path(path).parent_path().string();
  try {
    if (kind == ValueKind::Sequence) {
      onnx::SequenceProto p;
      if (!p.ParseFromString(bytes)) throw Error("not a SequenceProto (.pb) file");
      return {p.name(), sequence_from_proto(p, dir)};
    }
    if (kind == ValueKind::Map) {
      onnx::MapProto p;
      if (!p.ParseFromString(bytes)) throw Error("not a MapProto (.pb) file");
      return {p.name(), map_from_proto(p, dir)};
    }
    onnx::OptionalProto p;
    if (!p.ParseFromString(bytes)) throw Error("not an OptionalProto (.pb) file");
    switch (p.elem_type()) {
      case onnx::OptionalProto::TENSOR: {
        Tensor t = tensor_from_proto(p.tensor_value(), dir);
        const DType d = t.dtype();
        return {p.name(), Tensor::optional(d, ValueKind::Tensor, std::move(t))};
      }
      case onnx::OptionalProto::SEQUENCE: {
        Tensor s = sequence_from_proto(p.sequence_value(), dir);
        const DType d = s.dtype();
        return {p.name(), Tensor::optional(d, ValueKind::Sequence, std::move(s))};
      }
      case onnx::OptionalProto::UNDEFINED:  // an empty optional; its type comes from the model
        return {p.name(), Tensor::optional(DType::Undefined, ValueKind::Tensor)};
      default:
        throw Unsupported("an optional of a map, sparse tensor or optional is not supported",
                          "optional of non-tensors");
    }
  } catch (const Unsupported& e) {
    throw Unsupported(cat(path, ": ", e.what()), e.key());
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
}

void write_value_pb(const Tensor& v, const std::string& name, const std::string& path) {
  if (v.is_tensor()) return write_tensor_pb(v, name, path);
  std::string bytes;
  bool ok = false;
  if (v.kind() == ValueKind::Sequence) {
    onnx::SequenceProto p;
    sequence_to_proto(v, name, &p);
    ok = p.SerializeToString(&bytes);
  } else if (v.kind() == ValueKind::Map) {
    onnx::MapProto p;
    map_to_proto(v, name, &p);
    ok = p.SerializeToString(&bytes);
  } else {
    onnx::OptionalProto p;
    p.set_name(name);
    if (!v.items().empty()) {
      const Tensor& e = v.items().front();
      if (e.kind() == ValueKind::Sequence) {
        p.set_elem_type(onnx::OptionalProto::SEQUENCE);
        sequence_to_proto(e, "", p.mutable_sequence_value());
      } else {
        p.set_elem_type(onnx::OptionalProto::TENSOR);
        tensor_to_proto(e, "", p.mutable_tensor_value());
      }
    }
    ok = p.SerializeToString(&bytes);
  }
  if (!ok) throw Error(cat(path, ": value '", name, "' could not be serialised (over 2 GB?)"));
  write_file_atomic(path, bytes);
}

namespace {

DType npy_dtype(const std::string& descr, const std::string& path) {
  // descr is like '<f4', '|u1', '|b1'; '=' is native order (little-endian here).
  if (descr.size() < 3 || std::string("<>|=").find(descr[0]) == std::string::npos)
    throw Error(cat(path, ": bad .npy dtype '", descr, "'"));
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  const bool one_byte = kind == "i1" || kind == "u1" || kind == "b1";
  if (order == '>' && !one_byte)
    throw Error(cat(path, ": big-endian .npy data ('", descr, "') is not supported"));
  if (kind == "f4") return DType::F32;
  if (kind == "f2") return DType::F16;
  if (kind == "f8") return DType::F64;
  if (kind == "i8") return DType::I64;
  if (kind == "i4") return DType::I32;
  if (kind == "i1") return DType::I8;
  if (kind == "u1") return DType::U8;
  if (kind == "b1") return DType::Bool;
  if (kind == "i2") return DType::I16;
  if (kind == "u2") return DType::U16;
  if (kind == "u4") return DType::U32;
  if (kind == "u8") return DType::U64;
  throw Error(cat(path, ": .npy dtype '", descr,
                  "' is not supported (have f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)"));
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::F32:
      return "<f4";
    case DType::F16:
      return "<f2";
    case DType::F64:
      return "<f8";
    case DType::I64:
      return "<i8";
    case DType::I32:
      return "<i4";
    case DType::I8:
      return "|i1";
    case DType::U8:
      return "|u1";
    case DType::Bool:
      return "|b1";
    case DType::I16:
      return "<i2";
    case DType::U16:
      return "<u2";
    case DType::U32:
      return "<u4";
    case DType::U64:
      return "<u8";
    default:
      break;
  }
  return nullptr;
}

// Parses the header dict's shape tuple "(2, 3)", "(5,)" or "()".
Shape npy_shape(const std::string& tuple, const std::string& path) {
  Shape shape;
  size_t i = 0;
  while (i < tuple.size()) {
    while (i < tuple.size() && (tuple[i] == ' ' || tuple[i] == ',')) ++i;
    if (i == tuple.size()) break;
    size_t j = i;
    while (j < tuple.size() && std::isdigit(static_cast<unsigned char>(tuple[j]))) ++j;
    // numpy writes Python ints, which may carry an 'L' suffix in files from Python 2.
    if (j == i || j - i > 18) throw Error(cat(path, ": bad .npy shape '(", tuple, ")'"));
    shape.push_back(std::stoll(tuple.substr(i, j - i)));
    i = j;
    if (i < tuple.size() && tuple[i] == 'L') ++i;
    if (i < tuple.size() && tuple[i] != ',' && tuple[i] != ' ')
      throw Error(cat(path, ": bad .npy shape '(", tuple, ")'"));
  }
  return shape;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  const std::string bytes = read_file_bytes(path, "a tensor file");
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
  if (header_len > bytes.size() - header_start) throw Error(cat(path, ": truncated .npy header"));
  const std::string header = bytes.substr(header_start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("['\"]descr['\"]\\s*:\\s*['\"]([^'\"]*)['\"]")))
    throw Error(cat(path, ": .npy header has no descr"));
  const std::string descr = m[1];
  // numpy's unicode strings: '<U{n}', n UTF-32 code units an element, zero-padded.
  const bool unicode = descr.size() > 2 && descr[1] == 'U';
  const DType dt = unicode ? DType::String : npy_dtype(descr, path);
  if (!std::regex_search(header, m, std::regex("['\"]fortran_order['\"]\\s*:\\s*([A-Za-z0-9_]*)")))
    throw Error(cat(path, ": .npy header has no fortran_order"));
  if (m[1] == "True") throw Error(cat(path, ": Fortran-ordered .npy arrays are not supported"));
  if (m[1] != "False")
    throw Error(
        cat(path, ": .npy header's fortran_order is '", m[1].str(), "', not True or False"));
  if (!std::regex_search(header, m, std::regex("['\"]shape['\"]\\s*:\\s*\\(([^)]*)\\)")))
    throw Error(cat(path, ": .npy header has no shape"));
  const Shape shape = npy_shape(m[1].str(), path);
  int64_t width = 0;  // code units per string element
  if (unicode) {
    if (descr[0] == '>')
      throw Error(cat(path, ": big-endian .npy data ('", descr, "') is not supported"));
    const std::string digits = descr.substr(2);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw Error(cat(path, ": bad .npy dtype '", descr, "'"));
    width = std::stoll(digits);
  }
  // Byte count with overflow checks, before allocating.
  uint64_t n = unicode ? static_cast<uint64_t>(width) * 4 : dtype_size(dt);
  for (int64_t d : shape) {
    if (d != 0 && n > (uint64_t{1} << 62) / static_cast<uint64_t>(d))
      throw Error(cat(path, ": .npy shape ", shape_str(shape), " is too large"));
    n *= static_cast<uint64_t>(d);
  }
  const size_t data_start = header_start + header_len;
  const size_t have = bytes.size() - data_start;
  if (have != n)
    throw Error(cat(path, ": .npy data has ", have, " bytes, shape ", shape_str(shape), " of ",
                    dtype_name(dt), " needs ", n, have < n ? " (truncated)" : ""));
  Tensor t(dt, shape);
  if (unicode) {
    std::string* dst = t.data<std::string>();
    std::u32string cps;
    for (int64_t i = 0; i < t.numel(); ++i) {
      cps.clear();
      const char* e = bytes.data() + data_start + static_cast<size_t>(i * width) * 4;
      for (int64_t k = 0; k < width; ++k) {
        uint32_t c = 0;
        std::memcpy(&c, e + k * 4, 4);  // little-endian, as the host
        if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
          throw Error(cat(path, ": element ", i, " holds ", c, ", not a Unicode code point"));
        cps.push_back(c);
      }
      while (!cps.empty() && cps.back() == 0) cps.pop_back();  // numpy's padding
      encode_utf8(cps, &dst[i]);
    }
    return t;
  }
  if (n) std::memcpy(t.raw_data(), bytes.data() + data_start, n);
  if (dt == DType::Bool) {
    auto* b = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
  }
  return t;
}

void write_npy(const Tensor& t, const std::string& path) {
  // Strings as numpy's '<U{n}', n the longest element in code points (at least 1, as numpy).
  std::vector<std::u32string> text;
  std::string unicode_descr;
  size_t width = 1;
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (!decode_utf8(t.data<std::string>()[i], &text.emplace_back()))
        throw Error(cat(path, ": string element ", i,
                        " is not valid UTF-8 (write a .pb TensorProto instead)"));
      width = std::max(width, text.back().size());
    }
    unicode_descr = cat("<U", width);
  }
  const char* descr = t.dtype() == DType::String ? unicode_descr.c_str() : npy_descr(t.dtype());
  if (!descr)
    throw Error(cat(path, ": .npy has no ", dtype_name(t.dtype()),
                    " dtype (write a .pb TensorProto instead)"));
  // numpy's tuple syntax: () for a scalar, (5,) for one dimension, (2, 3) otherwise.
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";
  std::string dict =
      cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad so the data starts on a 64-byte boundary; the header ends in '\n'.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 0xffff) throw Error(cat(path, ": rank ", t.rank(), " is too high for .npy"));
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(1);
  bytes += static_cast<char>(0);
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>((dict.size() >> 8) & 0xff);
  bytes += dict;
  if (t.dtype() == DType::String) {
    for (const std::u32string& cps : text)
      for (size_t k = 0; k < width; ++k) {
        const uint32_t c = k < cps.size() ? static_cast<uint32_t>(cps[k]) : 0;
        bytes.append(reinterpret_cast<const char*>(&c), 4);
      }
  } else {
    bytes.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  write_file_atomic(path, bytes);
}

NamedTensor read_tensor_file(const std::string& path) {
  // .npy by its magic bytes or extension; everything else is a TensorProto.
  bool npy = fs::path(path).extension() == ".npy";
  if (!npy) {
    std::ifstream in(path, std::ios::binary);
    char magic[6] = {};
    npy = in.read(magic, 6) && std::memcmp(magic, "\x93NUMPY", 6) == 0;
  }
  if (npy) return {fs::path(path).stem().string(), read_npy(path)};
  return read_tensor_pb(path);
}

}  // namespace oat::onnx_loader
