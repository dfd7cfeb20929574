// NonMaxSuppression (runtime/cpu/kernels/nms.cc): hand-worked selections. Four unit-height boxes
// on one row, x ranges b0 [0, 1], b1 [0.1, 1.1], b2 [2, 3], b3 [0.5, 1.5], scores
// .9 .8 .7 .95 (class 0): visiting order b3 b0 b1 b2; IoU(b3, b0) = .5/1.5 = .333,
// IoU(b3, b1) = .6/1.4 = .429, IoU(b0, b1) = .9/1.1 = .818, b2 overlaps nothing.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

// [y1, x1, y2, x2] corners.
Tensor corner_boxes() {
  return Tensor::from_vector<float>({1, 4, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3,
                                                0, 0.5f, 1, 1.5f});
}
Tensor scores1() { return Tensor::from_vector<float>({1, 1, 4}, {0.9f, 0.8f, 0.7f, 0.95f}); }
Tensor max_out(int64_t m) { return Tensor::from_vector<int64_t>({1}, {m}); }
Tensor f(float v) { return Tensor::from_vector<float>({1}, {v}); }

std::vector<int64_t> nms(const std::vector<Tensor>& in, int64_t center = 0) {
  const Tensor y = run1("NonMaxSuppression", 11, {{"center_point_box", attr_i(center)}}, in);
  CHECK(y.dtype() == DType::I64);
  CHECK(y.rank() == 2);
  CHECK(y.dim(1) == 3);
  return ivec(y);
}

using V = std::vector<int64_t>;

}  // namespace

TEST_CASE("NonMaxSuppression keeps boxes greedily by score, per IoU threshold") {
  const Tensor b = corner_boxes(), s = scores1();
  CHECK(nms({b, s, max_out(10), f(0.5f)}) == V{0, 0, 3, 0, 0, 0, 0, 0, 2});
  // .333 > .3: b0 goes too.
  CHECK(nms({b, s, max_out(10), f(0.3f)}) == V{0, 0, 3, 0, 0, 2});
  // At most 2 per class.
  CHECK(nms({b, s, max_out(2), f(0.5f)}) == V{0, 0, 3, 0, 0, 0});
  // score_threshold keeps only scores strictly above it.
  CHECK(nms({b, s, max_out(10), f(0.5f), f(0.75f)}) == V{0, 0, 3, 0, 0, 0});
  CHECK(nms({b, s, max_out(10), f(0.5f), f(0.9f)}) == V{0, 0, 3});
  // max_output_boxes_per_class omitted (0): nothing is selected.
  CHECK(run1("NonMaxSuppression", 11, {}, {b, s}).shape() == Shape{0, 3});
  // iou_threshold omitted (0): any overlap suppresses.
  CHECK(nms({b, s, max_out(10)}) == V{0, 0, 3, 0, 0, 2});
}

TEST_CASE("NonMaxSuppression over batches and classes, center boxes and flipped corners") {
  // Class 1 ranks b3 b2 b1 b0: b1 survives b3 (.429) and b2, b0 falls to b1 (.818).
  const Tensor s2 = Tensor::from_vector<float>({1, 2, 4}, {0.9f, 0.8f, 0.7f, 0.95f,  //
                                                           0.1f, 0.2f, 0.3f, 0.4f});
  CHECK(nms({corner_boxes(), s2, max_out(10), f(0.5f)}) ==
        V{0, 0, 3, 0, 0, 0, 0, 0, 2, 0, 1, 3, 0, 1, 2, 0, 1, 1});
  // The same boxes as [x_center, y_center, width, height].
  const Tensor c = Tensor::from_vector<float>({1, 4, 4}, {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1,
                                                          2.5f, 0.5f, 1, 1, 1, 0.5f, 1, 1});
  CHECK(nms({c, scores1(), max_out(10), f(0.5f)}, 1) == V{0, 0, 3, 0, 0, 0, 0, 0, 2});
  // Opposite corners in the other order give the same boxes.
  const Tensor fl = Tensor::from_vector<float>({1, 4, 4}, {1, 1, 0, 0, 1, 1.1f, 0, 0.1f, 0, 3, 1,
                                                           2, 1, 0.5f, 0, 1.5f});
  CHECK(nms({fl, scores1(), max_out(10), f(0.5f)}) == V{0, 0, 3, 0, 0, 0, 0, 0, 2});
  // Two batches: the second has b0 and b1 only, b1 scoring higher; b0 falls to it.
  Tensor b2(DType::F32, {2, 4, 4}), sc(DType::F32, {2, 1, 4});
  const Tensor one = corner_boxes();
  for (int i = 0; i < 16; ++i)
    b2.data<float>()[i] = b2.data<float>()[16 + i] = one.data<float>()[i];
  const std::vector<float> sv = {0.9f, 0.8f, 0.7f, 0.95f, 0.3f, 0.6f, 0.0f, 0.0f};
  for (int i = 0; i < 8; ++i) sc.data<float>()[i] = sv[i];
  CHECK(nms({b2, sc, max_out(10), f(0.5f), f(0.1f)}) ==
        V{0, 0, 3, 0, 0, 0, 0, 0, 2, 1, 0, 1});
  // Equal scores: the lower box index first.
  const Tensor tie = Tensor::from_vector<float>({1, 1, 4}, {0.5f, 0.5f, 0.5f, 0.5f});
  CHECK(nms({corner_boxes(), tie, max_out(10), f(0.5f)}) == V{0, 0, 0, 0, 0, 2, 0, 0, 3});
}

TEST_CASE("NonMaxSuppression in float16 selects as in float32; errors name the operand") {
  const Tensor b = cast_tensor(corner_boxes(), DType::F16);
  const Tensor s = cast_tensor(scores1(), DType::F16);
  CHECK(nms({b, s, max_out(10), f(0.5f)}) == V{0, 0, 3, 0, 0, 0, 0, 0, 2});
  CHECK(nms({cast_tensor(corner_boxes(), DType::BF16), cast_tensor(scores1(), DType::BF16),
             max_out(10), f(0.5f)}) == V{0, 0, 3, 0, 0, 0, 0, 0, 2});
  auto error_of = [](const std::vector<Tensor>& in) -> std::string {
    try {
      run1("NonMaxSuppression", 11, {}, in);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string e1 = error_of({Tensor(DType::F32, {1, 4, 3}), scores1()});
  CHECK(e1.find("NonMaxSuppression") != std::string::npos);
  CHECK(e1.find("boxes must be [num_batches, spatial_dimension, 4], got [1, 4, 3]") !=
        std::string::npos);
  CHECK(error_of({corner_boxes(), Tensor(DType::F32, {1, 1, 5})}).find("got [1, 1, 5]") !=
        std::string::npos);
  CHECK(error_of({corner_boxes(), scores1(), max_out(1), f(1.5f)})
            .find("iou_threshold must lie in [0, 1], got 1.5") != std::string::npos);
  CHECK(error_of({corner_boxes(), scores1(), max_out(-1)})
            .find("must not be negative") != std::string::npos);
}
