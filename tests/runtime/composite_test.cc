// Composite ops (runtime/composite.h): the lowering pass itself, with a test-only composite
// "OatTestAxpb" (Y = X·a + b, a and b float attributes) registered here. Checks the names and
// order of the expansion, that consumers keep reading the composite's outputs, that the Executor
// runs a graph holding a composite, that errors name the composite, and that the painter paints
// an expansion by its composite's op list and pins.
#include <doctest/doctest.h>

#include <algorithm>

#include "convert/precision.h"
#include "runtime/composite.h"
#include "runtime/executor.h"

using namespace oat;

namespace {

// Y = X·a + b: a Mul by a constant scalar of X's type, then an Add (b = 13 is refused, to test
// that errors name the composite).
void expand_axpb(Expansion& e) {
  const float a = e.node().attr_float("a", 1.0f);
  const float b = e.node().attr_float("b", 0.0f);
  if (b == 13.0f) e.fail("b = 13 is unlucky");
  const DType t = e.dtype(e.input(0)) == DType::Undefined ? DType::F32 : e.dtype(e.input(0));
  std::string ca = e.constant_tensor(cast_tensor(Tensor::scalar<float>(a), t), "a");
  std::string cb = e.constant_tensor(cast_tensor(Tensor::scalar<float>(b), t), "b");
  std::string ax = e.add1("Mul", {e.input(0), ca}, "ax");
  e.set_info(ax, t);
  e.add_to("Add", {ax, cb}, {e.output(0)}, "axpb");
}

const bool registered = (register_composite("OatTestAxpb", expand_axpb), true);

Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
          std::vector<std::string> out) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

Attribute f_attr(float v) { return float_attribute(v); }

// X -> Relu -> OatTestAxpb(a=2, b=1) "lin" -> Neg -> Y
Graph model(float b = 1.0f, const std::string& composite_name = "lin") {
  Graph g;
  g.name = "axpb";
  g.opsets[""] = 17;
  ValueInfo x;
  x.name = "X";
  x.dtype = DType::F32;
  x.shape = std::vector<Dim>{Dim{2, ""}, Dim{3, ""}};
  g.inputs.push_back(x);
  ValueInfo y = x;
  y.name = "Y";
  g.outputs.push_back(y);
  g.nodes.push_back(node("relu", "Relu", {"X"}, {"r"}));
  Node c = node(composite_name, "OatTestAxpb", {"r"}, {"l"});
  c.attrs["a"] = f_attr(2.0f);
  c.attrs["b"] = f_attr(b);
  g.nodes.push_back(c);
  g.nodes.push_back(node("neg", "Neg", {"l"}, {"Y"}));
  return g;
}

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> r;
  for (const Node& n : g.nodes) r.push_back(n.name);
  return r;
}

}  // namespace

TEST_CASE("composite: lowering replaces the node in place with its named parts") {
  REQUIRE(registered);
  Graph g = model();
  CHECK(has_composites(g));
  CHECK(is_composite(g.nodes[1]));
  CHECK_FALSE(is_composite(g.nodes[0]));
  Node other_domain = g.nodes[1];
  other_domain.domain = "com.example";
  CHECK_FALSE(is_composite(other_domain));  // keyed by domain: com.example.<type> is not registered

  std::map<std::string, CompositeOrigin> parts;
  lower_composites(g, &parts);
  CHECK_FALSE(has_composites(g));
  CHECK(names(g) == std::vector<std::string>{"relu", "lin/ax", "lin/axpb", "neg"});
  CHECK(g.nodes[1].op == OpId::Mul);
  CHECK(g.nodes[1].inputs[0] == "r");
  CHECK(g.nodes[2].outputs == std::vector<std::string>{"l"});  // the composite's output name
  CHECK(g.nodes[3].inputs[0] == "l");
  CHECK(g.initializers.count("lin/a") == 1);
  CHECK(g.value_info.at("lin/ax").dtype == DType::F32);
  REQUIRE(parts.size() == 2);
  CHECK(parts.at("lin/ax").op_type == "OatTestAxpb");
  CHECK(parts.at("lin/axpb").name == "lin");
}

TEST_CASE("composite: fresh names never collide with the graph's, and unnamed nodes get one") {
  Graph g = model(1.0f, "");
  g.initializers["OatTestAxpb#1/a"] = Tensor::scalar<float>(0.0f);  // already taken
  lower_composites(g);
  CHECK(names(g) == std::vector<std::string>{"relu", "OatTestAxpb#1/ax", "OatTestAxpb#1/axpb", "neg"});
  CHECK(g.nodes[1].inputs[1] == "OatTestAxpb#1/a_1");
  CHECK(g.initializers.at("OatTestAxpb#1/a").item_as_double(0) == 0.0);  // untouched
}

TEST_CASE("composite: the Executor runs a graph holding a composite, the caller's graph unchanged") {
  const Graph g = model();
  Executor ex(g);
  CHECK(g.nodes.size() == 3);  // the executor lowered its own copy
  CHECK(ex.graph().nodes.size() == 4);
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1, 0, 1, 2, 3, -4});
  auto y = ex.run({{"X", x}});
  // Y = -(2·relu(x) + 1)
  const std::vector<double> want = {-1, -1, -3, -5, -7, -1};
  for (int i = 0; i < 6; ++i) CHECK(y[0].item_as_double(i) == want[i]);
  CHECK(unsupported_nodes(g, Device::CPU, default_registry()).empty());
}

TEST_CASE("composite: an expansion's error names the composite node") {
  Graph g = model(13.0f);
  try {
    lower_composites(g);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "node 'lin' (OatTestAxpb, opset 17): b = 13 is unlucky");
  }
}

TEST_CASE("composite: the painter paints an expansion by its composite's list and pins") {
  Graph g = model();
  g.nodes.push_back(node("tail", "Tanh", {"Y"}, {"Z"}));  // infer, after the expansion
  g.outputs[0].name = "Z";
  std::map<std::string, CompositeOrigin> parts;
  lower_composites(g, &parts);
  convert::PaintOptions po;
  for (const auto& [p, c] : parts) po.part_of[p] = {c.op_type, c.name};

  po.lists.allow.insert("OatTestAxpb");
  convert::PrecisionPlan plan = convert::paint(g, po);
  CHECK(plan.find("lin/ax")->dtype == DType::F16);
  CHECK(plan.find("lin/axpb")->dtype == DType::F16);
  CHECK(plan.find("lin/ax")->reason == "allow list (OatTestAxpb 'lin')");
  convert::PaintOptions alone = po;
  alone.part_of.clear();  // without the map, Mul and Add are infer nodes with no low neighbour
  CHECK(convert::paint(g, alone).find("lin/ax")->dtype == DType::F32);

  po.fp32_nodes.insert("lin");  // a pin by the composite's name covers its parts
  plan = convert::paint(g, po);
  CHECK(plan.find("lin/ax")->dtype == DType::F32);
  CHECK(plan.find("lin/axpb")->dtype == DType::F32);
  CHECK(plan.find("lin/ax")->reason == "pinned by --fp32-nodes");

  po.fp32_nodes.clear();
  po.lists.allow.erase("OatTestAxpb");
  po.lists.deny.insert("OatTestAxpb");
  plan = convert::paint(g, po);
  CHECK(plan.find("lin/axpb")->reason == "deny list (OatTestAxpb 'lin')");
  CHECK(plan.find("tail")->dtype == DType::F32);  // deny spreads forward past the expansion
}
