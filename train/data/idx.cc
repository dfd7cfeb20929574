#include "train/data/idx.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>

namespace oat::train {

namespace fs = std::filesystem;

namespace {

// Whole file, inflated when it starts with the gzip magic 1f 8b.
std::string read_maybe_gzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot be opened"));
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  in.close();
  std::string out;
  if (magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw Error(cat(path, ": cannot be opened as gzip"));
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    int err = 0;
    const char* msg = gzerror(f, &err);
    gzclose(f);
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
      throw Error(cat(path, ": corrupt gzip data (", msg ? msg : "?", ")"));
  } else {
    std::ifstream raw(path, std::ios::binary);
    out.assign(std::istreambuf_iterator<char>(raw), std::istreambuf_iterator<char>());
  }
  return out;
}

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

Tensor read_idx(const std::string& path) {
  const std::string bytes = read_maybe_gzip(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || p[0] != 0 || p[1] != 0)
    throw Error(cat(path, ": not an IDX file (bad magic number)"));
  DType dt;
  switch (p[2]) {
    case 0x08: dt = DType::U8; break;
    case 0x09: dt = DType::I8; break;
    case 0x0C: dt = DType::I32; break;
    case 0x0D: dt = DType::F32; break;
    case 0x0E: dt = DType::F64; break;
    default: throw Error(cat(path, ": IDX type code 0x", std::hex, int{p[2]}, " is not supported"));
  }
  const int rank = p[3];
  if (bytes.size() < 4 + 4 * static_cast<size_t>(rank))
    throw Error(cat(path, ": IDX header is truncated"));
  Shape shape;
  for (int i = 0; i < rank; ++i) shape.push_back(be32(p + 4 + 4 * i));
  Tensor t(dt, shape);
  const size_t start = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() - start < t.nbytes())
    throw Error(cat(path, ": IDX data is truncated (", bytes.size() - start, " bytes for shape ",
                    shape_str(shape), ", need ", t.nbytes(), ")"));
  // IDX is big-endian: reverse the bytes of each element.
  const size_t w = dtype_size(dt);
  auto* dst = static_cast<unsigned char*>(t.raw_data());
  const unsigned char* src = p + start;
  for (size_t i = 0; i < t.nbytes(); i += w)
    for (size_t b = 0; b < w; ++b) dst[i + b] = src[i + w - 1 - b];
  return t;
}

namespace {

std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* ext : {"", ".gz"}) {
    fs::path p = fs::path(dir) / (stem + ext);
    if (fs::exists(p)) return p.string();
  }
  throw Error(cat(dir, ": no ", stem, " (or ", stem, ".gz) in this folder"));
}

LabelledSet load_split(const std::string& dir, const std::string& prefix) {
  LabelledSet s;
  const std::string images = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte");
  s.images = read_idx(images);
  s.labels = cast_tensor(read_idx(labels), DType::I64);
  if (s.images.rank() < 1 || s.labels.rank() != 1 || s.images.dim(0) != s.labels.dim(0))
    throw Error(cat(dir, ": ", images, " has shape ", shape_str(s.images.shape()), " but ", labels,
                    " has shape ", shape_str(s.labels.shape()), " (counts must agree)"));
  return s;
}

}  // namespace

IdxFolder load_idx_folder(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(cat(dir, ": not a folder"));
  return {load_split(dir, "train"), load_split(dir, "t10k")};
}

std::string named_dataset_dir(const std::string& name) {
  if (name == "fashion-mnist") return "/usr/share/datasets/fashion-mnist";
  return "";
}

}  // namespace oat::train
