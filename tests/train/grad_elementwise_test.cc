// Double-precision finite-difference checks of the elementwise gradient builders.
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::in;

namespace {
GradCheckCase binary(const std::string& op, Shape a, Shape b, double lo = -1.0, double hi = 1.0) {
  GradCheckCase c;
  c.op = op;
  c.inputs = {in(a, lo, hi), in(b, lo, hi)};
  return c;
}
GradCheckCase unary(const std::string& op, double lo = -1.0, double hi = 1.0) {
  GradCheckCase c;
  c.op = op;
  c.inputs = {in({2, 3, 4}, lo, hi)};
  return c;
}
}  // namespace

TEST_CASE("gradients: binary arithmetic with broadcasting") {
  for (const char* op : {"Add", "Sub", "Mul"}) {
    SUBCASE(op) {
      test::check_gradients(binary(op, {2, 3, 4}, {2, 3, 4}));
      test::check_gradients(binary(op, {2, 3, 4}, {4}));     // row broadcast
      test::check_gradients(binary(op, {2, 1, 4}, {3, 1}));  // both broadcast
    }
  }
  SUBCASE("Div") {
    test::check_gradients(binary("Div", {2, 3, 4}, {3, 1}, 0.5, 2.0));
  }
  SUBCASE("Pow") {
    test::check_gradients(binary("Pow", {2, 3}, {2, 3}, 0.5, 2.0));
    test::check_gradients(binary("Pow", {2, 3}, {}, 0.5, 2.0));  // scalar exponent
    // An integer exponent (Pow 12+): widened for dA; it has no gradient of its own.
    GradCheckCase c = binary("Pow", {2, 3}, {}, 0.5, 2.0);
    c.inputs[1] = test::fixed(Tensor::from_vector<int64_t>({2, 3}, {2, 3, -1, 0, 1, 4}));
    test::check_gradients(c);
    c.inputs[1] = test::fixed(Tensor::from_vector<int32_t>({3}, {3, -2, 1}));
    test::check_gradients(c);
  }
  SUBCASE("Mod") {
    // Both forms (fmod 1: C's fmod, 0: Python's %), mixed signs, A/B away from integers (Y
    // jumps there); B broadcast in the second case.
    const Tensor a = Tensor::from_vector<float>({2, 3}, {2.3f, -1.7f, 0.4f, 5.2f, -4.1f, 1.1f});
    const Tensor b = Tensor::from_vector<float>({2, 3}, {1.0f, 0.8f, 1.5f, 2.0f, 1.3f, -0.7f});
    const Tensor row = Tensor::from_vector<float>({3}, {0.9f, -1.3f, 2.2f});
    for (const int64_t fmod : {1, 0}) {
      CAPTURE(fmod);
      GradCheckCase c;
      c.op = "Mod";
      c.attrs["fmod"] = int_attribute(fmod);
      c.inputs = {test::at(a), test::at(b)};
      test::check_gradients(c);
      c.inputs = {test::at(a), test::at(row)};
      test::check_gradients(c);
    }
  }
}

TEST_CASE("gradients: variadic Sum, Max, Min, Mean") {
  for (const char* op : {"Sum", "Max", "Min", "Mean"}) {
    SUBCASE(op) {
      GradCheckCase c;
      c.op = op;
      c.inputs = {in({2, 3}), in({3}), in({2, 1})};
      test::check_gradients(c);
    }
  }
}

TEST_CASE("gradients: unary math") {
  test::check_gradients(unary("Neg"));
  test::check_gradients(unary("Exp"));
  test::check_gradients(unary("Log", 0.2, 3.0));
  test::check_gradients(unary("Sqrt", 0.2, 3.0));
  test::check_gradients(unary("Reciprocal", 0.5, 3.0));
  test::check_gradients(unary("Sin"));
  test::check_gradients(unary("Cos"));
  // trigonometric and hyperbolic functions, inside their domains and away from the poles
  test::check_gradients(unary("Tan", -1.2, 1.2));
  test::check_gradients(unary("Asin", -0.9, 0.9));
  test::check_gradients(unary("Acos", -0.9, 0.9));
  test::check_gradients(unary("Atan", -3.0, 3.0));
  test::check_gradients(unary("Sinh", -2.0, 2.0));
  test::check_gradients(unary("Cosh", -2.0, 2.0));
  test::check_gradients(unary("Asinh", -3.0, 3.0));
  test::check_gradients(unary("Acosh", 1.1, 4.0));
  test::check_gradients(unary("Atanh", -0.9, 0.9));
  GradCheckCase abs = unary("Abs");
  abs.kinks = {0.0};
  test::check_gradients(abs);
}

TEST_CASE("gradients: Where routes the gradient by the condition") {
  GradCheckCase c;
  c.op = "Where";
  GradCheckInput cond;
  cond.differentiable = false;
  cond.value = Tensor::from_vector<bool>({2, 3}, {true, false, true, false, false, true});
  c.inputs = {cond, in({2, 3}), in({3})};
  test::check_gradients(c);
}

TEST_CASE("build_backward: an op without a gradient builder on the path is named") {
  auto graph = [](const std::string& op) {
    Graph g;
    g.opsets[""] = 17;
    Node n;
    n.name = "op_it";
    n.op_type = op;
    n.op = op_from_name(op);
    n.opset = 17;
    n.inputs = {"x"};
    n.outputs = {"loss"};
    g.nodes.push_back(n);
    ValueInfo vi;
    vi.name = "x";
    vi.dtype = DType::F32;
    g.inputs.push_back(vi);
    return g;
  };
  Graph unique = graph("Unique");
  CHECK_THROWS_WITH_AS(
      train::build_backward(unique, "loss", {"x"}),
      doctest::Contains("node 'op_it' (Unique, opset 17): op Unique has no gradient builder"),
      Error);
  // Round and Hardmax are piecewise constant: they pass no gradient (0, as in PyTorch, where
  // one_hot(argmax(x)) has none), so x has no path.
  for (const char* op : {"Round", "Hardmax"}) {
    CAPTURE(op);
    Graph g = graph(op);
    train::BackwardResult bw = train::build_backward(g, "loss", {"x"});
    CHECK(bw.no_path == std::vector<std::string>{"x"});
  }
}
