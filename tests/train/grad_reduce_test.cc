// Gradients of the reductions beyond ReduceSum/ReduceMean, of CumSum and of TopK: double-precision
// finite-difference checks over axes (attribute and opset-18 input forms), keepdims and
// noop_with_empty_axes, plus direct checks at the points differences cannot take (ties of
// ReduceMax/ReduceMin, zeros of ReduceProd, TopK's ties).
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::in;

namespace {

GradCheckInput i64s(std::vector<int64_t> v) {
  GradCheckInput i;
  i.differentiable = false;
  i.value = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  return i;
}
Attribute ints(std::vector<int64_t> v) { return train::GradientContext::attr_ints(std::move(v)); }
Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }

// One reduction over `x` with `axes` as an attribute (opset 17) or an input (opset 18).
GradCheckCase reduce(const std::string& op, Shape x, std::vector<int64_t> axes, bool keepdims,
                     bool axes_input, double lo = -1.0, double hi = 1.0) {
  GradCheckCase c;
  c.op = op;
  c.inputs = {in(std::move(x), lo, hi)};
  c.attrs["keepdims"] = int1(keepdims ? 1 : 0);
  if (axes_input) {
    c.opset = 18;
    if (!axes.empty()) c.inputs.push_back(i64s(axes));
  } else if (!axes.empty()) {
    c.attrs["axes"] = ints(axes);
  }
  return c;
}

// The variants every reduction runs: one axis, several non-adjacent, negative, all; keepdims
// on and off; attribute and input axes.
void check_variants(const std::string& op, double lo = -1.0, double hi = 1.0,
                    std::vector<double> kinks = {}) {
  struct V {
    Shape x;
    std::vector<int64_t> axes;
    bool keepdims, input;
  };
  const V variants[] = {{{3, 4}, {1}, true, false},    {{2, 3, 4}, {0, 2}, false, false},
                        {{2, 3, 4}, {-2}, true, true}, {{2, 3, 4}, {}, false, false},
                        {{2, 3, 2}, {}, true, true},   {{4, 3}, {0}, false, true}};
  for (const V& v : variants) {
    CAPTURE(shape_str(v.x));
    CAPTURE(shape_str(v.axes));
    CAPTURE(v.keepdims);
    CAPTURE(v.input);
    GradCheckCase c = reduce(op, v.x, v.axes, v.keepdims, v.input, lo, hi);
    c.kinks = kinks;
    test::check_gradients(c);
  }
}

}  // namespace

TEST_CASE("gradients: ReduceMax and ReduceMin route dY to the extremum") {
  check_variants("ReduceMax");
  check_variants("ReduceMin");
}

TEST_CASE("gradients: ReduceProd, ReduceSumSquare, ReduceL1, ReduceL2") {
  SUBCASE("ReduceProd") {
    check_variants("ReduceProd", 0.5, 1.5);
    test::check_gradients(reduce("ReduceProd", {2, 3}, {1}, true, false, -1.5, -0.5));
  }
  SUBCASE("ReduceSumSquare") { check_variants("ReduceSumSquare"); }
  SUBCASE("ReduceL1") { check_variants("ReduceL1", -1.0, 1.0, {0.0}); }
  SUBCASE("ReduceL2") { check_variants("ReduceL2"); }
}

TEST_CASE("gradients: ReduceLogSum and ReduceLogSumExp") {
  check_variants("ReduceLogSum", 0.2, 2.0);
  check_variants("ReduceLogSumExp", -3.0, 3.0);
}

TEST_CASE("gradients: noop_with_empty_axes makes the reduction the identity") {
  for (const char* op : {"ReduceMax", "ReduceL2", "ReduceProd"}) {
    CAPTURE(op);
    GradCheckCase c = reduce(op, {2, 3}, {}, true, true, 0.5, 1.5);
    c.attrs["noop_with_empty_axes"] = int1(1);
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: CumSum runs the other way") {
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1})
      for (int64_t axis : {0, 1, -1}) {
        CAPTURE(exclusive);
        CAPTURE(reverse);
        CAPTURE(axis);
        GradCheckCase c;
        c.op = "CumSum";
        GradCheckInput a;
        a.differentiable = false;
        a.value = Tensor::scalar<int64_t>(axis);
        c.inputs = {in({3, 4, 2}), a};
        c.attrs["exclusive"] = int1(exclusive);
        c.attrs["reverse"] = int1(reverse);
        test::check_gradients(c);
      }
}

namespace {

void check_values(const Tensor& t, const std::vector<double>& want) {
  REQUIRE(t.numel() == static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(t.item_as_double(static_cast<int64_t>(i)) == doctest::Approx(want[i]));
  }
}

}  // namespace

TEST_CASE("gradients: ties of ReduceMax/ReduceMin share dY evenly (as torch.amax)") {
  const Tensor x = Tensor::from_vector<double>({2, 4}, {1, 3, 3, 0, 2, 2, 2, 2});
  check_values(test::sum_gradient("ReduceMax", x, {{"axes", ints({1})}}),
               {0, .5, .5, 0, .25, .25, .25, .25});
  check_values(test::sum_gradient("ReduceMin", x, {{"axes", ints({0})}, {"keepdims", int1(0)}}),
               {1, 0, 0, 1, 0, 1, 1, 0});
  const Tensor f = Tensor::from_vector<float>({3}, {5, -1, 5});
  check_values(test::sum_gradient("ReduceMax", f, {}), {.5, 0, .5});
}

TEST_CASE("gradients: ReduceProd at zeros is the product of the others") {
  // Row 0 has one zero: only it gets Π(others) = 6. Row 1 has two: every gradient is 0.
  const Tensor x = Tensor::from_vector<double>({3, 3}, {0, 2, 3, 0, 0, 5, 2, -1, 4});
  check_values(test::sum_gradient("ReduceProd", x, {{"axes", ints({1})}}),
               {6, 0, 0, 0, 0, 0, -4, 8, -2});
}

TEST_CASE("gradients: ReduceL2 of an all-zero group has a zero gradient, not NaN") {
  const Tensor x = Tensor::from_vector<double>({2, 2}, {0, 0, 3, 4});
  check_values(test::sum_gradient("ReduceL2", x, {{"axes", ints({1})}}), {0, 0, 0.6, 0.8});
}

TEST_CASE("gradients: TopK scatters dValues back to the chosen elements") {
  // Random inputs have no ties, and ±step never reorders them (k of len: dX is 0 elsewhere).
  auto topk = [](Shape x, int64_t k, std::map<std::string, Attribute> attrs, int64_t opset = 11) {
    GradCheckCase c;
    c.op = "TopK";
    c.opset = opset;
    c.attrs = std::move(attrs);
    c.inputs = {in(std::move(x))};
    if (opset >= 10)
      c.inputs.push_back(i64s({k}));
    else
      c.attrs["k"] = int1(k);
    c.num_outputs = 2;
    c.checked_outputs = {0};
    return c;
  };
  SUBCASE("last axis, largest") { test::check_gradients(topk({3, 5}, 2, {})); }
  SUBCASE("axis 0, smallest") {
    test::check_gradients(topk({4, 3}, 3, {{"axis", int1(0)}, {"largest", int1(0)}}));
  }
  SUBCASE("negative middle axis, every element, sorted = 0") {
    test::check_gradients(topk({2, 4, 3}, 4, {{"axis", int1(-2)}, {"sorted", int1(0)}}));
  }
  SUBCASE("opset 1: k as an attribute") {
    test::check_gradients(topk({2, 3, 4}, 2, {{"axis", int1(1)}}, 1));
  }
  SUBCASE("opset 10") { test::check_gradients(topk({6}, 1, {}, 10)); }
}

TEST_CASE("gradients: TopK with ties routes dValues to the lower indices it chose") {
  // X = [[2, 5, 5, 1], [3, 3, 3, 3]], k = 2, loss = Σ Values: row 0 picks 5@1, 5@2; row 1 picks
  // 3@0, 3@1 (the lower indices), so each chosen element gets dY = 1, the rest 0.
  Graph g;
  g.opsets[""] = 11;
  g.inputs.push_back(ValueInfo{"x", DType::F64, {}});
  g.initializers["k"] = Tensor::from_vector<int64_t>({1}, {2});
  Node n;
  n.name = "topk";
  n.op_type = "TopK";
  n.op = OpId::TopK;
  n.opset = 11;
  n.inputs = {"x", "k"};
  n.outputs = {"values", "indices"};
  Node s;
  s.name = "sum";
  s.op_type = "ReduceSum";
  s.op = OpId::ReduceSum;
  s.opset = 11;
  s.attrs["keepdims"] = int1(0);
  s.inputs = {"values"};
  s.outputs = {"loss"};
  g.nodes = {n, s};
  train::BackwardResult bw = train::build_backward(g, "loss", {"x"});
  Executor ex(g);
  const Tensor x = Tensor::from_vector<double>({2, 4}, {2, 5, 5, 1, 3, 3, 3, 3});
  const Tensor dx =
      ex.run({{"x", x}, {bw.seed, Tensor::scalar<double>(1.0)}}, {bw.grads.at("x")})
          .at(bw.grads.at("x"));
  check_values(dx, {0, 1, 1, 0, 1, 1, 0, 0});
}
