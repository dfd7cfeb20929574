// IDX files (the MNIST / Fashion-MNIST layout), plain or gzip-compressed.
//
// An IDX file is: 2 zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0C int32, 0x0D float32,
// 0x0E float64), the number of dimensions, then each dimension as a big-endian uint32, then the
// data, big-endian, row-major.
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace oat::train {

// Reads `path` (gzip detected from its magic bytes, whatever the extension). Throws Error naming
// the file on a bad magic number, an unsupported type code or truncated data.
Tensor read_idx(const std::string& path);

// A split of a dataset: images [N, ...] as stored (uint8 for MNIST) and labels [N] int64.
struct LabelledSet {
  Tensor images;
  Tensor labels;
};

struct IdxFolder {
  LabelledSet train;
  LabelledSet test;  // the t10k files
};

// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte from `dir`, each with or without .gz. Throws Error naming the missing
// file, or the counts when images and labels disagree.
IdxFolder load_idx_folder(const std::string& dir);

// Folders of datasets known by name: "fashion-mnist" is Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist). Returns "" for an unknown name.
std::string named_dataset_dir(const std::string& name);

}  // namespace oat::train
