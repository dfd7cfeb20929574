#include <doctest/doctest.h>
#include <zlib.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "train/data/idx.h"

using namespace oat;
namespace fs = std::filesystem;

namespace {
std::string tmp_dir() {
  fs::path d = fs::temp_directory_path() / ("oat_idx_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d.string();
}
}  // namespace

TEST_CASE("read_idx: big-endian int32, plain and gzip") {
  const std::string d = tmp_dir();
  // 2x2 int32: 1, 256, -2, 65537
  const unsigned char bytes[] = {0, 0, 0x0C, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 0,
                                 0xff, 0xff, 0xff, 0xfe, 0, 1, 0, 1};
  {
    std::ofstream(d + "/a.idx", std::ios::binary).write(reinterpret_cast<const char*>(bytes), sizeof bytes);
    gzFile g = gzopen((d + "/a.idx.gz").c_str(), "wb");
    gzwrite(g, bytes, sizeof bytes);
    gzclose(g);
  }
  for (const char* name : {"/a.idx", "/a.idx.gz"}) {
    Tensor t = train::read_idx(d + name);
    REQUIRE(t.dtype() == DType::I32);
    CHECK(t.shape() == Shape{2, 2});
    CHECK(t.data<int32_t>()[0] == 1);
    CHECK(t.data<int32_t>()[1] == 256);
    CHECK(t.data<int32_t>()[2] == -2);
    CHECK(t.data<int32_t>()[3] == 65537);
  }
  std::ofstream(d + "/short.idx", std::ios::binary).write(reinterpret_cast<const char*>(bytes), 20);
  CHECK_THROWS_WITH_AS(train::read_idx(d + "/short.idx"), doctest::Contains("truncated"), Error);
  std::ofstream(d + "/bad.idx") << "hello";
  CHECK_THROWS_WITH_AS(train::read_idx(d + "/bad.idx"), doctest::Contains("not an IDX file"), Error);
  fs::remove_all(d);
}

TEST_CASE("load_idx_folder: Debian's Fashion-MNIST") {
  const std::string dir = train::named_dataset_dir("fashion-mnist");
  REQUIRE_MESSAGE(fs::is_directory(dir), "dataset-fashion-mnist is not installed");
  train::IdxFolder f = train::load_idx_folder(dir);
  CHECK(f.train.images.shape() == Shape{60000, 28, 28});
  CHECK(f.train.images.dtype() == DType::U8);
  CHECK(f.test.images.shape() == Shape{10000, 28, 28});
  CHECK(f.test.labels.dtype() == DType::I64);
  // Ten balanced classes: 6000 of each in the training split.
  std::vector<int> counts(10, 0);
  for (int64_t i = 0; i < f.train.labels.numel(); ++i) counts.at(f.train.labels.data<int64_t>()[i])++;
  for (int c : counts) CHECK(c == 6000);
  CHECK_THROWS_WITH_AS(train::load_idx_folder("/nonexistent"), doctest::Contains("not a folder"), Error);
}
