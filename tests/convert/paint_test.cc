// The painting pass on hand-built graphs: one case per rule of TensorFlow's algorithm
// (convert/paint.cc), the pins, `follow`, integer paths and the printed plan.
#include <doctest/doctest.h>

#include <cmath>

#include "convert/graph_build.h"

using namespace oat;
using namespace oat::convert;
using oat_test::entry;
using oat_test::GraphBuild;

namespace {

PrecisionPlan paint_default(const Graph& g, DType low = DType::F16) {
  PaintOptions o;
  o.low = low;
  return paint(g, o);
}

}  // namespace

TEST_CASE("allow nodes are low precision, ops in no list stay fp32") {
  GraphBuild b;
  b.input("x").weight("W");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Floor", {"a"}, {"y"}, "floor");
  b.output("y");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "mm").dtype == DType::F16);
  CHECK(entry(p, "mm").reason == "allow list");
  CHECK(entry(p, "floor").dtype == DType::F32);
  CHECK(entry(p, "floor").reason == "not in any list");
  CHECK(p.count(DType::F16) == 1);
  CHECK(p.count(DType::F32) == 1);

  const PrecisionPlan bf = paint_default(b.g, DType::BF16);
  CHECK(bf.low == DType::BF16);
  CHECK(entry(bf, "mm").dtype == DType::BF16);
}

TEST_CASE("deny spreads forward through infer and clear nodes until an allow node") {
  GraphBuild b;
  b.input("x").weight("W").weight("B");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm1");
  b.node("Softmax", {"a"}, {"s"}, "softmax");
  b.node("Transpose", {"s"}, {"t"}, "transpose");  // clear
  b.node("Add", {"t", "B"}, {"u"}, "add");         // infer
  b.node("MatMul", {"u", "W"}, {"v"}, "mm2");      // allow: deny stops here
  b.node("Relu", {"v"}, {"y"}, "relu");
  b.output("y");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "mm1").dtype == DType::F16);
  CHECK(entry(p, "softmax").dtype == DType::F32);
  CHECK(entry(p, "softmax").reason == "deny list");
  CHECK(entry(p, "transpose").dtype == DType::F32);
  CHECK(entry(p, "transpose").reason == "follows deny node 'softmax'");
  CHECK(entry(p, "add").dtype == DType::F32);
  CHECK(entry(p, "add").reason == "follows deny node 'softmax'");
  CHECK(entry(p, "mm2").dtype == DType::F16);
  CHECK(entry(p, "relu").dtype == DType::F16);
  CHECK(entry(p, "relu").reason == "joins fp16 neighbour 'mm2'");
}

TEST_CASE("infer and clear nodes between allow nodes become low precision") {
  GraphBuild b;
  b.input("x", DType::F32, {1, 1, 4, 4}).weight("W1", {2, 1, 1, 1}).weight("W2", {2, 2, 1, 1});
  b.weight("scale", {2}).weight("bias", {2}).weight("mean", {2}, 0.0f).weight("var", {2}, 1.0f);
  b.node("Conv", {"x", "W1"}, {"c1"}, "conv1");
  b.node("BatchNormalization", {"c1", "scale", "bias", "mean", "var"}, {"bn"}, "bn1");
  b.node("Relu", {"bn"}, {"r"}, "relu1");
  b.node("Conv", {"r", "W2"}, {"c2"}, "conv2");
  b.node("Add", {"c2", "r"}, {"y"}, "residual");
  b.output("y");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "bn1").dtype == DType::F16);
  CHECK(entry(p, "bn1").reason == "between fp16 nodes 'conv1' and 'conv2'");
  CHECK(entry(p, "relu1").dtype == DType::F16);
  CHECK(entry(p, "relu1").reason == "between fp16 nodes 'conv1' and 'conv2'");
  // After the last allow node: an infer node whose inputs are all low is low.
  CHECK(entry(p, "residual").dtype == DType::F16);
  CHECK(entry(p, "residual").reason == "infer: inputs fp16 from 'conv2', 'relu1'");
}

TEST_CASE("infer nodes take the widest of their inputs; initializers are neutral") {
  GraphBuild b;
  b.input("x").input("z").weight("W").weight("bias");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Add", {"a", "bias"}, {"ab"}, "add_bias");  // low input + initializer -> low
  b.node("Add", {"ab", "z"}, {"az"}, "add_input");   // low input + fp32 graph input -> fp32
  b.node("Floor", {"x"}, {"f"}, "floor");
  b.node("Mul", {"ab", "f"}, {"m"}, "mul");  // low + fp32 node -> fp32
  b.output("az").output("m");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "add_bias").dtype == DType::F16);
  CHECK(entry(p, "add_bias").reason == "infer: inputs fp16 from 'mm'");
  CHECK(entry(p, "add_input").dtype == DType::F32);
  CHECK(entry(p, "add_input").reason == "infer: input fp32 from graph input 'z'");
  CHECK(entry(p, "mul").dtype == DType::F32);
  CHECK(entry(p, "mul").reason == "infer: input fp32 from 'floor'");
}

TEST_CASE("clear nodes join a low neighbour, producer or consumer") {
  GraphBuild b;
  b.input("x").weight("W");
  b.node("Floor", {"x"}, {"f"}, "floor");     // fp32, not in any list
  b.node("Identity", {"f"}, {"i"}, "ident");  // clear: joins its consumer
  b.node("MatMul", {"i", "W"}, {"a"}, "mm");
  b.node("Transpose", {"a"}, {"t"}, "transpose");  // clear: joins its producer
  b.node("Floor", {"f"}, {"f2"}, "floor2");
  b.node("Identity", {"f2"}, {"j"}, "ident2");  // clear, no low neighbour
  b.output("t").output("j");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "ident").dtype == DType::F16);
  CHECK(entry(p, "ident").reason == "joins fp16 neighbour 'mm'");
  CHECK(entry(p, "transpose").dtype == DType::F16);
  CHECK(entry(p, "transpose").reason == "joins fp16 neighbour 'mm'");
  CHECK(entry(p, "ident2").dtype == DType::F32);
  CHECK(entry(p, "ident2").reason == "clear: no fp16 neighbour");
}

TEST_CASE("nodes reading only initializers that feed an allow node go low") {
  GraphBuild b;
  b.input("x").weight("W").weight("s", {1});
  b.node("Transpose", {"W"}, {"wt"}, "transpose_w");
  b.node("Mul", {"wt", "s"}, {"ws"}, "scale_w");  // infer, constant-only
  b.node("MatMul", {"x", "ws"}, {"y"}, "mm");
  b.output("y");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "transpose_w").dtype == DType::F16);
  CHECK(entry(p, "transpose_w").reason == "feeds fp16 node 'mm' from initializers/inputs");
  CHECK(entry(p, "scale_w").dtype == DType::F16);
}

TEST_CASE("a node with a low input is between allow nodes, whatever order its inputs come in") {
  GraphBuild b;
  b.input("x").weight("W").weight("bias", {4});
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Identity", {"bias"}, {"b"}, "bias_copy");  // constant-only, listed first below
  b.node("Add", {"b", "a"}, {"s"}, "add");
  b.node("MatMul", {"s", "W"}, {"t"}, "mm2");
  b.node("Floor", {"x"}, {"f"}, "floor");
  b.node("Add", {"b", "f"}, {"u"}, "add_fp32");  // a constant and an fp32 node: not a source
  b.node("MatMul", {"u", "W"}, {"v"}, "mm3");
  b.output("t").output("v");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "add").reason == "between fp16 nodes 'mm' and 'mm2'");
  CHECK(entry(p, "add_fp32").dtype == DType::F32);
  CHECK(entry(p, "add_fp32").reason == "infer: input fp32 from 'floor'");
}

TEST_CASE("pins win over the lists; unknown pinned names are errors") {
  GraphBuild b;
  b.input("x").weight("W");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Softmax", {"a"}, {"s"}, "softmax");
  b.node("Relu", {"s"}, {"y"}, "relu");
  b.output("y");
  PaintOptions o;
  o.fp32_nodes = {"mm"};
  o.low_nodes = {"softmax"};
  const PrecisionPlan p = paint(b.g, o);
  CHECK(entry(p, "mm").dtype == DType::F32);
  CHECK(entry(p, "mm").reason == "pinned by --fp32-nodes");
  CHECK(entry(p, "softmax").dtype == DType::F16);
  CHECK(entry(p, "softmax").reason == "pinned by --fp16-nodes");
  CHECK(entry(p, "relu").dtype == DType::F16);  // a pinned deny node does not spread deny
  o.low = DType::BF16;
  CHECK(entry(paint(b.g, o), "softmax").reason == "pinned by --fp16-nodes");

  PaintOptions bad;
  bad.fp32_nodes = {"nope"};
  CHECK_THROWS_WITH_AS(paint(b.g, bad), "--fp32-nodes: no node named 'nope' in graph 'test'",
                       Error);
  PaintOptions both;
  both.fp32_nodes = {"mm"};
  both.low_nodes = {"mm"};
  CHECK_THROWS_WITH_AS(paint(b.g, both),
                       "node 'mm' is pinned both by --fp32-nodes and --fp16-nodes", Error);
  PaintOptions f64;
  f64.low = DType::F64;
  CHECK_THROWS_AS(paint(b.g, f64), Error);
}

TEST_CASE("op-list overrides change the painting") {
  GraphBuild b;
  b.input("x").weight("W");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Relu", {"a"}, {"y"}, "relu");
  b.output("y");
  PaintOptions o;
  o.lists.block({"MatMul"});
  const PrecisionPlan p = paint(b.g, o);
  CHECK(entry(p, "mm").dtype == DType::F32);
  CHECK(entry(p, "mm").reason == "deny list");
  CHECK(entry(p, "relu").dtype == DType::F32);
  CHECK(entry(p, "relu").reason == "follows deny node 'mm'");
}

TEST_CASE("follow copies the followed node's final precision; unfollowed grad ops stay fp32") {
  GraphBuild b;
  b.input("x").weight("W").input("dy");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Relu", {"a"}, {"r"}, "relu");
  b.node("Softmax", {"r"}, {"y"}, "softmax");
  b.node("ReluGrad", {"dy", "r"}, {"da"}, "relu_grad", kInternalDomain);
  b.node("MatMulGrad", {"da", "x", "W"}, {"dx", "dW"}, "mm_grad", kInternalDomain);
  b.node("SoftmaxGrad", {"dy", "y"}, {"ds"}, "softmax_grad", kInternalDomain);
  b.node("ReluGrad", {"dy", "r"}, {"lonely"}, "unfollowed", kInternalDomain);
  b.node("Add", {"dx", "dx"}, {"sum"}, "grad_sum");  // infer, fed by a follower
  b.output("y").output("dW").output("ds").output("lonely").output("sum");
  PaintOptions o;
  o.follow = {{"relu_grad", "relu"}, {"mm_grad", "mm"}, {"softmax_grad", "softmax"}};
  const PrecisionPlan p = paint(b.g, o);
  CHECK(entry(p, "relu").dtype == DType::F16);
  CHECK(entry(p, "relu_grad").dtype == DType::F16);
  CHECK(entry(p, "relu_grad").reason == "follows forward node 'relu'");
  CHECK(entry(p, "mm_grad").dtype == DType::F16);
  CHECK(entry(p, "softmax_grad").dtype == DType::F32);
  CHECK(entry(p, "softmax_grad").reason == "follows forward node 'softmax'");
  CHECK(entry(p, "unfollowed").dtype == DType::F32);
  CHECK(entry(p, "unfollowed").reason == "not in any list");
  CHECK(entry(p, "grad_sum").dtype == DType::F16);
  CHECK(entry(p, "grad_sum").reason == "infer: inputs fp16 from 'mm_grad', 'mm_grad'");

  PaintOptions missing;
  missing.follow = {{"relu_grad", "no_such_node"}};
  CHECK_THROWS_WITH_AS(paint(b.g, missing), "follow: no node named 'no_such_node' in graph 'test'",
                       Error);
  PaintOptions cycle;
  cycle.follow = {{"relu_grad", "mm_grad"}, {"mm_grad", "relu_grad"}};
  CHECK_THROWS_AS(paint(b.g, cycle), Error);
}

TEST_CASE("integer shape paths are not painted and do not carry deny") {
  GraphBuild b;
  b.input("x").weight("W").init("idx", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("minus1", Tensor::from_vector<int64_t>({1}, {-1}));
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Softmax", {"a"}, {"s"}, "softmax");
  b.node("Shape", {"s"}, {"shape"}, "shape");
  b.node("Gather", {"shape", "idx"}, {"n"}, "gather");
  b.node("Concat", {"n", "minus1"}, {"target"}, "concat").attrs["axis"] = oat_test::int_attr(0);
  b.node("Reshape", {"a", "target"}, {"y"}, "reshape");
  b.output("y").output("s");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(!entry(p, "gather").carries_floats);
  CHECK(!entry(p, "concat").carries_floats);
  CHECK(entry(p, "shape").reason == "reads only the shape: no cast");
  // Reshape reads the deny path's integers only: its data comes from the low MatMul.
  CHECK(entry(p, "reshape").dtype == DType::F16);
  CHECK(p.count_without_floats() == 2);
  CHECK(p.count(DType::F16) + p.count(DType::F32) + p.count_without_floats() == p.nodes.size());
}

TEST_CASE("nodes with subgraphs stay fp32; Cast nodes keep the model's type") {
  GraphBuild b;
  b.input("x").input("cond", DType::Bool, {}).weight("W");
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  auto body = std::make_shared<Graph>();
  body->name = "then";
  body->outputs.push_back(ValueInfo{"a", DType::F32, std::nullopt});
  Attribute ga;
  ga.kind = Attribute::Kind::Graph;
  ga.g = body;
  Node& iff = b.node("If", {"cond"}, {"y"}, "if");
  iff.attrs["then_branch"] = ga;
  iff.attrs["else_branch"] = ga;
  b.node("Cast", {"a"}, {"h"}, "to_half").attrs["to"] = oat_test::int_attr(10);
  b.output("y").output("h", DType::F16);
  PaintOptions o;
  o.low_nodes = {"if"};
  const PrecisionPlan p = paint(b.g, o);
  CHECK(entry(p, "if").dtype == DType::F32);
  CHECK(entry(p, "if").reason == "has a subgraph: kept fp32, body untouched");
  CHECK(entry(p, "to_half").dtype == DType::F16);
  CHECK(entry(p, "to_half").reason == "Cast to fp16: its output type is the model's");
}

TEST_CASE("the printed plan lists node, op, precision, reason and totals") {
  GraphBuild b;
  b.input("x").weight("W").init("idx", Tensor::from_vector<int64_t>({1}, {0}));
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Softmax", {"a"}, {"y"}, "softmax");
  b.node("Gather", {"idx", "idx"}, {"k"}, "");
  b.output("y").output("k", DType::I64);
  const std::string text = paint_default(b.g).to_string();
  CHECK(text ==
        "node     op       precision  reason\n"
        "mm       MatMul   fp16       allow list\n"
        "softmax  Softmax  fp32       deny list\n"
        "#2       Gather   -          no fp32/fp16/bf16 values (integer or float64 only)\n"
        "totals: 3 nodes, 1 fp16, 1 fp32, 1 without float values\n");
}

// ConvNeXt's block: a MatMul branch scaled by a "layer scale" parameter (torchvision starts it at
// 1e-6, below FP16's smallest normal 2^-14 = 6.1e-5) added to the residual stream, then the next
// block's MatMul.
namespace {
GraphBuild layer_scale_block(float scale) {
  GraphBuild b;
  b.input("x").weight("W").weight("ls", {4}, scale);
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Mul", {"a", "ls"}, {"m"}, "scale");
  b.node("Add", {"m", "x"}, {"r"}, "residual");
  b.node("Transpose", {"r"}, {"t"}, "transpose");
  b.node("MatMul", {"t", "W"}, {"y"}, "mm2");
  b.output("y");
  return b;
}
}  // namespace

TEST_CASE("fp16: an infer node reading an initializer below fp16's normal range stays fp32") {
  const GraphBuild b = layer_scale_block(1e-6f);
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "mm").dtype == DType::F16);
  CHECK(entry(p, "scale").dtype == DType::F32);
  CHECK(entry(p, "scale").reason ==
        "initializer 'ls': max |x| = 1e-06 is below float16's smallest normal 6.1e-05");
  // FP32 spreads forward like deny (the widest input wins): the residual Add would otherwise lie
  // between the fp16 MatMuls and be painted fp16.
  CHECK(entry(p, "residual").dtype == DType::F32);
  CHECK(entry(p, "residual").reason ==
        "follows fp32 node 'scale' (initializer 'ls' out of float16's range)");
  CHECK(entry(p, "transpose").dtype == DType::F32);
  CHECK(entry(p, "mm2").dtype == DType::F16);

  // A normal-magnitude scale: nothing changes.
  const PrecisionPlan normal = paint_default(layer_scale_block(0.1f).g);
  CHECK(entry(normal, "scale").dtype == DType::F16);
  CHECK(entry(normal, "residual").dtype == DType::F16);
  CHECK(entry(normal, "residual").reason == "between fp16 nodes 'mm' and 'mm2'");
  // Exactly 2^-14 is a normal FP16 number.
  CHECK(entry(paint_default(layer_scale_block(6.103515625e-05f).g), "scale").dtype == DType::F16);

  // BF16 has FP32's exponent range: the rule does not apply.
  const PrecisionPlan bf = paint_default(b.g, DType::BF16);
  CHECK(entry(bf, "scale").dtype == DType::BF16);
  CHECK(entry(bf, "residual").dtype == DType::BF16);

  // Turned off (--no-out-of-range-fp32): the old painting.
  PaintOptions off;
  off.out_of_range_fp32 = false;
  const PrecisionPlan o = paint(b.g, off);
  CHECK(entry(o, "scale").dtype == DType::F16);
  CHECK(entry(o, "scale").reason == "between fp16 nodes 'mm' and 'mm2'");
  CHECK(entry(o, "residual").dtype == DType::F16);

  // Pins still win.
  PaintOptions pin;
  pin.low_nodes = {"scale"};
  CHECK(entry(paint(b.g, pin), "scale").dtype == DType::F16);
}

TEST_CASE("fp16 range rule: through Identity, Constants, Div, Add, zeros and infinities") {
  GraphBuild b;
  b.input("x").weight("W").weight("tiny", {4}, 2e-5f).weight("zero", {4}, 0.0f);
  b.weight("huge", {4}, 1.0f).weight("mask", {4}, 0.0f);
  b.g.initializers.at("huge").data<float>()[2] = -1e5f;
  b.g.initializers.at("mask").data<float>()[1] = -INFINITY;  // -inf is an FP16 value
  Tensor c(DType::F32, {1});
  c.data<float>()[0] = 1e-7f;
  b.node("Constant", {}, {"c"}, "eps").attrs["value"] = oat_test::tensor_attr(c);
  b.node("MatMul", {"x", "W"}, {"a"}, "mm");
  b.node("Identity", {"tiny"}, {"tiny_copy"}, "copy");
  b.node("Mul", {"a", "tiny_copy"}, {"m1"}, "via_identity");
  b.node("Div", {"c", "a"}, {"m2"}, "via_constant");
  b.node("Add", {"a", "huge"}, {"m3"}, "huge_add");
  b.node("Mul", {"a", "zero"}, {"m4"}, "zero_mul");
  b.node("Add", {"a", "mask"}, {"m5"}, "mask_add");
  b.node("Add", {"a", "tiny"}, {"m6"}, "tiny_add");
  b.output("m1").output("m2").output("m3").output("m4").output("m5").output("m6");
  const PrecisionPlan p = paint_default(b.g);
  CHECK(entry(p, "via_identity").dtype == DType::F32);
  CHECK(entry(p, "via_identity").reason ==
        "initializer 'tiny' through 'copy': max |x| = 2e-05 is below float16's smallest normal "
        "6.1e-05");
  CHECK(entry(p, "copy").dtype == DType::F32);
  CHECK(entry(p, "via_constant").dtype == DType::F32);
  CHECK(entry(p, "via_constant").reason ==
        "constant 'eps': max |x| = 1e-07 is below float16's smallest normal 6.1e-05");
  // Beyond 65504 counts for every infer op.
  CHECK(entry(p, "huge_add").dtype == DType::F32);
  CHECK(entry(p, "huge_add").reason ==
        "initializer 'huge': max |x| = 1e+05 is beyond float16's max 65504");
  // All zeros and infinities are exact in FP16.
  CHECK(entry(p, "zero_mul").dtype == DType::F16);
  CHECK(entry(p, "mask_add").dtype == DType::F16);
  // A tiny addend's FP16 error (<= 2^-25) is no larger than the rounding of the sum: Add stays
  // low (ViT's MLP biases start at N(0, 1e-6)).
  CHECK(entry(p, "tiny_add").dtype == DType::F16);
  CHECK(entry(p, "tiny_add").reason == "infer: inputs fp16 from 'mm'");
}
