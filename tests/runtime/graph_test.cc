// The Graph IR: topological sorting, typed attribute access, and the descriptions errors use.
#include "runtime/graph.h"

#include <doctest/doctest.h>

using namespace oat;

namespace {

Node node(const std::string& name, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.name = name;
  n.op_type = "Relu";
  n.op = OpId::Relu;
  n.opset = 14;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

std::vector<std::string> names(const std::vector<Node>& nodes) {
  std::vector<std::string> r;
  for (const auto& n : nodes) r.push_back(n.name);
  return r;
}

}  // namespace

TEST_CASE("topological_sort orders producers first and keeps a valid order as it is") {
  std::vector<Node> nodes = {node("c", {"b"}, {"y"}), node("a", {"x"}, {"a"}),
                             node("b", {"a", "w"}, {"b"}), node("side", {"x"}, {"s"})};
  topological_sort(nodes, {"x", "w"});
  CHECK(names(nodes) == std::vector<std::string>{"a", "b", "c", "side"});
  topological_sort(nodes, {"x", "w"});
  CHECK(names(nodes) == std::vector<std::string>{"a", "b", "c", "side"});

  // Omitted optional inputs ("") and a value read twice by one node are fine.
  std::vector<Node> opt = {node("two", {"a", "", "a"}, {"y"}), node("one", {"x"}, {"a"})};
  topological_sort(opt, {"x"});
  CHECK(names(opt) == std::vector<std::string>{"one", "two"});
}

TEST_CASE("topological_sort errors name a node") {
  std::vector<Node> cycle = {node("p", {"x", "q_out"}, {"p_out"}), node("q", {"p_out"}, {"q_out"})};
  CHECK_THROWS_WITH_AS(topological_sort(cycle, {"x"}), doctest::Contains("cycle: node 'p'"), Error);

  std::vector<Node> self = {node("loop", {"y"}, {"y"})};
  CHECK_THROWS_WITH_AS(topological_sort(self, {}), doctest::Contains("node 'loop'"), Error);

  std::vector<Node> dangling = {node("d", {"nowhere"}, {"y"})};
  CHECK_THROWS_WITH_AS(topological_sort(dangling, {}),
                       doctest::Contains("node 'd' (Relu, opset 14): input 'nowhere'"), Error);
  // Subgraphs may read values of the enclosing scope that are not listed.
  CHECK_NOTHROW(topological_sort(dangling, {}, /*allow_outer_scope=*/true));

  std::vector<Node> twice = {node("a", {"x"}, {"y"}), node("b", {"x"}, {"y"})};
  CHECK_THROWS_WITH_AS(
      topological_sort(twice, {"x"}),
      doctest::Contains("node 'b' (Relu, opset 14): output 'y' is already produced"), Error);
}

TEST_CASE("typed attribute accessors, defaults and descriptions") {
  Node n = node("conv1", {"x"}, {"y"});
  n.domain = "ai.onnx.ml";
  Attribute i;
  i.kind = Attribute::Kind::Int;
  i.i = 3;
  n.attrs["group"] = i;
  Attribute f;
  f.kind = Attribute::Kind::Float;
  f.f = 0.5f;
  n.attrs["alpha"] = f;
  CHECK(n.describe() == "node 'conv1' (ai.onnx.ml.Relu, opset 14)");
  CHECK(n.attr_int("group", 1) == 3);
  CHECK(n.attr_int("missing", 7) == 7);
  CHECK(n.attr_float("alpha", 0) == 0.5f);
  CHECK(n.attr_float("group", 0) == 3.0f);  // ints read as floats (lenient exporters)
  CHECK(n.attr_ints("missing", {1, 2}) == std::vector<int64_t>{1, 2});
  CHECK_THROWS_WITH_AS(n.attr_ints("group"),
                       doctest::Contains("attribute 'group' is int, expected ints"), Error);
  CHECK_THROWS_WITH_AS(n.attr_string("alpha", ""),
                       doctest::Contains("attribute 'alpha' is float, expected string"), Error);
}

TEST_CASE("ValueInfo shapes print symbolic and unknown dims; find_value_info looks everywhere") {
  ValueInfo v{"x", DType::F32, std::vector<Dim>{Dim{-1, "batch"}, Dim{3, ""}, Dim{}}};
  CHECK(v.shape_string() == "[batch, 3, ?]");
  CHECK(ValueInfo{"y", DType::F32, std::nullopt}.shape_string() == "?");
  CHECK(ValueInfo{"s", DType::F32, std::vector<Dim>{}}.shape_string() == "[]");
  Graph g;
  g.inputs.push_back(v);
  g.outputs.push_back({"out", DType::I64, std::nullopt});
  g.value_info["mid"] = {"mid", DType::F16, std::nullopt};
  CHECK(g.find_value_info("x")->dtype == DType::F32);
  CHECK(g.find_value_info("out")->dtype == DType::I64);
  CHECK(g.find_value_info("mid")->dtype == DType::F16);
  CHECK(g.find_value_info("nope") == nullptr);
}
