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
