// If, Loop and Scan on hand-built graphs: outer-scope reads from a Loop body and an If branch
// (implicit inputs, runtime/subgraph.h), the Loop forms (M only, cond only, neither: ended by the
// body's cond), a Loop of zero iterations, a Loop nested in an If reading the top graph, Scan's
// axes and directions, and what the CUDA backend says about control flow (it has no kernels;
// tests/cuda/host_placed_cuda_test.cc runs it on the host of a CUDA executor).
#include <doctest/doctest.h>

#include <memory>

#include "runtime/executor.h"
#include "runtime/subgraph.h"
#include "tests/node_builder.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::attr_t;
using oat_test::graph_attr;
using oat_test::make_node;

namespace {

ValueInfo info(const std::string& name, DType dtype, std::optional<std::vector<Dim>> shape) {
  ValueInfo v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  return v;
}
std::vector<Dim> dims(std::vector<int64_t> d) {
  std::vector<Dim> r;
  for (int64_t x : d) r.push_back(Dim{x, ""});
  return r;
}

Node multi(const std::string& name, const std::string& op, std::vector<std::string> in,
           std::vector<std::string> out, std::map<std::string, Attribute> attrs = {}) {
  return oat_test::make_node_outputs(name, op, std::move(in), std::move(out), std::move(attrs));
}

Tensor vec(std::vector<float> v) {
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}

void check_close(const Tensor& got, const Shape& shape, const std::vector<float>& want) {
  REQUIRE(got.dtype() == DType::F32);
  REQUIRE(got.shape() == shape);
  const std::vector<float> g = got.to_float_vector();
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx(want[i]));
  }
}

// Loop body (iteration i, cond c, carried x [2]) -> (cond_out, x + w, scan x):
//   cond_out = c and i < limit  (limit, w: values of the enclosing graph)
std::shared_ptr<Graph> counting_body() {
  auto b = std::make_shared<Graph>();
  b->name = "body";
  b->opsets[""] = 13;
  b->inputs = {info("i", DType::I64, dims({})), info("c", DType::Bool, dims({})),
               info("x", DType::F32, dims({2}))};
  b->nodes.push_back(make_node("lt", "Less", {"i", "limit"}, "below"));
  b->nodes.push_back(make_node("and", "And", {"c", "below"}, "c_out"));
  b->nodes.push_back(make_node("add", "Add", {"x", "w"}, "x_out"));
  b->nodes.push_back(make_node("keep", "Identity", {"x"}, "s_out"));
  b->outputs = {info("c_out", DType::Bool, dims({})), info("x_out", DType::F32, dims({2})),
                info("s_out", DType::F32, dims({2}))};
  return b;
}

// A graph with one Loop(m, cond, x0) -> (xf, scan) over counting_body(); `limit` is a Constant
// placed AFTER the Loop in node order (only the body reads it, so only the implicit input orders
// it first), and `w` = Neg(w_in) is an intermediate read only inside the body.
Graph loop_graph(const std::string& m, const std::string& cond, int64_t limit) {
  Graph g;
  g.opsets[""] = 13;
  g.inputs = {info("x0", DType::F32, dims({2})), info("w_in", DType::F32, dims({2}))};
  if (!m.empty()) g.inputs.push_back(info(m, DType::I64, dims({})));
  if (!cond.empty()) g.inputs.push_back(info(cond, DType::Bool, dims({})));
  g.nodes.push_back(make_node("neg", "Neg", {"w_in"}, "w"));
  g.nodes.push_back(multi("loop", "Loop", {m, cond, "x0"}, {"xf", "scan"},
                          {{"body", graph_attr(counting_body())}}));
  g.nodes.push_back(make_node("limit", "Constant", {}, "limit",
                              {{"value", attr_t(Tensor::scalar<int64_t>(limit))}}));
  g.outputs = {info("xf", DType::F32, std::nullopt), info("scan", DType::F32, std::nullopt)};
  return g;
}

std::map<std::string, Tensor> loop_feeds(const std::string& m, int64_t trips,
                                         const std::string& cond, bool c) {
  std::map<std::string, Tensor> f = {{"x0", vec({1, 2})}, {"w_in", vec({-10, -20})}};
  if (!m.empty()) f[m] = Tensor::scalar<int64_t>(trips);
  if (!cond.empty()) f[cond] = Tensor::scalar<bool>(c);
  return f;
}

}  // namespace

TEST_CASE("implicit inputs: the free names of subgraphs, recursively, in order of first use") {
  Graph g = loop_graph("M", "", 5);
  const Node& loop = g.nodes[1];
  CHECK(subgraph_free_names(*loop.attr("body")->g) == std::vector<std::string>{"limit", "w"});
  CHECK(implicit_inputs(loop) == std::vector<std::string>{"limit", "w"});
  CHECK(implicit_inputs(g.nodes[0]).empty());

  Graph copy = g;
  REQUIRE(add_implicit_inputs(copy));
  // The Constant producing `limit` moves before the Loop, which now reads it.
  REQUIRE(copy.nodes.size() == 3);
  CHECK(copy.nodes[2].op_type == "Loop");
  CHECK(copy.nodes[2].inputs == std::vector<std::string>{"M", "", "x0", "limit", "w"});
  CHECK(num_implicit_inputs(copy.nodes[2]) == 2);
  CHECK_FALSE(add_implicit_inputs(copy));  // idempotent

  // The Executor works on its own copy: the caller's graph keeps the node as written.
  Executor ex(g);
  CHECK(g.nodes[1].inputs == std::vector<std::string>{"M", "", "x0"});
  CHECK_FALSE(g.nodes[1].has_attr(kImplicitInputsAttr));
}

TEST_CASE("Loop: M only, cond only, neither (ended by the body's cond), both") {
  // Body cond: i < limit, so with limit 2 the body runs for i = 0, 1, 2 (the third returns
  // false). x grows by w = -w_in = (10, 20) each iteration; the scan output holds x before each.
  SUBCASE("M only: M bounds it before the body's cond does") {
    Graph g = loop_graph("M", "", 5);
    Executor ex(g);
    auto out = ex.run(loop_feeds("M", 2, "", false));
    check_close(out[0], {2}, {21, 42});
    check_close(out[1], {2, 2}, {1, 2, 11, 22});
  }
  SUBCASE("M only, the body's cond ends it first (as ONNX Runtime)") {
    Graph g = loop_graph("M", "", 2);
    Executor ex(g);
    auto out = ex.run(loop_feeds("M", 10, "", false));
    check_close(out[0], {2}, {31, 62});
    check_close(out[1], {3, 2}, {1, 2, 11, 22, 21, 42});
  }
  SUBCASE("cond only: a while loop") {
    Graph g = loop_graph("", "C", 1);
    Executor ex(g);
    auto out = ex.run(loop_feeds("", 0, "C", true));
    check_close(out[0], {2}, {21, 42});
    check_close(out[1], {2, 2}, {1, 2, 11, 22});
  }
  SUBCASE("neither: bounded by the body's cond alone") {
    Graph g = loop_graph("", "", 3);
    Executor ex(g);
    auto out = ex.run(loop_feeds("", 0, "", false));
    check_close(out[0], {2}, {41, 82});
    CHECK(out[1].shape() == Shape{4, 2});
  }
  SUBCASE("both, and the kernel is reused across calls") {
    Graph g = loop_graph("M", "C", 100);
    Executor ex(g);
    for (int64_t trips : {3, 1, 4}) {
      auto out = ex.run(loop_feeds("M", trips, "C", true));
      check_close(out[0], {2}, {1.0f + 10 * trips, 2.0f + 20 * trips});
      CHECK(out[1].shape() == Shape{trips, 2});
    }
  }
}

TEST_CASE("Loop of zero iterations: the initial values and empty scan outputs of the body's rank") {
  SUBCASE("M = 0") {
    Graph g = loop_graph("M", "", 5);
    Executor ex(g);
    auto out = ex.run(loop_feeds("M", 0, "", false));
    check_close(out[0], {2}, {1, 2});
    CHECK(out[1].dtype() == DType::F32);
    CHECK(out[1].shape() == Shape{0, 2});
  }
  SUBCASE("cond = false; unknown dims of the body's output count as 0") {
    Graph g = loop_graph("", "C", 5);
    g.nodes[1].attrs["body"].g->outputs[2].shape = std::vector<Dim>{Dim{-1, "n"}, Dim{3, ""}};
    Executor ex(g);
    auto out = ex.run(loop_feeds("", 0, "C", false));
    check_close(out[0], {2}, {1, 2});
    CHECK(out[1].shape() == Shape{0, 0, 3});
  }
  SUBCASE("negative M") {
    Graph g = loop_graph("M", "", 5);
    Executor ex(g);
    CHECK(ex.run(loop_feeds("M", -3, "", false))[1].shape() == Shape{0, 2});
  }
}

TEST_CASE("Loop: scan elements that change shape, and a body error, name the Loop node") {
  Graph g = loop_graph("M", "", 5);
  // The scan output is now the carried x concatenated with itself each iteration: [2], [4], ...
  Graph& body = *g.nodes[1].attrs["body"].g;
  body.nodes[2] = make_node("add", "Concat", {"x", "x"}, "x_out", {{"axis", attr_i(0)}});
  body.nodes[3] = make_node("keep", "Identity", {"x_out"}, "s_out");
  Executor ex(g);
  CHECK(ex.run(loop_feeds("M", 1, "", false))[1].shape() == Shape{1, 4});
  try {
    ex.run(loop_feeds("M", 3, "", false));
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("node 'loop' (Loop") == 0);
    CHECK(what.find("iteration 1 gave float32 [8]") != std::string::npos);
  }
}

TEST_CASE("If: branches read the enclosing graph, one returns an outer value directly") {
  // y = flag ? x * s : x   (s = Constant read inside then_branch; else_branch has no nodes and
  // returns the outer x itself)
  auto then_b = std::make_shared<Graph>();
  then_b->name = "then";
  then_b->opsets[""] = 13;
  then_b->nodes.push_back(make_node("mul", "Mul", {"x", "s"}, "t"));
  then_b->outputs = {info("t", DType::F32, std::nullopt)};
  auto else_b = std::make_shared<Graph>();
  else_b->name = "else";
  else_b->opsets[""] = 13;
  else_b->outputs = {info("x", DType::F32, std::nullopt)};
  Graph g;
  g.opsets[""] = 13;
  g.inputs = {info("x", DType::F32, dims({3})), info("flag", DType::Bool, dims({}))};
  g.nodes.push_back(make_node("s", "Constant", {}, "s", {{"value", attr_t(vec({2, 3, 4}))}}));
  g.nodes.push_back(
      make_node("if", "If", {"flag"}, "y",
                {{"then_branch", graph_attr(then_b)}, {"else_branch", graph_attr(else_b)}}));
  g.outputs = {info("y", DType::F32, std::nullopt)};
  CHECK(implicit_inputs(g.nodes[1]) == std::vector<std::string>{"x", "s"});
  Executor ex(g);
  check_close(ex.run({{"x", vec({1, 2, 3})}, {"flag", Tensor::scalar<bool>(true)}})[0], {3},
              {2, 6, 12});
  check_close(ex.run({{"x", vec({1, 2, 3})}, {"flag", Tensor::scalar<bool>(false)}})[0], {3},
              {1, 2, 3});
  // A condition that is not one bool names the node.
  g.inputs[1].dtype = DType::F32;
  Executor bad(g);
  CHECK_THROWS_WITH_AS(bad.run({{"x", vec({1, 2, 3})}, {"flag", Tensor::scalar<float>(1)}}),
                       doctest::Contains("node 'if' (If, opset 13): cond must be a bool tensor"),
                       Error);
}

TEST_CASE("a Loop nested in an If reads the top graph two scopes up") {
  // then_branch: Loop(M = 3) over counting_body() from x0, where `w` and `limit` are values of
  // the top graph; else_branch: Neg(x0).
  auto then_b = std::make_shared<Graph>();
  then_b->name = "then";
  then_b->opsets[""] = 13;
  then_b->nodes.push_back(
      make_node("three", "Constant", {}, "three", {{"value", attr_t(Tensor::scalar<int64_t>(3))}}));
  then_b->nodes.push_back(multi("inner_loop", "Loop", {"three", "", "x0"}, {"xf", "scan"},
                                {{"body", graph_attr(counting_body())}}));
  then_b->outputs = {info("xf", DType::F32, std::nullopt)};
  auto else_b = std::make_shared<Graph>();
  else_b->name = "else";
  else_b->opsets[""] = 13;
  else_b->nodes.push_back(make_node("neg0", "Neg", {"x0"}, "nx"));
  else_b->outputs = {info("nx", DType::F32, std::nullopt)};

  Graph g;
  g.opsets[""] = 13;
  g.inputs = {info("x0", DType::F32, dims({2})), info("w", DType::F32, dims({2})),
              info("flag", DType::Bool, dims({}))};
  g.nodes.push_back(make_node("limit", "Constant", {}, "limit",
                              {{"value", attr_t(Tensor::scalar<int64_t>(100))}}));
  g.nodes.push_back(
      make_node("if", "If", {"flag"}, "y",
                {{"then_branch", graph_attr(then_b)}, {"else_branch", graph_attr(else_b)}}));
  g.outputs = {info("y", DType::F32, std::nullopt)};
  // The If's implicit inputs include what its nested Loop's body reads.
  CHECK(implicit_inputs(g.nodes[1]) == std::vector<std::string>{"x0", "limit", "w"});
  Executor ex(g);
  auto run = [&](bool flag) {
    return ex.run(
        {{"x0", vec({1, 2})}, {"w", vec({0.5f, -1})}, {"flag", Tensor::scalar<bool>(flag)}})[0];
  };
  check_close(run(true), {2}, {2.5f, -1});
  check_close(run(false), {2}, {-1, -2});
  check_close(run(true), {2}, {2.5f, -1});
}

TEST_CASE("Scan: input and output axes and directions, states, an outer value") {
  // X [2, 3] scanned along axis 1 in reverse; y_t = s_t = s_{t-1} + x_t + b (b outer);
  // Y = the y_t stacked along axis 1, reversed: Y[:, 2 - t] = y_t.
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->opsets[""] = 13;
  body->inputs = {info("s", DType::F32, dims({2})), info("e", DType::F32, dims({2}))};
  body->nodes.push_back(make_node("a", "Add", {"s", "e"}, "se"));
  body->nodes.push_back(make_node("b", "Add", {"se", "b"}, "s_out"));
  body->nodes.push_back(make_node("y", "Identity", {"s_out"}, "y_out"));
  body->outputs = {info("s_out", DType::F32, dims({2})), info("y_out", DType::F32, dims({2}))};
  Graph g;
  g.opsets[""] = 16;
  g.inputs = {info("s0", DType::F32, dims({2})), info("X", DType::F32, dims({2, 3})),
              info("b", DType::F32, dims({2}))};
  Node scan = multi("scan", "Scan", {"s0", "X"}, {"sf", "Y"},
                    {{"body", graph_attr(body)},
                     {"num_scan_inputs", attr_i(1)},
                     {"scan_input_axes", attr_ints({1})},
                     {"scan_input_directions", attr_ints({1})},
                     {"scan_output_axes", attr_ints({-1})},
                     {"scan_output_directions", attr_ints({1})}});
  scan.opset = 16;
  g.nodes.push_back(scan);
  g.outputs = {info("sf", DType::F32, std::nullopt), info("Y", DType::F32, std::nullopt)};
  Executor ex(g);
  // Row 0 of X: 1 2 3, row 1: 10 20 30, read 3, 2, 1 / 30, 20, 10; b = (100, 0).
  auto out = ex.run({{"s0", vec({0, 0})},
                     {"X", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 10, 20, 30})},
                     {"b", vec({100, 0})}});
  // y_0 = (103, 30), y_1 = (205, 50), y_2 = (306, 60).
  check_close(out[0], {2}, {306, 60});
  check_close(out[1], {2, 3}, {306, 205, 103, 60, 50, 30});
}

TEST_CASE("Scan over strings: scan inputs sliced and scan outputs stacked as objects") {
  // X [2, 3] strings scanned along axis 1 in reverse; y_t = Concat(e_t, tag) (tag outer, [1]);
  // Y [3, 3] = the y_t stacked along axis 0. Long strings: a byte copy would share or lose them.
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->opsets[""] = 13;
  body->inputs = {info("e", DType::String, dims({2}))};
  body->nodes.push_back(make_node("cat", "Concat", {"e", "tag"}, "y_out", {{"axis", attr_i(0)}}));
  body->outputs = {info("y_out", DType::String, dims({3}))};
  Graph g;
  g.opsets[""] = 16;
  g.inputs = {info("X", DType::String, dims({2, 3})), info("tag", DType::String, dims({1}))};
  Node scan = multi("scan", "Scan", {"X"}, {"Y"},
                    {{"body", graph_attr(body)},
                     {"num_scan_inputs", attr_i(1)},
                     {"scan_input_axes", attr_ints({1})},
                     {"scan_input_directions", attr_ints({1})}});
  scan.opset = 16;
  g.nodes.push_back(scan);
  g.outputs = {info("Y", DType::String, std::nullopt)};
  Executor ex(g);
  const std::string pad(40, '.');  // past std::string's small buffer
  const Tensor x = Tensor::from_vector<std::string>(
      {2, 3}, {"a" + pad, "b" + pad, "c" + pad, "d" + pad, "e" + pad, "f" + pad});
  const Tensor y = ex.run({{"X", x}, {"tag", Tensor::from_vector<std::string>({1}, {"#"})}})[0];
  REQUIRE(y.dtype() == DType::String);
  CHECK(y.shape() == Shape{3, 3});
  const std::string* p = y.data<std::string>();
  CHECK(std::vector<std::string>(p, p + 9) == std::vector<std::string>{"c" + pad, "f" + pad, "#",
                                                                       "b" + pad, "e" + pad, "#",
                                                                       "a" + pad, "d" + pad, "#"});
}

TEST_CASE("Scan 8: batch axis, sequence_lens, reverse input, zero padding") {
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->opsets[""] = 8;
  body->inputs = {info("s", DType::F32, dims({1})), info("e", DType::F32, dims({1}))};
  body->nodes.push_back(make_node("a", "Add", {"s", "e"}, "s_out", {}, 8));
  body->nodes.push_back(make_node("y", "Identity", {"s_out"}, "y_out", {}, 8));
  body->outputs = {info("s_out", DType::F32, dims({1})), info("y_out", DType::F32, dims({1}))};
  Graph g;
  g.opsets[""] = 8;
  g.inputs = {info("lens", DType::I64, dims({2})), info("s0", DType::F32, dims({2, 1})),
              info("X", DType::F32, dims({2, 3, 1}))};
  Node scan = multi(
      "scan", "Scan", {"lens", "s0", "X"}, {"sf", "Y"},
      {{"body", graph_attr(body)}, {"num_scan_inputs", attr_i(1)}, {"directions", attr_ints({1})}});
  scan.opset = 8;
  g.nodes.push_back(scan);
  g.outputs = {info("sf", DType::F32, std::nullopt), info("Y", DType::F32, std::nullopt)};
  Executor ex(g);
  auto out = ex.run({{"lens", Tensor::from_vector<int64_t>({2}, {3, 2})},
                     {"s0", Tensor::from_vector<float>({2, 1}, {0, 0})},
                     {"X", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 10, 20, 30})}});
  // Entry 0 reads 3, 2, 1; entry 1 (length 2) reads 20, 10 and pads one zero.
  check_close(out[0], {2, 1}, {6, 30});
  check_close(out[1], {2, 3, 1}, {3, 5, 6, 20, 30, 0});
}

TEST_CASE(
    "control flow has no CUDA kernel: the backend reports the node, and runs it on the host") {
  Graph g = loop_graph("M", "", 5);
  const auto cuda = unsupported_nodes(g, Device::CUDA, default_registry());
  bool found = false;
  for (const auto& [node, why] : cuda)
    if (node.find("node 'loop' (Loop") == 0) {
      found = true;
      CHECK(why.find("has no cuda kernel (a cuda executor runs it on the host") !=
            std::string::npos);
    }
  CHECK(found);
  CHECK(unsupported_nodes(g, Device::CPU, default_registry()).empty());
}

TEST_CASE("a subgraph node the CPU cannot run makes its control-flow node unsupported") {
  Graph g = loop_graph("M", "", 5);
  g.nodes[1].attrs["body"].g->nodes[3] = make_node("keep", "RegexFullMatch", {}, "s_out");
  const auto cpu = unsupported_nodes(g, Device::CPU, default_registry());
  REQUIRE(cpu.size() == 1);
  CHECK(cpu[0].second.find("its body has node 'keep' (RegexFullMatch") == 0);
  CHECK_THROWS_AS(Executor{g}, Unsupported);
}

TEST_CASE("a Loop kernel made outside an Executor, without its implicit inputs, says so") {
  Graph g = loop_graph("M", "", 5);
  CHECK_THROWS_WITH_AS(
      default_registry().create(g.nodes[1], Device::CPU, DType::I64),
      doctest::Contains("node 'loop' (Loop, opset 13): body reads 'limit' from the "
                        "enclosing graph, but the node was not given it"),
      Error);
  // An Executor over another Executor's graph (already rewritten) adds nothing twice.
  Executor first(g);
  Executor second(first.graph());
  auto out = second.run(loop_feeds("M", 2, "", false));
  check_close(out[0], {2}, {21, 42});
}
