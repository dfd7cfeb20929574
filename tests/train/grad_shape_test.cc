// Gradients of the shape and data-movement ops, the casts and Dropout: double-precision
// finite-difference checks over each op's attribute and opset forms (repeated and negative
// indices so scatter-add differs from scatter-set, non-involutive permutations, reflect/edge/wrap
// pads that fold border copies back), plus direct checks where differences cannot see the
// point (Dropout's random mask, Cast's round trip through float32).
#include <cmath>
#include <cstdint>
#include <limits>

#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::in;
using oat::test::fixed;
using oat::test::omitted;

namespace {

GradCheckInput i64s(std::vector<int64_t> v) {
  return fixed(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}
Attribute ints(std::vector<int64_t> v) { return train::GradientContext::attr_ints(std::move(v)); }
Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

GradCheckCase op_case(const std::string& op, std::vector<GradCheckInput> inputs,
                      std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
  GradCheckCase c;
  c.op = op;
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.opset = opset;
  return c;
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

}  // namespace

TEST_CASE("gradients: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity)") {
  SUBCASE("Reshape") {
    test::check_gradients(op_case("Reshape", {in({2, 3, 4}), i64s({4, -1})}));
    test::check_gradients(op_case("Reshape", {in({2, 3, 4}), i64s({0, 12})}));
  }
  SUBCASE("Flatten") {
    for (int64_t axis : {0, 2, -1})
      test::check_gradients(op_case("Flatten", {in({2, 3, 4})}, {{"axis", int1(axis)}}));
  }
  SUBCASE("Squeeze: axes input, attribute (opset 11), all ones") {
    test::check_gradients(op_case("Squeeze", {in({2, 1, 3, 1}), i64s({-1})}));
    test::check_gradients(op_case("Squeeze", {in({2, 1, 3, 1})}, {{"axes", ints({1})}}, 11));
    test::check_gradients(op_case("Squeeze", {in({2, 1, 3, 1})}));
  }
  SUBCASE("Unsqueeze: axes input, attribute (opset 11)") {
    test::check_gradients(op_case("Unsqueeze", {in({2, 3}), i64s({0, 3})}));
    test::check_gradients(op_case("Unsqueeze", {in({2, 3})}, {{"axes", ints({1})}}, 11));
  }
  SUBCASE("Identity") { test::check_gradients(op_case("Identity", {in({2, 3})})); }
}

TEST_CASE("gradients: Transpose takes the inverse permutation") {
  test::check_gradients(op_case("Transpose", {in({2, 3, 4})}, {{"perm", ints({2, 0, 1})}}));
  test::check_gradients(op_case("Transpose", {in({2, 3, 4, 5})}, {{"perm", ints({0, 3, 1, 2})}}));
  test::check_gradients(op_case("Transpose", {in({2, 3, 4})}));  // reversed axes
}

TEST_CASE("gradients: Concat splits dY back") {
  SUBCASE("three inputs along axis 1 and -1") {
    test::check_gradients(
        op_case("Concat", {in({2, 1, 3}), in({2, 4, 3}), in({2, 2, 3})}, {{"axis", int1(1)}}));
    test::check_gradients(op_case("Concat", {in({2, 3}), in({2, 1})}, {{"axis", int1(-1)}}));
  }
  SUBCASE("a constant input gets no gradient (its output is omitted)") {
    Tensor k = Tensor::from_vector<double>({1, 3}, {1, 2, 3});
    test::check_gradients(
        op_case("Concat", {in({2, 3}), fixed(k), in({1, 3})}, {{"axis", int1(0)}}));
  }
}

TEST_CASE("gradients: Split concatenates dY (zeros for outputs without a gradient)") {
  SUBCASE("split input (opset 13), every output used") {
    GradCheckCase c = op_case("Split", {in({2, 5, 3}), i64s({1, 4})}, {{"axis", int1(1)}}, 13);
    c.num_outputs = 2;
    c.checked_outputs = {0, 1};
    test::check_gradients(c);
  }
  SUBCASE("split attribute (opset 11), middle output unused") {
    GradCheckCase c = op_case("Split", {in({6, 2})}, {{"split", ints({2, 1, 3})}}, 11);
    c.num_outputs = 3;
    c.checked_outputs = {0, 2};
    test::check_gradients(c);
  }
  SUBCASE("num_outputs (opset 18), uneven, only the last used") {
    GradCheckCase c =
        op_case("Split", {in({2, 7})}, {{"axis", int1(-1)}, {"num_outputs", int1(3)}}, 18);
    c.num_outputs = 3;
    c.checked_outputs = {2};
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: Slice scatters dY into zeros") {
  SUBCASE("starts/ends/axes/steps inputs with negative indices and steps") {
    test::check_gradients(op_case("Slice", {in({4, 5, 6}), i64s({1, -1, 0}), i64s({kMax, 0, 6}),
                                            i64s({0, 1, 2}), i64s({1, -2, 2})}));
  }
  SUBCASE("axes and steps omitted, clamped ends") {
    test::check_gradients(op_case("Slice", {in({4, 5}), i64s({1, -3}), i64s({100, -1})}));
  }
  SUBCASE("reverse the whole axis") {
    test::check_gradients(
        op_case("Slice", {in({3, 4}), i64s({-1}), i64s({kMin}), i64s({-1}), i64s({-1})}));
  }
  SUBCASE("steps omitted, axes given, an empty slice") {
    test::check_gradients(
        op_case("Slice", {in({3, 4}), i64s({2, 0}), i64s({2, 3}), i64s({0, 1}), omitted()}));
    test::check_gradients(
        op_case("Slice", {in({3, 4}), i64s({0, 1}), i64s({3, 3}), i64s({0, 1}), omitted()}));
  }
  SUBCASE("attributes (opset 9)") {
    test::check_gradients(
        op_case("Slice", {in({4, 5})},
                {{"starts", ints({1, 0})}, {"ends", ints({3, -1})}, {"axes", ints({0, 1})}}, 9));
  }
}

TEST_CASE("gradients: Gather and GatherElements scatter-add (repeated, negative indices)") {
  SUBCASE("Gather axis 0: an embedding lookup") {
    test::check_gradients(op_case("Gather", {in({5, 3}), i64s({0, -1, 0, 2, 0})}));
  }
  SUBCASE("Gather axis 1 with 2-D int32 indices") {
    Tensor idx = Tensor::from_vector<int32_t>({2, 2}, {3, 0, -4, 2});
    test::check_gradients(op_case("Gather", {in({2, 4, 3}), fixed(idx)}, {{"axis", int1(1)}}));
  }
  SUBCASE("Gather with a scalar index, last axis") {
    test::check_gradients(op_case("Gather", {in({2, 3, 4}), fixed(Tensor::scalar<int64_t>(-2))},
                                  {{"axis", int1(-1)}}));
  }
  SUBCASE("GatherElements along axes 0, 1 and the last") {
    Tensor i0 = Tensor::from_vector<int64_t>({2, 3}, {0, 2, -1, 0, 0, 1});
    test::check_gradients(op_case("GatherElements", {in({3, 3}), fixed(i0)}));
    Tensor i1 = Tensor::from_vector<int64_t>({2, 2, 3}, {0, 1, 1, 1, 0, 0, 1, 1, 1, -2, 0, 1});
    test::check_gradients(
        op_case("GatherElements", {in({2, 2, 4}), fixed(i1)}, {{"axis", int1(1)}}));
    Tensor i2 = Tensor::from_vector<int64_t>({2, 4}, {3, 3, 0, -1, 1, 1, 1, 2});
    test::check_gradients(op_case("GatherElements", {in({3, 4}), fixed(i2)}, {{"axis", int1(-1)}}));
  }
}

TEST_CASE("gradients: Compress scatters back to the selected slices") {
  auto cond = [](std::vector<bool> v) {
    return fixed(Tensor::from_vector<bool>({static_cast<int64_t>(v.size())}, v));
  };
  SUBCASE("along axis 1, a negative axis, and no axis (flattened)") {
    test::check_gradients(
        op_case("Compress", {in({2, 4, 3}), cond({true, false, true, true})}, {{"axis", int1(1)}}));
    test::check_gradients(
        op_case("Compress", {in({2, 4, 3}), cond({false, true, true})}, {{"axis", int1(-1)}}));
    test::check_gradients(
        op_case("Compress", {in({2, 3}), cond({true, false, false, true, true})}));
  }
  SUBCASE("a condition shorter, or longer, than the axis") {
    test::check_gradients(
        op_case("Compress", {in({5, 2}), cond({false, true})}, {{"axis", int1(0)}}));
    test::check_gradients(op_case("Compress", {in({2, 2}), cond({true, false, true, true, true})},
                                  {{"axis", int1(0)}}));
  }
}

TEST_CASE("gradients: Expand and Tile sum the copies") {
  SUBCASE("Expand") {
    test::check_gradients(op_case("Expand", {in({3, 1}), i64s({2, 1, 4})}));
    test::check_gradients(op_case("Expand", {in({2, 3}), i64s({2, 3})}));
  }
  SUBCASE("Tile") {
    test::check_gradients(op_case("Tile", {in({2, 3}), i64s({2, 3})}));
    test::check_gradients(op_case("Tile", {in({2, 1, 3}), i64s({1, 4, 2})}));
    test::check_gradients(op_case("Tile", {in({3}), i64s({1})}));
  }
}

TEST_CASE("gradients: Pad in every mode and opset form") {
  SUBCASE("constant, pads input, with a crop") {
    test::check_gradients(op_case("Pad", {in({3, 4}), i64s({0, 1, 2, 1})}));
    test::check_gradients(op_case("Pad", {in({3, 4}), i64s({1, -1, -2, 2})}));
  }
  SUBCASE("constant_value given and axes (opset 18)") {
    test::check_gradients(op_case(
        "Pad",
        {in({2, 3, 4}), i64s({1, 2, 0, 1}), fixed(Tensor::scalar<double>(0.5)), i64s({-1, 1})}, {},
        18));
  }
  for (const char* mode : {"reflect", "edge", "wrap"}) {
    SUBCASE(mode) {
      test::check_gradients(
          op_case("Pad", {in({3, 4}), i64s({2, 3, 1, 2})}, {{"mode", str(mode)}}));
      test::check_gradients(
          op_case("Pad", {in({2, 3, 3}), i64s({0, 2, 0, 0, 1, 2})}, {{"mode", str(mode)}}));
    }
  }
  SUBCASE("reflect pads wider than the axis fold several times") {
    test::check_gradients(
        op_case("Pad", {in({2, 3}), i64s({0, 5, 0, 4})}, {{"mode", str("reflect")}}));
  }
  SUBCASE("attributes (opset 2) and paddings (opset 1)") {
    test::check_gradients(
        op_case("Pad", {in({3, 4})}, {{"pads", ints({1, 0, 0, 2})}, {"mode", str("edge")}}, 2));
    test::check_gradients(op_case("Pad", {in({3, 4})}, {{"paddings", ints({0, 1, 2, 0})}}, 1));
  }
}

TEST_CASE("gradients: DepthToSpace and SpaceToDepth") {
  SUBCASE("DepthToSpace DCR and CRD") {
    test::check_gradients(op_case("DepthToSpace", {in({2, 8, 2, 3})}, {{"blocksize", int1(2)}}));
    test::check_gradients(op_case("DepthToSpace", {in({1, 18, 2, 2})},
                                  {{"blocksize", int1(3)}, {"mode", str("CRD")}}));
    test::check_gradients(op_case("DepthToSpace", {in({2, 8, 3, 2})},
                                  {{"blocksize", int1(2)}, {"mode", str("CRD")}}));
  }
  SUBCASE("SpaceToDepth") {
    test::check_gradients(op_case("SpaceToDepth", {in({2, 2, 4, 6})}, {{"blocksize", int1(2)}}));
  }
}

TEST_CASE("gradients: Trilu masks dY with the same triangle") {
  const GradCheckInput k = fixed(Tensor::from_vector<int64_t>({}, {1}));
  const GradCheckInput k_neg = fixed(Tensor::from_vector<int64_t>({}, {-1}));
  test::check_gradients(op_case("Trilu", {in({3, 4})}, {}, 14));
  test::check_gradients(op_case("Trilu", {in({2, 3, 4}), k}, {{"upper", int1(0)}}, 14));
  test::check_gradients(op_case("Trilu", {in({4, 3}), k_neg}, {{"upper", int1(1)}}, 14));
}

TEST_CASE("gradients: Cast and CastLike") {
  test::check_gradients(op_case("Cast", {in({2, 3})}, {{"to", int1(11)}}));  // double
  test::check_gradients(op_case("CastLike", {in({2, 3}), fixed(Tensor::scalar<double>(0))}));
}

namespace {

// Graph: x (float64) -> `nodes` -> y; loss = ReduceSum(y · r). Returns the executor's values of
// `fetch` plus "x_grad" (dLoss/dx) for x and r fed.
std::map<std::string, Tensor> run_backward(std::vector<Node> nodes, const Tensor& x,
                                           const Tensor& r, std::vector<std::string> fetch,
                                           std::map<std::string, Tensor> constants = {}) {
  Graph g;
  g.opsets[""] = 17;
  ValueInfo vi;
  vi.name = "x";
  vi.dtype = DType::F64;
  g.inputs.push_back(vi);
  g.initializers = std::move(constants);
  g.initializers["r"] = r;
  auto node = [](const std::string& op, std::vector<std::string> ins,
                 std::vector<std::string> outs) {
    Node n;
    n.name = outs[0] + "_node";
    n.op_type = op;
    n.op = op_from_name(op);
    n.opset = 17;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    return n;
  };
  g.nodes = std::move(nodes);
  g.nodes.push_back(node("Mul", {"y", "r"}, {"yr"}));
  Node red = node("ReduceSum", {"yr"}, {"loss"});
  red.attrs["keepdims"] = int1(0);
  g.nodes.push_back(red);
  train::BackwardResult bw = train::build_backward(g, "loss", {"x"});
  REQUIRE(bw.grads.count("x"));
  Executor ex(g);
  fetch.push_back(bw.grads.at("x"));
  auto out = ex.run({{"x", x}, {bw.seed, Tensor::scalar<double>(1.0)}}, fetch);
  out["x_grad"] = out.at(bw.grads.at("x"));
  return out;
}

Tensor iota(Shape s, double scale) {
  Tensor t(DType::F64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = scale * static_cast<double>(i + 1);
  return t;
}

}  // namespace

TEST_CASE("gradients: Cast through float32 and back gives a float64 gradient") {
  Node to32;
  to32.name = "to32";
  to32.op_type = "Cast";
  to32.op = OpId::Cast;
  to32.opset = 17;
  to32.attrs["to"] = int1(1);
  to32.inputs = {"x"};
  to32.outputs = {"x32"};
  Node back = to32;
  back.name = "back";
  back.attrs["to"] = int1(11);
  back.inputs = {"x32"};
  back.outputs = {"y"};
  const Tensor r = iota({2, 3}, 0.1);
  auto out = run_backward({to32, back}, iota({2, 3}, 1.0), r, {});
  const Tensor& dx = out.at("x_grad");
  REQUIRE(dx.dtype() == DType::F64);
  for (int64_t i = 0; i < dx.numel(); ++i)
    CHECK(dx.data<double>()[i] == doctest::Approx(r.data<double>()[i]).epsilon(1e-6));
}

TEST_CASE("gradients: Dropout") {
  SUBCASE("inference forms are the identity") {
    test::check_gradients(op_case("Dropout", {in({2, 3})}, {}, 13));
    // training_mode is a runtime input: the gradient reads it (and needs the mask output).
    GradCheckCase off = op_case(
        "Dropout",
        {in({2, 3}), fixed(Tensor::scalar<double>(0.3)), fixed(Tensor::scalar<bool>(false))}, {},
        13);
    off.num_outputs = 2;
    test::check_gradients(off);
    test::check_gradients(op_case("Dropout", {in({2, 3})}, {}, 7));
  }
  // A training forward draws a fresh mask per run, so finite differences cannot see one
  // function; given its mask, Y = X ⊙ mask / (1 − p) is linear and dX = r ⊙ mask / (1 − p).
  SUBCASE("training: dX = dY ⊙ mask / (1 - ratio), with the forward's mask") {
    for (int64_t opset : {13, 6}) {
      CAPTURE(opset);
      Node d;
      d.name = "drop";
      d.op_type = "Dropout";
      d.op = OpId::Dropout;
      d.opset = opset;
      d.outputs = {"y", "mask"};
      d.inputs = {"x"};
      const double p = 0.25;
      std::vector<Node> nodes;
      if (opset >= 12) {
        Node cp;
        cp.name = "ratio_c";
        cp.op_type = "Constant";
        cp.op = OpId::Constant;
        cp.opset = 17;
        Attribute v;
        v.kind = Attribute::Kind::Tensor;
        v.t = Tensor::scalar<double>(p);
        cp.attrs["value"] = v;
        cp.outputs = {"ratio"};
        Node ct = cp;
        ct.name = "mode_c";
        ct.attrs["value"].t = Tensor::scalar<bool>(true);
        ct.outputs = {"mode"};
        nodes = {cp, ct};
        d.inputs = {"x", "ratio", "mode"};
      } else {
        d.attrs["ratio"] = train::GradientContext::attr_float(static_cast<float>(p));
        d.attrs["is_test"] = int1(0);
      }
      nodes.push_back(d);
      const Tensor x = iota({200, 200}, 1e-4), r = iota({200, 200}, -2e-4);
      auto out = run_backward(nodes, x, r, {"y", "mask"});
      const Tensor& dx = out.at("x_grad");
      const Tensor mask = cast_tensor(out.at("mask"), DType::F64);
      int64_t kept = 0;
      for (int64_t i = 0; i < dx.numel(); ++i) {
        const double m = mask.data<double>()[i];
        kept += m != 0;
        CHECK(out.at("y").data<double>()[i] == doctest::Approx(x.data<double>()[i] * m / (1 - p)));
        CHECK(dx.data<double>()[i] == doctest::Approx(r.data<double>()[i] * m / (1 - p)));
      }
      CHECK(kept > 29000);  // about 30000 of 40000 kept
      CHECK(kept < 31000);
    }
  }
  SUBCASE("training without the mask output is refused, naming the node") {
    Node d;
    d.name = "drop";
    d.op_type = "Dropout";
    d.op = OpId::Dropout;
    d.opset = 6;
    d.attrs["is_test"] = int1(0);
    d.inputs = {"x"};
    d.outputs = {"y"};
    CHECK_THROWS_WITH_AS(run_backward({d}, iota({2, 2}, 1), iota({2, 2}, 1), {}),
                         doctest::Contains("node 'drop' (Dropout, opset 6): Dropout in training "
                                           "mode needs its mask output"),
                         Error);
  }
}

// The movement ops are linear, Y = A·X, and their gradient is the adjoint: dX = Aᵀ·dY. So for
// random X and R, <A·X, R> = <X, Aᵀ·R>, which checks the kernels at sizes that take their
// threaded paths (finite differences there would take minutes).
TEST_CASE("gradients: movement kernels are adjoints on large, threaded shapes") {
  struct Case {
    const char* name;
    Shape x;
    std::string op;
    std::map<std::string, Attribute> attrs;
    std::vector<std::pair<std::string, Tensor>> inputs;  // inputs after x (constants)
    int64_t opset = 17;
  };
  auto ids = [](Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(s, v); };
  auto vec = [&](std::vector<int64_t> v) { return ids({static_cast<int64_t>(v.size())}, v); };
  auto repeated = [&](int64_t count, int64_t n) {  // indices with repeats and negatives
    std::vector<int64_t> v;
    for (int64_t i = 0; i < count; ++i) v.push_back((i * 7) % n - (i % 3 == 0 ? n : 0));
    return v;
  };
  std::vector<int64_t> ge;  // GatherElements indices for [64, 30, 20] into axis 1 of size 40
  for (int64_t i = 0; i < 64 * 30 * 20; ++i) ge.push_back((i * 13) % 40 - (i % 5 == 0 ? 40 : 0));
  const std::vector<Case> cases = {
      {"Gather axis 0 (embedding)", {1000, 600}, "Gather", {}, {{"i", vec(repeated(100, 1000))}}},
      {"Gather axis 1",
       {8, 100, 80},
       "Gather",
       {{"axis", int1(1)}},
       {{"i", vec(repeated(64, 100))}}},
      {"GatherElements axis 1",
       {64, 40, 20},
       "GatherElements",
       {{"axis", int1(1)}},
       {{"i", ids({64, 30, 20}, ge)}}},
      {"Slice with steps",
       {64, 100, 30},
       "Slice",
       {},
       {{"s", vec({1, -1, 0})},
        {"e", vec({64, 0, 30})},
        {"a", vec({0, 1, 2})},
        {"st", vec({1, -2, 1})}}},
      {"Pad reflect",
       {16, 3, 40, 40},
       "Pad",
       {{"mode", str("reflect")}},
       {{"p", vec({0, 0, 2, 3, 0, 0, 3, 2})}}},
      {"Pad edge",
       {16, 3, 40, 40},
       "Pad",
       {{"mode", str("edge")}},
       {{"p", vec({0, 1, 2, 3, 0, 0, 3, 2})}}},
      {"Pad constant with a crop",
       {16, 3, 40, 40},
       "Pad",
       {},
       {{"p", vec({0, 0, -2, 3, 0, 0, 3, -1})}}},
      {"Tile", {8, 30, 20}, "Tile", {}, {{"t", vec({2, 3, 4})}}},
      {"Expand", {64, 1, 30}, "Expand", {}, {{"sh", vec({64, 40, 30})}}},
      {"Transpose", {32, 40, 50}, "Transpose", {{"perm", ints({1, 2, 0})}}, {}},
      {"DepthToSpace CRD",
       {8, 32, 16, 16},
       "DepthToSpace",
       {{"blocksize", int1(2)}, {"mode", str("CRD")}},
       {}},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Node n;
    n.name = "op";
    n.op_type = c.op;
    n.op = op_from_name(c.op);
    n.opset = c.opset;
    n.attrs = c.attrs;
    n.inputs = {"x"};
    std::map<std::string, Tensor> constants;
    for (const auto& [name, t] : c.inputs) {
      n.inputs.push_back(name);
      constants[name] = t;
    }
    n.outputs = {"y"};
    const Tensor x = test::random_tensor(c.x, -1, 1, rng, {});
    Graph probe;
    probe.opsets[""] = 17;
    probe.nodes = {n};
    probe.initializers = constants;
    ValueInfo vi;
    vi.name = "x";
    vi.dtype = DType::F64;
    probe.inputs = {vi};
    const Tensor y = Executor(probe).run({{"x", x}}, {"y"}).at("y");
    const Tensor r = test::random_tensor(y.shape(), -1, 1, rng, {});
    auto out = run_backward({n}, x, r, {}, constants);
    const Tensor& dx = out.at("x_grad");
    REQUIRE(dx.shape() == x.shape());
    double lhs = 0, rhs = 0, scale = 0;
    for (int64_t i = 0; i < y.numel(); ++i) lhs += y.data<double>()[i] * r.data<double>()[i];
    for (int64_t i = 0; i < x.numel(); ++i) {
      rhs += x.data<double>()[i] * dx.data<double>()[i];
      scale += std::abs(x.data<double>()[i] * dx.data<double>()[i]);
    }
    CHECK(std::abs(lhs - rhs) <= 1e-12 * scale);
  }
}

TEST_CASE("gradients: shapes, comparisons and roundings pass no gradient (and do not stop autodiff)") {
  // loss = Σ x / float(shape(x)[1]) + Σ x · float(x > 0) + Σ floor(x)
  //   ⇒ dloss/dx = 1/n + [x > 0] + 0
  Graph g;
  g.opsets[""] = 17;
  ValueInfo xi;
  xi.name = "x";
  xi.dtype = DType::F64;
  g.inputs.push_back(xi);
  g.initializers["one"] = Tensor::scalar<int64_t>(1);
  g.initializers["zero"] = Tensor::scalar<double>(0.0);
  auto node = [&](const std::string& op, std::vector<std::string> in, std::string out,
                  std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.name = out;
    n.op_type = op;
    n.op = op_from_name(op);
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g.nodes.push_back(n);
  };
  node("Shape", {"x"}, "shape");
  node("Gather", {"shape", "one"}, "n");
  node("Cast", {"n"}, "n_f", {{"to", int1(11)}});  // DOUBLE
  node("Div", {"x", "n_f"}, "scaled");
  node("Greater", {"x", "zero"}, "positive");
  node("Cast", {"positive"}, "mask", {{"to", int1(11)}});
  node("Mul", {"x", "mask"}, "masked");
  node("Floor", {"x"}, "floored");
  node("Sum", {"scaled", "masked", "floored"}, "terms");
  node("ReduceSum", {"terms"}, "loss", {{"keepdims", int1(0)}});
  train::BackwardResult bw = train::build_backward(g, "loss", {"x"});
  REQUIRE(bw.grads.count("x"));
  const Tensor x = Tensor::from_vector<double>({2, 4}, {-1.5, -0.25, 0.5, 2.0, 3.25, -2.0, 0.75, -0.5});
  Executor ex(g);
  auto r = ex.run({{"x", x}, {bw.seed, Tensor::scalar<double>(1.0)}}, {bw.grads.at("x")});
  const Tensor& dx = r.at(bw.grads.at("x"));
  for (int64_t i = 0; i < x.numel(); ++i)
    CHECK(dx.item_as_double(i) == doctest::Approx(0.25 + (x.item_as_double(i) > 0 ? 1.0 : 0.0)));
}
