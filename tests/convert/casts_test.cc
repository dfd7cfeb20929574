// apply_plan and remove_redundant_casts on hand-built graphs: Casts shared and named, types of
// outputs, graph inputs/outputs and initializers, FP32 slots, existing Casts, folding rules.
#include <doctest/doctest.h>

#include "convert/graph_build.h"
#include "convert/value_types.h"
#include "runtime/grad_type.h"

using namespace oat;
using namespace oat::convert;
using oat_test::casts;
using oat_test::find_node;
using oat_test::GraphBuild;
using oat_test::producer_of;

namespace {

ApplyReport convert_graph(Graph& g, ApplyOptions a = {}, PaintOptions p = {}) {
  const PrecisionPlan plan = paint(g, p);
  ApplyReport r = apply_plan(g, plan, a);
  CHECK(oat_test::topologically_sorted(g));
  return r;
}

DType out_type(const Graph& g, const std::string& name) {
  for (const auto& v : g.outputs)
    if (v.name == name) return v.dtype;
  return DType::Undefined;
}

// Two MatMuls read x; a Softmax reads the second one's output.
GraphBuild two_consumers() {
  GraphBuild b;
  b.input("x").weight("W1").weight("W2");
  b.node("MatMul", {"x", "W1"}, {"a"}, "mm1");
  b.node("MatMul", {"x", "W2"}, {"b"}, "mm2");
  b.node("Softmax", {"b"}, {"s"}, "softmax");
  b.node("Add", {"a", "s"}, {"y"}, "add");
  b.output("y");
  return b;
}

}  // namespace

TEST_CASE("one Cast per value and type, shared by all consumers, named after the value") {
  GraphBuild b = two_consumers();
  ApplyOptions a;
  a.keep_io_types = true;
  const ApplyReport r = convert_graph(b.g, a);
  const Node* cx = find_node(b.g, "x_to_fp16");
  REQUIRE(cx != nullptr);
  CHECK(cx->op_type == "Cast");
  CHECK(cx->attr_int("to", 0) == 10);
  CHECK(cx->outputs == std::vector<std::string>{"x_to_fp16"});
  CHECK(find_node(b.g, "mm1")->inputs[0] == "x_to_fp16");
  CHECK(find_node(b.g, "mm2")->inputs[0] == "x_to_fp16");
  // Weights stay fp32 masters with their own casts (convert_initializers is off).
  CHECK(b.g.initializers.at("W1").dtype() == DType::F32);
  CHECK(find_node(b.g, "mm1")->inputs[1] == "W1_to_fp16");
  // The deny node reads b in fp32; add is infer with an fp32 input, so a is cast up once.
  CHECK(find_node(b.g, "softmax")->inputs[0] == "b_to_fp32");
  CHECK(find_node(b.g, "add")->inputs[0] == "a_to_fp32");
  CHECK(r.casts_inserted == 5);  // x, W1, W2 to fp16; a, b to fp32
  CHECK(casts(b.g).size() == 5);
  CHECK(out_type(b.g, "y") == DType::F32);
}

TEST_CASE("a Cast name already taken gets a suffix") {
  GraphBuild b;
  b.input("x").weight("W");
  b.node("Identity", {"x"}, {"x_to_fp16"}, "x_to_fp16");  // takes the name
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Floor", {"x_to_fp16"}, {"f"}, "floor");
  b.node("Add", {"a", "f"}, {"y"}, "add");
  b.output("y");
  ApplyOptions a;
  a.keep_io_types = true;
  convert_graph(b.g, a);
  CHECK(find_node(b.g, "mm")->inputs[0] == "x_to_fp16_1");
  CHECK(producer_of(b.g, "x_to_fp16_1")->op_type == "Cast");
}

TEST_CASE(
    "graph inputs and outputs: typed low without keep_io_types, cast at the boundary with it") {
  GraphBuild b;
  b.input("x").weight("W");
  b.node("MatMul", {"x", "W"}, {"logits"}, "fc");
  b.output("logits");
  {
    Graph g = b.g;
    ApplyOptions a;
    a.keep_io_types = true;
    convert_graph(g, a);
    CHECK(g.inputs[0].dtype == DType::F32);
    CHECK(out_type(g, "logits") == DType::F32);
    const Node* back = producer_of(g, "logits");
    REQUIRE(back != nullptr);
    CHECK(back->op_type == "Cast");
    CHECK(back->inputs[0] == "logits_fp16");
    CHECK(back->name == "logits_fp16_to_fp32");
    CHECK(find_node(g, "fc")->outputs[0] == "logits_fp16");
  }
  {
    Graph g = b.g;
    convert_graph(g);
    CHECK(g.inputs[0].dtype == DType::F16);
    CHECK(out_type(g, "logits") == DType::F16);
    CHECK(find_node(g, "fc")->inputs[0] == "x");
    CHECK(casts(g).size() == 1);  // only W
  }
}

TEST_CASE("a graph input read in both precisions stays fp32") {
  GraphBuild b = two_consumers();
  b.node("Floor", {"x"}, {"f"}, "floor");
  b.output("f");
  convert_graph(b.g);
  CHECK(b.g.inputs[0].dtype == DType::F32);
  CHECK(find_node(b.g, "mm1")->inputs[0] == "x_to_fp16");
  CHECK(find_node(b.g, "floor")->inputs[0] == "x");
}

TEST_CASE("convert_initializers stores weights read only in low precision, clamping FP16's range") {
  GraphBuild b;
  b.input("x").weight("W", {4, 4}, 0.25f).weight("shared").weight("master");
  b.g.initializers.at("W").data<float>()[3] = 1e6f;
  b.g.initializers.at("W").data<float>()[5] = -7e4f;
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("MatMul", {"a", "master"}, {"m"}, "mm2");
  b.node("Add", {"m", "shared"}, {"s"}, "add");
  b.node("Softmax", {"s"}, {"y"}, "softmax");
  b.node("Floor", {"shared"}, {"f"}, "floor");
  b.output("y").output("f");
  ApplyOptions a;
  a.convert_initializers = true;
  a.keep_fp32_values = {"master"};
  const ApplyReport r = convert_graph(b.g, a);
  const Tensor& w = b.g.initializers.at("W");
  REQUIRE(w.dtype() == DType::F16);
  CHECK(w.item_as_double(0) == 0.25);
  CHECK(w.item_as_double(3) == 65504.0);
  CHECK(w.item_as_double(5) == -65504.0);
  CHECK(r.converted_initializers == std::vector<std::string>{"W"});
  CHECK(r.clamped == std::vector<std::string>{"W: 2 values beyond FP16's range clamped to ±65504"});
  CHECK(find_node(b.g, "mm")->inputs[1] == "W");
  // Kept: a value in keep_fp32_values, and one read in both precisions.
  CHECK(b.g.initializers.at("master").dtype() == DType::F32);
  CHECK(find_node(b.g, "mm2")->inputs[1] == "master_to_fp16");
  CHECK(b.g.initializers.at("shared").dtype() == DType::F32);
  CHECK(find_node(b.g, "floor")->inputs[0] == "shared");

  // BF16 has FP32's range: nothing to clamp.
  GraphBuild c;
  c.input("x").weight("W", {4, 4}, 1e6f);
  c.node("MatMul", {"x", "W"}, {"y"}, "mm");
  c.output("y");
  PaintOptions p;
  p.low = DType::BF16;
  const ApplyReport rb = convert_graph(c.g, a, p);
  CHECK(c.g.initializers.at("W").dtype() == DType::BF16);
  CHECK(rb.clamped.empty());
  CHECK(c.g.initializers.at("W").item_as_double(0) == 999424.0);  // 1e6 rounded to 8 bits
}

TEST_CASE("convert_initializers stores float Constant values read only in low precision") {
  GraphBuild b;
  b.input("x").weight("W");
  Tensor big(DType::F32, {1});
  big.data<float>()[0] = 1e5f;
  b.node("Constant", {}, {"c"}, "scale").attrs["value"] = oat_test::tensor_attr(big);
  b.node("Constant", {}, {"d"}, "shift").attrs["value"] = oat_test::tensor_attr(big);
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Mul", {"a", "c"}, {"m"}, "mul");  // low
  b.node("Floor", {"d"}, {"f"}, "floor");   // fp32
  b.node("Add", {"m", "d"}, {"y"}, "add");  // low: d is read in both types
  b.output("y").output("f");
  ApplyOptions a;
  a.convert_initializers = true;
  // The range rule off (by default Mul and Add, reading 1e5, would stay fp32: paint_test.cc).
  PaintOptions p;
  p.out_of_range_fp32 = false;
  const ApplyReport r = convert_graph(b.g, a, p);
  CHECK(r.converted_constants == std::vector<std::string>{"scale"});
  CHECK(r.clamped ==
        std::vector<std::string>{"scale: 1 values beyond FP16's range clamped to ±65504"});
  const Tensor& v = find_node(b.g, "scale")->attr("value")->t;
  CHECK(v.dtype() == DType::F16);
  CHECK(v.item_as_double(0) == 65504.0);
  CHECK(find_node(b.g, "mul")->inputs[1] == "c");
  CHECK(find_node(b.g, "shift")->attr("value")->t.dtype() == DType::F32);
  CHECK(find_node(b.g, "add")->inputs[1] == "d_to_fp16");
}

TEST_CASE("BatchNormalization keeps scale, bias, statistics and their outputs in fp32") {
  GraphBuild b;
  b.input("x", DType::F32, {1, 2, 2, 2}).weight("W1", {2, 2, 1, 1}).weight("W2", {2, 2, 1, 1});
  b.weight("scale", {2}).weight("bias", {2}).weight("mean", {2}, 0.0f).weight("var", {2}, 1.0f);
  b.node("Conv", {"x", "W1"}, {"c1"}, "conv1");
  Node& bn = b.node("BatchNormalization", {"c1", "scale", "bias", "mean", "var"},
                    {"bn", "running_mean", "running_var"}, "bn1");
  bn.opset = 15;
  bn.attrs["training_mode"] = oat_test::int_attr(1);
  b.node("Conv", {"bn", "W2"}, {"y"}, "conv2");
  b.output("y").output("running_mean").output("running_var");
  ApplyOptions a;
  a.convert_initializers = true;
  convert_graph(b.g, a);
  const Node* n = find_node(b.g, "bn1");
  CHECK(n->inputs == std::vector<std::string>{"c1", "scale", "bias", "mean", "var"});
  for (const char* v : {"scale", "bias", "mean", "var"})
    CHECK_MESSAGE(b.g.initializers.at(v).dtype() == DType::F32, v);
  CHECK(b.g.initializers.at("W1").dtype() == DType::F16);
  CHECK(out_type(b.g, "running_mean") == DType::F32);
  CHECK(out_type(b.g, "y") == DType::F16);
  CHECK(casts(b.g).size() == 0);  // x became an fp16 input, everything else is in place
}

TEST_CASE("BatchNormalizationGrad: dY and X low, scale and statistics fp32, dScale/dBias fp32") {
  GraphBuild b;
  b.input("x", DType::F32, {1, 2, 2, 2}).input("dy", DType::F32, {1, 2, 2, 2});
  b.weight("W", {2, 2, 1, 1})
      .weight("scale", {2})
      .weight("mean", {2}, 0.0f)
      .weight("var", {2}, 1.0f);
  b.node("Conv", {"x", "W"}, {"c"}, "conv");
  b.node("BatchNormalization", {"c", "scale", "scale", "mean", "var"}, {"y"}, "bn");
  b.node("BatchNormalizationGrad", {"dy", "c", "scale", "mean", "var"}, {"dx", "dscale", "dbias"},
         "bn_grad", kInternalDomain);
  b.output("y").output("dx").output("dscale").output("dbias");
  PaintOptions p;
  p.low_nodes = {"bn"};
  p.follow = {{"bn_grad", "bn"}};
  ApplyOptions a;
  a.keep_io_types = true;
  convert_graph(b.g, a, p);
  const Node* g = find_node(b.g, "bn_grad");
  CHECK(g->inputs == std::vector<std::string>{"dy_to_fp16", "c", "scale", "mean", "var"});
  CHECK(g->outputs == std::vector<std::string>{"dx_fp16", "dscale", "dbias"});
  CHECK(producer_of(b.g, "dscale") == g);  // already fp32: no cast back
  CHECK(producer_of(b.g, "dx")->op_type == "Cast");
}

TEST_CASE("weight-gradient ops with grad_type = 1: dW/dB are fp32 slots, no Cast after them") {
  for (bool fp32_grads : {false, true}) {
    CAPTURE(fp32_grads);
    GraphBuild b;
    b.input("x", DType::F32, {2, 4}).input("dy", DType::F32, {2, 4}).weight("W").weight("B", {4});
    b.node("Gemm", {"x", "W", "B"}, {"y"}, "fc");
    Node& g = b.node("GemmGrad", {"dy", "x", "W", "B"}, {"dx", "dW", "dB"}, "fc_grad",
                     kInternalDomain);
    if (fp32_grads) set_weight_grads_fp32(g);
    b.node("Sum", {"dW", "dW"}, {"dW_sum"}, "acc");  // an FP32 consumer, as the training graph's
    b.output("y").output("dx").output("dW_sum").output("dB");
    PaintOptions p;
    p.follow = {{"fc_grad", "fc"}};
    p.fp32_nodes = {"acc"};
    ApplyOptions a;
    a.keep_io_types = true;
    convert_graph(b.g, a, p);
    const ValueTypes types = infer_value_types(b.g);
    const Node* n = find_node(b.g, "fc_grad");
    CHECK(n->inputs == std::vector<std::string>{"dy_to_fp16", "x_to_fp16", "W_to_fp16", "B_to_fp16"});
    CHECK(types.at(n->outputs[0]) == DType::F16);  // dX: low either way
    if (fp32_grads) {
      CHECK(n->outputs == std::vector<std::string>{"dx_fp16", "dW", "dB"});
      CHECK(types.at("dW") == DType::F32);
      CHECK(find_node(b.g, "acc")->inputs == std::vector<std::string>{"dW", "dW"});
      CHECK(producer_of(b.g, "dB") == n);  // already fp32: no cast back
      CHECK(casts(b.g).size() == 6);       // dy, x, W, B to fp16; y and dx back to fp32
    } else {
      CHECK(types.at(n->outputs[1]) == DType::F16);
      CHECK(find_node(b.g, "acc")->inputs == std::vector<std::string>{"dW_to_fp32", "dW_to_fp32"});
      CHECK(producer_of(b.g, "dB")->op_type == "Cast");
    }
  }
}

TEST_CASE("int paths are never cast and nodes with subgraphs get their original types") {
  GraphBuild b;
  b.input("x").input("cond", DType::Bool, {}).weight("W");
  b.init("shape", Tensor::from_vector<int64_t>({2}, {4, 2}));
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Reshape", {"a", "shape"}, {"r"}, "reshape");
  auto body = std::make_shared<Graph>();
  body->name = "branch";
  Node id;
  id.name = "inner";
  id.op_type = "Identity";
  id.op = OpId::Identity;
  id.inputs = {"a"};  // read from the outer scope
  id.outputs = {"inner_out"};
  body->nodes.push_back(id);
  body->outputs.push_back(ValueInfo{"inner_out", DType::F32, std::nullopt});
  Attribute ga;
  ga.kind = Attribute::Kind::Graph;
  ga.g = body;
  Node& iff = b.node("If", {"cond"}, {"y"}, "if");
  iff.attrs["then_branch"] = ga;
  iff.attrs["else_branch"] = ga;
  b.output("r").output("y");
  convert_graph(b.g);
  CHECK(find_node(b.g, "reshape")->inputs[1] == "shape");
  CHECK(b.g.initializers.at("shape").dtype() == DType::I64);
  // The body reads 'a' by name in fp32: mm writes a_fp16 and a Cast restores 'a'.
  CHECK(find_node(b.g, "mm")->outputs[0] == "a_fp16");
  CHECK(producer_of(b.g, "a")->op_type == "Cast");
  CHECK(find_node(b.g, "reshape")->inputs[0] == "a_fp16");
  CHECK(find_node(b.g, "if")->inputs[0] == "cond");
}

TEST_CASE("existing Casts stay correct: widening casts fold, others get a cast after them") {
  GraphBuild b;
  b.input("h", DType::F16).input("i", DType::I64).weight("W");
  b.node("Cast", {"h"}, {"hf"}, "h_up").attrs["to"] = oat_test::int_attr(1);
  b.node("MatMul", {"hf", "W"}, {"a"}, "mm1");
  b.node("Cast", {"i"}, {"if"}, "i_float").attrs["to"] = oat_test::int_attr(1);
  b.node("MatMul", {"if", "W"}, {"c"}, "mm2");
  b.node("Add", {"a", "c"}, {"y"}, "add");
  b.output("y");
  ApplyOptions a;
  a.convert_initializers = true;
  const ApplyReport r = convert_graph(b.g, a);
  // f16 -> f32 -> f16 is the identity: mm1 reads h itself and both casts are gone.
  CHECK(find_node(b.g, "mm1")->inputs[0] == "h");
  CHECK(find_node(b.g, "h_up") == nullptr);
  // int64 -> f32 -> f16 rounds twice for large ints: both casts stay.
  CHECK(find_node(b.g, "i_float") != nullptr);
  CHECK(find_node(b.g, "mm2")->inputs[0] == "if_to_fp16");
  CHECK(r.casts_removed == 2);
}

TEST_CASE("remove_redundant_casts folds own-type and lossless round trips, never a lossy one") {
  auto cast = [](GraphBuild& b, const std::string& in, const std::string& out, int to) {
    b.node("Cast", {in}, {out}, out).attrs["to"] = oat_test::int_attr(to);
  };
  SUBCASE("f32 -> f16 -> f32 changes values and is kept") {
    GraphBuild b;
    b.input("x");
    cast(b, "x", "h", 10);
    cast(b, "h", "y", 1);
    b.output("y");
    CHECK(remove_redundant_casts(b.g) == 0);
    CHECK(b.g.nodes.size() == 2);
    CHECK(b.g.nodes[1].inputs[0] == "h");
  }
  SUBCASE("f16 -> f32 -> f16 is folded, the graph output keeps its name") {
    GraphBuild b;
    b.input("x", DType::F16);
    b.node("Relu", {"x"}, {"r"}, "relu");
    cast(b, "r", "up", 1);
    cast(b, "up", "y", 10);
    b.output("y", DType::F16);
    CHECK(remove_redundant_casts(b.g) == 2);
    REQUIRE(b.g.nodes.size() == 1);
    CHECK(b.g.nodes[0].outputs[0] == "y");
  }
  SUBCASE("a Cast to the value's own type is folded into its readers") {
    GraphBuild b;
    b.input("x");
    cast(b, "x", "same", 1);
    b.node("Relu", {"same"}, {"y"}, "relu");
    b.output("y");
    CHECK(remove_redundant_casts(b.g) == 1);
    REQUIRE(b.g.nodes.size() == 1);
    CHECK(b.g.nodes[0].inputs[0] == "x");
  }
  SUBCASE("an identity Cast writing a graph output from a graph input stays") {
    GraphBuild b;
    b.input("x");
    cast(b, "x", "y", 1);
    b.output("y");
    CHECK(remove_redundant_casts(b.g) == 0);
    CHECK(b.g.nodes.size() == 1);
  }
  SUBCASE("bf16 -> f32 -> f16 reads the bf16 value directly") {
    GraphBuild b;
    b.input("x", DType::BF16);
    cast(b, "x", "up", 1);
    cast(b, "up", "h", 10);
    b.node("Relu", {"h"}, {"y"}, "relu");
    b.output("y", DType::F16);
    CHECK(remove_redundant_casts(b.g) == 1);
    REQUIRE(b.g.nodes.size() == 2);
    CHECK(b.g.nodes[0].inputs[0] == "x");
    CHECK(b.g.nodes[0].attr_int("to", 0) == 10);
  }
}

TEST_CASE("apply_plan refuses a plan for another graph") {
  GraphBuild b = two_consumers();
  const PrecisionPlan plan = paint(b.g, {});
  GraphBuild other;
  other.input("x");
  other.node("Relu", {"x"}, {"y"}, "relu");
  other.output("y");
  CHECK_THROWS_WITH_AS(apply_plan(other.g, plan),
                       "apply_plan: the plan has 4 nodes, graph 'test' has 1", Error);
}
