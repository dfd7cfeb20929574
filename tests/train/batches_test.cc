#include <doctest/doctest.h>

#include "train/data/batches.h"

using namespace oat;
using namespace oat::train;

namespace {
Dataset bytes_dataset() {
  Dataset d{Tensor(DType::U8, {3, 2}), Tensor(DType::I64, {3})};
  const uint8_t px[] = {0, 255, 51, 102, 153, 204};
  for (int i = 0; i < 6; ++i) d.inputs.data<uint8_t>()[i] = px[i];
  for (int i = 0; i < 3; ++i) d.targets.data<int64_t>()[i] = i;
  return d;
}
}  // namespace

TEST_CASE("make_batch: uint8 scaled to [0, 1], then (x - mean) / std when asked") {
  Dataset d = bytes_dataset();
  BatchLayout L;
  L.sample_shape = {2};
  L.num_classes = 3;
  std::vector<int64_t> order = {2, 0, 1};
  Batch b = make_batch(d, L, order, 0, 2);
  REQUIRE(b.inputs.shape() == Shape{2, 2});
  CHECK(b.inputs.data<float>()[0] == doctest::Approx(153 / 255.0));
  CHECK(b.inputs.data<float>()[2] == doctest::Approx(0.0));
  CHECK(b.inputs.data<float>()[3] == doctest::Approx(1.0));
  CHECK(b.targets.data<int64_t>()[0] == 2);

  L.input_mean = 0.5f;
  L.input_std = 0.25f;
  Batch n = make_batch(d, L, order, 0, 2);
  CHECK(n.inputs.data<float>()[0] == doctest::Approx((153 / 255.0 - 0.5) / 0.25));
  CHECK(n.inputs.data<float>()[2] == doctest::Approx(-2.0));
  CHECK(n.inputs.data<float>()[3] == doctest::Approx(2.0));
}

TEST_CASE("extra inputs: cut with the batch's indices (last partial batch too), cast to the model's type") {
  // 5 samples; x[i] = i, mask[i] = [i, i+1] as int32 for an int64 input, flag[i] bool.
  Dataset d{Tensor(DType::F32, {5, 1}), Tensor(DType::I64, {5})};
  d.extra["mask"] = Tensor(DType::I32, {5, 2});
  d.extra["flag"] = Tensor(DType::Bool, {5});
  for (int i = 0; i < 5; ++i) {
    d.inputs.data<float>()[i] = static_cast<float>(i);
    d.targets.data<int64_t>()[i] = i % 2;
    d.extra["mask"].data<int32_t>()[2 * i] = i;
    d.extra["mask"].data<int32_t>()[2 * i + 1] = i + 1;
    static_cast<uint8_t*>(d.extra["flag"].raw_data())[i] = i % 2;
  }
  BatchLayout L;
  L.input_name = "x";
  L.sample_shape = {1};
  L.num_classes = 2;
  L.extra_inputs = {{"mask", DType::I64, {-1}, true, 0}, {"flag", DType::Bool, {}, true, 0}};
  check_dataset(d, L, "data");
  BatchPrefetcher pf(d, L, {4, 1, 3, 0, 2}, 2, false);
  std::vector<int64_t> seen;
  Batch b;
  while (pf.next(b)) {
    REQUIRE(b.extra.at("mask").dtype() == DType::I64);
    REQUIRE(b.extra.at("mask").dim(0) == b.inputs.dim(0));
    REQUIRE(b.extra.at("flag").shape() == Shape{b.inputs.dim(0)});
    for (int64_t k = 0; k < b.inputs.dim(0); ++k) {
      const int64_t i = static_cast<int64_t>(b.inputs.data<float>()[k]);
      seen.push_back(i);
      CHECK(b.extra.at("mask").data<int64_t>()[2 * k] == i);
      CHECK(b.extra.at("mask").data<int64_t>()[2 * k + 1] == i + 1);
      CHECK(static_cast<const uint8_t*>(b.extra.at("flag").raw_data())[k] == i % 2);
      CHECK(b.targets.data<int64_t>()[k] == i % 2);
    }
  }
  CHECK(seen == std::vector<int64_t>{4, 1, 3, 0, 2});  // 2 + 2 + the partial batch of 1

  // The errors name the input and the flag.
  auto error_of = [&](const Dataset& bad, const std::string& flag = "--train-input") {
    try {
      check_dataset(bad, L, "training data", flag);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Dataset missing = d;
  missing.extra.erase("flag");
  CHECK(error_of(missing, "--val-input").find("input 'flag' (bool [N]) is not fed: give it with --val-input flag=FILE.npy") != std::string::npos);
  Dataset short_n = d;
  short_n.extra["mask"] = Tensor(DType::I32, {4, 2});
  CHECK(error_of(short_n).find("input 'mask' has 4 samples ([4, 2]), the data has 5") != std::string::npos);
  Dataset wrong_type = d;
  wrong_type.extra["flag"] = Tensor(DType::I64, {5});
  CHECK(error_of(wrong_type).find("input 'flag' is int64, the model's input is bool") != std::string::npos);
  Dataset wrong_rank = d;
  wrong_rank.extra["mask"] = Tensor(DType::I64, {5, 2, 1});
  CHECK(error_of(wrong_rank).find("input 'mask' has shape [5, 2, 1], the model's input takes [N, ?]") != std::string::npos);
}
