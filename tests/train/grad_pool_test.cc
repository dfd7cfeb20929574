// Gradients of the pools: double-precision finite-difference checks (random inputs have no ties,
// so MaxPool's argmax is stable under the step) and MaxPool's tie rule on a hand-made case.
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;

namespace {

Attribute ints(std::vector<int64_t> v) { return train::GradientContext::attr_ints(std::move(v)); }
Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

GradCheckCase pool(const std::string& op, Shape x, std::map<std::string, Attribute> attrs = {}) {
  GradCheckCase c;
  c.op = op;
  c.attrs = std::move(attrs);
  GradCheckInput i;
  i.shape = std::move(x);
  c.inputs = {i};
  return c;
}

}  // namespace

TEST_CASE("gradients: MaxPool") {
  SUBCASE("2x2 stride 2") {
    test::check_gradients(
        pool("MaxPool", {2, 3, 6, 6}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}));
  }
  SUBCASE("3x3 stride 2 pads 1: overlapping windows add up") {
    test::check_gradients(pool(
        "MaxPool", {1, 2, 7, 7},
        {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}));
  }
  SUBCASE("ceil_mode, dilations, asymmetric pads") {
    test::check_gradients(pool("MaxPool", {2, 2, 7, 6},
                               {{"kernel_shape", ints({2, 3})},
                                {"strides", ints({2, 2})},
                                {"dilations", ints({2, 1})},
                                {"pads", ints({0, 1, 1, 0})},
                                {"ceil_mode", int1(1)}}));
  }
  SUBCASE("auto_pad SAME_UPPER") {
    test::check_gradients(pool("MaxPool", {1, 2, 5, 5},
                               {{"kernel_shape", ints({3, 3})},
                                {"strides", ints({2, 2})},
                                {"auto_pad", str("SAME_UPPER")}}));
  }
  SUBCASE("1-D and 3-D") {
    test::check_gradients(
        pool("MaxPool", {2, 3, 9},
             {{"kernel_shape", ints({3})}, {"strides", ints({2})}, {"pads", ints({1, 1})}}));
    test::check_gradients(pool("MaxPool", {1, 2, 4, 5, 4},
                               {{"kernel_shape", ints({2, 2, 2})}, {"strides", ints({2, 1, 2})}}));
  }
  SUBCASE("with the Indices output") {
    GradCheckCase c = pool("MaxPool", {2, 2, 4, 4}, {{"kernel_shape", ints({2, 2})}});
    c.num_outputs = 2;
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: AveragePool") {
  SUBCASE("2x2 stride 2") {
    test::check_gradients(pool("AveragePool", {2, 3, 6, 6},
                               {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}));
  }
  SUBCASE("pads, with and without count_include_pad") {
    for (int64_t include : {0, 1})
      test::check_gradients(pool("AveragePool", {1, 2, 5, 6},
                                 {{"kernel_shape", ints({3, 3})},
                                  {"strides", ints({2, 1})},
                                  {"pads", ints({1, 1, 1, 0})},
                                  {"count_include_pad", int1(include)}}));
  }
  SUBCASE("ceil_mode windows past the end padding") {
    for (int64_t include : {0, 1})
      test::check_gradients(pool("AveragePool", {1, 2, 6, 6},
                                 {{"kernel_shape", ints({3, 3})},
                                  {"strides", ints({2, 2})},
                                  {"pads", ints({1, 1, 1, 1})},
                                  {"ceil_mode", int1(1)},
                                  {"count_include_pad", int1(include)}}));
  }
  SUBCASE("auto_pad SAME_LOWER") {
    test::check_gradients(pool("AveragePool", {1, 2, 5, 4},
                               {{"kernel_shape", ints({2, 3})},
                                {"strides", ints({2, 2})},
                                {"auto_pad", str("SAME_LOWER")}}));
  }
  SUBCASE("dilations (opset 19)") {
    GradCheckCase c = pool("AveragePool", {1, 2, 7, 7},
                           {{"kernel_shape", ints({2, 2})}, {"dilations", ints({2, 3})}});
    c.opset = 19;
    test::check_gradients(c);
  }
  SUBCASE("1-D and 3-D") {
    test::check_gradients(
        pool("AveragePool", {2, 3, 8}, {{"kernel_shape", ints({3})}, {"pads", ints({1, 1})}}));
    test::check_gradients(pool("AveragePool", {1, 2, 4, 4, 5},
                               {{"kernel_shape", ints({2, 2, 3})}, {"strides", ints({2, 2, 1})}}));
  }
}

TEST_CASE("gradients: GlobalAveragePool and GlobalMaxPool") {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    SUBCASE(op) {
      test::check_gradients(pool(op, {2, 3, 4, 5}));
      test::check_gradients(pool(op, {2, 2, 7}));
      test::check_gradients(pool(op, {1, 2, 2, 3, 2}));
    }
  }
}

TEST_CASE("MaxPool and GlobalMaxPool gradients go to the first maximum on ties (PyTorch's rule)") {
  // Every 2x2 window (stride 1) of a constant 3x3 plane ties: each sends its gradient to its
  // top-left element.
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 2.0f));
  Tensor dx = test::sum_gradient("MaxPool", x, {{"kernel_shape", ints({2, 2})}});
  CHECK(dx.to_float_vector() == std::vector<float>{1, 1, 0, 1, 1, 0, 0, 0, 0});
  // Global: the first of the two maxima.
  Tensor y = Tensor::from_vector<float>({1, 2, 2, 2}, {0, 3, 1, 3, 5, 5, 5, 1});
  Tensor dy = test::sum_gradient("GlobalMaxPool", y, {});
  CHECK(dy.to_float_vector() == std::vector<float>{0, 1, 0, 0, 1, 0, 0, 0});
}

TEST_CASE("gradients: MaxUnpool gathers dY at the indices (PyTorch's rule)") {
  // X [1, 2, 2, 2] into [1, 2, 4, 4] (inferred) or [1, 2, 5, 5] (output_shape): each element one
  // flat index of its own, anywhere in the whole tensor (channel 1's point into channel 0 too).
  const Tensor idx = Tensor::from_vector<int64_t>({1, 2, 2, 2}, {0, 3, 9, 14, 17, 22, 5, 31});
  GradCheckCase c =
      pool("MaxUnpool", {1, 2, 2, 2}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  c.inputs.push_back(test::fixed(idx));
  test::check_gradients(c);
  c.inputs.push_back(test::fixed(Tensor::from_vector<int64_t>({4}, {1, 2, 5, 5})));
  test::check_gradients(c);
  // Two elements sharing an index (overlapping windows): only the later one's value reaches Y,
  // yet both get dY there, as PyTorch's gather does.
  const Tensor x = Tensor::from_vector<float>({1, 1, 1, 2}, {3, 4});
  const Tensor dx = test::sum_gradient("MaxUnpool", x, {{"kernel_shape", ints({1, 2})}}, 17,
                                       {Tensor::from_vector<int64_t>({1, 1, 1, 2}, {1, 1})});
  CHECK(dx.to_float_vector() == std::vector<float>{1, 1});
}

TEST_CASE("MaxPool 2x2 stride 2 gradient: ties, NaN, -inf, odd sizes, threaded") {
  // W = 19 runs on one thread; W = 75 (1.3M elements, above 4 * kParallelMinElements) on all.
  for (const int64_t W : {19, 75}) {
    CAPTURE(W);
    // Odd H and W (the last row and column belong to no window), values from {0..4} so most
    // windows tie, some NaNs and all-(-inf)/NaN windows.
    const int64_t N = 16, C = 64, H = 17, OH = H / 2, OW = W / 2;
    Tensor x(DType::F32, {N, C, H, W});
    float* xp = x.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) xp[i] = static_cast<float>((i * 2654435761u >> 7) % 5);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
    xp[0] = xp[1] = xp[W] = xp[W + 1] = -inf;                    // window (0, 0): all -inf
    xp[2] = nan, xp[3] = nan, xp[W + 2] = nan, xp[W + 3] = nan;  // window (0, 1): all NaN
    xp[4] = nan;                                                 // window (0, 2): first is NaN
    xp[H * W + 6] = inf;                                         // window (0, 3) of plane 1
    Tensor dx = test::sum_gradient("MaxPool", x,
                                   {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
    REQUIRE(dx.shape() == x.shape());
    std::vector<float> want(static_cast<size_t>(x.numel()), 0.0f);
    for (int64_t p = 0; p < N * C; ++p)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          const int64_t base = p * H * W + 2 * oy * W + 2 * ox;
          const int64_t at[4] = {base, base + 1, base + W, base + W + 1};
          int64_t arg = at[0];  // no value above -inf: the first element
          float best = -inf;
          for (int64_t i : at)
            if (xp[i] > best) best = xp[i], arg = i;
          want[static_cast<size_t>(arg)] = 1.0f;
        }
    CHECK(dx.to_float_vector() == want);
    CHECK(want[0] == 1.0f);  // the all -inf window
    CHECK(want[2] == 1.0f);  // the all-NaN window
    CHECK(want[4] == 0.0f);  // a NaN never wins against a number
  }
}
