// Folding of static shape values (runtime/shape_fold.h) on hand-built graphs: Shape -> Gather ->
// Unsqueeze -> Concat -> ConstantOfShape -> ScatterND lowers and runs at any batch; nothing that
// depends on a graph input's values, a floating initializer or a fixed batch is folded; sizes are
// bounded; libonnx re-inference (onnx_loader::refine_shapes) fixes dims downstream.
#include <doctest/doctest.h>

#include "node_builder.h"

#include <algorithm>

#include "onnx_loader/model.h"
#include "runtime/composite.h"
#include "runtime/executor.h"
#include "runtime/shape_fold.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Dim fixed(int64_t v) { return Dim{v, ""}; }
Dim sym(const std::string& p) { return Dim{-1, p}; }

struct Builder {
  Graph g;
  Builder() { g.opsets[""] = 13; }
  void input(const std::string& name, DType t, std::vector<Dim> d) {
    g.inputs.push_back(ValueInfo{name, t, d});
  }
  void output(const std::string& name, DType t = DType::F32) {
    g.outputs.push_back(ValueInfo{name, t, std::nullopt});
  }
  std::string ints(const std::string& name, std::vector<int64_t> v, bool scalar = false) {
    g.initializers[name] = scalar ? Tensor::scalar<int64_t>(v[0])
                                  : Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
    return name;
  }
  std::string node(const std::string& op, std::vector<std::string> in, const std::string& out,
                   std::map<std::string, Attribute> attrs = {}) {
    g.nodes.push_back(oat_test::make_node("n_" + out, op, std::move(in), out, std::move(attrs)));
    return out;
  }
  bool has(const std::string& op) const {
    return std::any_of(g.nodes.begin(), g.nodes.end(),
                       [&](const Node& n) { return n.op_type == op; });
  }
};

Tensor iota_f32(Shape s, float scale) {
  Tensor t(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * static_cast<float>(i);
  return t;
}

// mask = ScatterND(ConstantOfShape(Concat(Unsqueeze(Shape(x)[1]), Unsqueeze(Shape(x)[2]))),
//                  [[1, 2], [0, 4]], u);  y = x + mask. x: [batch, 3, 5].
Builder swin_like_mask(bool constant_updates) {
  Builder b;
  b.input("x", DType::F32, {sym("batch"), fixed(3), fixed(5)});
  const std::string s = b.node("Shape", {"x"}, "s");
  const std::string h = b.node("Gather", {s, b.ints("one", {1}, true)}, "h");
  const std::string w = b.node("Gather", {s, b.ints("two", {2}, true)}, "w");
  const std::string h1 = b.node("Unsqueeze", {h, b.ints("axes0", {0})}, "h1");
  const std::string w1 = b.node("Unsqueeze", {w, b.ints("axes0", {0})}, "w1");
  const std::string hw = b.node("Concat", {h1, w1}, "hw", {{"axis", attr_i(0)}});
  const std::string z = b.node("ConstantOfShape", {hw}, "z",
                               {{"value", attr_t(Tensor::from_vector<float>({1}, {0.f}))}});
  b.g.initializers["ind"] = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 0, 4});
  std::string u = "u";
  if (constant_updates)
    b.node("Constant", {}, u, {{"value", attr_t(Tensor::from_vector<float>({2}, {7.f, 9.f}))}});
  else
    b.input(u, DType::F32, {fixed(2)});
  const std::string m = b.node("ScatterND", {z, "ind", u}, "mask");
  b.node("Add", {"x", m}, "y");
  b.output("y");
  return b;
}

void check_mask_run(const Graph& g, bool feed_u) {
  Executor exec(g);  // lowers the ScatterND: its data's shape must be fixed
  for (int64_t batch : {1, 4}) {
    CAPTURE(batch);
    std::map<std::string, Tensor> feeds{{"x", iota_f32({batch, 3, 5}, 0.5f)}};
    if (feed_u) feeds["u"] = Tensor::from_vector<float>({2}, {7.f, 9.f});
    const Tensor y = exec.run(feeds)[0];
    REQUIRE(y.shape() == Shape{batch, 3, 5});
    for (int64_t i = 0; i < y.numel(); ++i) {
      const int64_t r = (i / 5) % 3, c = i % 5;
      const float add = r == 1 && c == 2 ? 7.f : r == 0 && c == 4 ? 9.f : 0.f;
      CHECK(y.data<float>()[i] == 0.5f * static_cast<float>(i) + add);
    }
  }
}

// Restores the process-wide shape inferer when a test changes it.
struct InfererScope {
  ShapeInferer saved = shape_inferer();
  explicit InfererScope(ShapeInferer f) { set_shape_inferer(f); }
  ~InfererScope() { set_shape_inferer(saved); }
};

}  // namespace

TEST_CASE("shape folding: Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape -> ScatterND lowers") {
  InfererScope none(nullptr);
  // Updates fed at run time: the ScatterND stays and lowers on the folded [3, 5] zeros.
  Builder fed = swin_like_mask(false);
  {
    Graph g = fed.g;
    const ShapeFoldReport r = fold_shape_constants(g);
    CHECK(r.folded_nodes == 7);  // Shape, 2 Gather, 2 Unsqueeze, Concat, ConstantOfShape
    REQUIRE(g.nodes.size() == 2);
    CHECK(g.nodes[0].op_type == "ScatterND");
    REQUIRE(g.initializers.count("z"));
    CHECK(g.initializers.at("z").shape() == Shape{3, 5});
    REQUIRE(g.value_info.count("z"));
    CHECK(g.value_info.at("z").shape_string() == "[3, 5]");
    CHECK_FALSE(g.initializers.count("s"));  // read only by folded nodes: not kept
  }
  check_mask_run(fed.g, true);
  // Constant updates: the whole mask is a constant, the ScatterND is evaluated away.
  Builder cst = swin_like_mask(true);
  Graph g = cst.g;
  fold_shape_constants(g);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op_type == "Add");
  REQUIRE(g.initializers.count("mask"));
  CHECK(g.initializers.at("mask").to_float_vector() ==
        std::vector<float>{0, 0, 0, 0, 9, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0});
  check_mask_run(cst.g, false);
}

TEST_CASE("shape folding: values from a graph input's values or a floating initializer stay") {
  InfererScope none(nullptr);
  Builder b;
  b.input("x", DType::F32, {sym("batch"), fixed(4)});
  b.input("k", DType::I64, {fixed(1)});
  b.g.initializers["wt"] = Tensor::from_vector<float>({4}, {1, 2, 3, 4});  // a parameter
  // shape = Concat(k, Shape(x)[1:2]): k's value is only known at run time.
  const std::string s = b.node("Shape", {"x"}, "s");
  const std::string tail = b.node("Slice", {s, b.ints("b1", {1}), b.ints("e2", {2})}, "tail");
  const std::string shp = b.node("Concat", {"k", tail}, "shp", {{"axis", attr_i(0)}});
  b.node("ConstantOfShape", {shp}, "ones",
         {{"value", attr_t(Tensor::from_vector<float>({1}, {1.f}))}});
  // wt2 = wt * 2: floating initializers are trained, never folded.
  b.node("Constant", {}, "two", {{"value", attr_t(Tensor::scalar<float>(2.f))}});
  b.node("Mul", {"wt", "two"}, "wt2");
  b.node("Mul", {"ones", "wt2"}, "p");
  b.node("Mul", {"x", "p"}, "y");
  b.output("y");
  Graph g = b.g;
  fold_shape_constants(g);
  // Only the Slice of Shape's fixed part folds (and the Shape, then unread); the float Constant
  // node stays a node.
  CHECK(g.nodes.size() == b.g.nodes.size() - 2);
  CHECK(g.initializers.count("tail"));
  for (const char* op : {"Concat", "ConstantOfShape", "Constant"})
    CHECK_MESSAGE(std::any_of(g.nodes.begin(), g.nodes.end(),
                              [&](const Node& n) { return n.op_type == op; }),
                  op, " was folded");
  CHECK(std::count_if(g.nodes.begin(), g.nodes.end(),
                      [](const Node& n) { return n.op_type == "Mul"; }) == 3);
  CHECK_FALSE(g.initializers.count("wt2"));
  Executor exec(g);
  const Tensor y = exec.run({{"x", Tensor::from_vector<float>({2, 4}, {1, 1, 1, 1, 2, 2, 2, 2})},
                             {"k", Tensor::from_vector<int64_t>({1}, {2})}})[0];
  CHECK(y.to_float_vector() == std::vector<float>{2, 4, 6, 8, 4, 8, 12, 16});
}

TEST_CASE("shape folding: a fixed batch of 1 is not baked in; sizes are bounded") {
  // x declared [1, 3, 5] (exported with batch 1) runs with any batch: Reshape(x, [Shape(x)[0], 15])
  // must keep reading the batch at run time, with or without libonnx re-inference.
  for (bool with_libonnx : {false, true}) {
    CAPTURE(with_libonnx);
    InfererScope scope(with_libonnx ? &onnx_loader::refine_shapes : nullptr);
    Builder b;
    b.input("x", DType::F32, {fixed(1), fixed(3), fixed(5)});
    b.g.value_info["s"] = ValueInfo{"s", DType::I64, std::vector<Dim>{fixed(3)}};
    const std::string s = b.node("Shape", {"x"}, "s");
    const std::string n0 = b.node("Gather", {s, b.ints("zero", {0}, true)}, "n0");
    const std::string n1 = b.node("Unsqueeze", {n0, b.ints("axes0", {0})}, "n1");
    const std::string c = b.node("Gather", {s, b.ints("one", {1}, true)}, "c");
    const std::string w = b.node("Gather", {s, b.ints("two", {2}, true)}, "w");
    const std::string cw = b.node("Mul", {c, w}, "cw");
    const std::string cw1 = b.node("Unsqueeze", {cw, b.ints("axes0", {0})}, "cw1");
    const std::string shp = b.node("Concat", {n1, cw1}, "shp", {{"axis", attr_i(0)}});
    b.node("Reshape", {"x", shp}, "y");
    b.output("y");
    Graph g = b.g;
    fold_shape_constants(g);
    CHECK(std::any_of(g.nodes.begin(), g.nodes.end(),
                      [](const Node& n) { return n.op_type == "Shape"; }));
    CHECK_FALSE(g.initializers.count("n0"));
    CHECK_FALSE(g.initializers.count("shp"));
    CHECK(g.inputs[0].shape->at(0).value == 1);  // the declared input is restored
    if (with_libonnx) {
      // 3 * 5 does not depend on the batch: Mul and its Unsqueeze fold.
      CHECK_FALSE(std::any_of(g.nodes.begin(), g.nodes.end(),
                              [](const Node& n) { return n.op_type == "Mul"; }));
      CHECK(g.initializers.count("cw1"));
      REQUIRE(g.value_info.count("y"));
      CHECK(g.value_info.at("y").shape->at(1).value == 15);  // Reshape dims from [?, 15]
    }
    Executor exec(g);
    const Tensor y = exec.run({{"x", iota_f32({4, 3, 5}, 1.f)}})[0];
    CHECK(y.shape() == Shape{4, 15});
  }
  // A ConstantOfShape of 300 x 300 (90000 > 65536 elements) stays a node.
  InfererScope none(nullptr);
  Builder big;
  big.input("x", DType::F32, {sym("batch"), fixed(300), fixed(300)});
  big.node("Shape", {"x"}, "s");
  big.node("Slice", {"s", big.ints("b1", {1}), big.ints("e3", {3})}, "hw");
  big.node("ConstantOfShape", {"hw"}, "z",
           {{"value", attr_t(Tensor::from_vector<float>({1}, {1.f}))}});
  big.node("Add", {"x", "z"}, "y");
  big.output("y");
  Graph g = big.g;
  fold_shape_constants(g);
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].op_type == "ConstantOfShape");
  CHECK(g.initializers.at("hw").to_int_vector() == std::vector<int64_t>{300, 300});
}

TEST_CASE("shape folding: arithmetic on a partly known shape fixes the Reshape dims it can") {
  // r = Reshape(x, [Shape(x)[0] * Shape(x)[1], Shape(x)[2]]): [batch * 3, 5], the 5 known.
  InfererScope none(nullptr);
  Builder b;
  b.input("x", DType::F32, {sym("batch"), fixed(3), fixed(5)});
  const std::string s = b.node("Shape", {"x"}, "s");
  const std::string n0 = b.node("Gather", {s, b.ints("zero", {0}, true)}, "n0");
  const std::string c = b.node("Gather", {s, b.ints("one", {1}, true)}, "c");
  const std::string w = b.node("Gather", {s, b.ints("two", {2}, true)}, "w");
  const std::string nc = b.node("Mul", {n0, c}, "nc");
  const std::string nc1 = b.node("Unsqueeze", {nc, b.ints("axes0", {0})}, "nc1");
  const std::string w1 = b.node("Unsqueeze", {w, b.ints("axes0", {0})}, "w1");
  const std::string shp = b.node("Concat", {nc1, w1}, "shp", {{"axis", attr_i(0)}});
  b.node("Reshape", {"x", shp}, "r");
  b.node("Relu", {"r"}, "y");
  b.output("y");
  Graph g = b.g;
  fold_shape_constants(g);
  REQUIRE(g.value_info.count("r"));
  const ValueInfo& r = g.value_info.at("r");
  REQUIRE(r.shape);
  REQUIRE(r.shape->size() == 2);
  CHECK_FALSE(r.shape->at(0).fixed());
  CHECK(r.shape->at(1).value == 5);
  CHECK(g.initializers.count("w1"));  // Shape(x)[2] folded; the batch product is still computed
  CHECK(std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "Mul"; }));
  Executor exec(g);
  CHECK(exec.run({{"x", iota_f32({2, 3, 5}, 1.f)}})[0].shape() == Shape{6, 5});
}
