// Folding of back-to-back Transposes (runtime/transpose_fold.h): pairs that undo each other go,
// others become one Transpose, shared inner values and graph outputs stay, and the Executor runs
// a graph with such pairs to the same numbers.
#include <doctest/doctest.h>

#include <memory>
#include <random>

#include "node_builder.h"
#include "runtime/executor.h"
#include "runtime/transpose_fold.h"

using namespace oat;
using oat_test::make_node;

namespace {

Attribute perm(std::vector<int64_t> p) { return ints_attribute(std::move(p)); }

Tensor random4(Shape s) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// x [2, 3, 4, 5] (NCHW) -> to NHWC -> back to NCHW -> Relu -> y, as tf2onnx writes around a
// BatchNormalization; `extra`: the NHWC value is also a graph output.
Graph nhwc_round_trip(bool extra) {
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(ValueInfo{"x", DType::F32, std::vector<Dim>{{2, ""}, {3, ""}, {4, ""}, {5, ""}}});
  g.nodes.push_back(make_node("to_nhwc", "Transpose", {"x"}, "nhwc", {{"perm", perm({0, 2, 3, 1})}}));
  g.nodes.push_back(make_node("to_nchw", "Transpose", {"nhwc"}, "nchw", {{"perm", perm({0, 3, 1, 2})}}));
  g.nodes.push_back(make_node("relu", "Relu", {"nchw"}, "y"));
  g.outputs.push_back(ValueInfo{"y", DType::F32, {}});
  if (extra) g.outputs.push_back(ValueInfo{"nhwc", DType::F32, {}});
  return g;
}

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> r;
  for (const Node& n : g.nodes) r.push_back(n.name);
  return r;
}

bool equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
}

}  // namespace

TEST_CASE("fold_transpose_pairs: a pair that undoes itself goes; its readers read the input") {
  Graph g = nhwc_round_trip(false);
  CHECK(has_transpose_pairs(g));
  CHECK(fold_transpose_pairs(g) == 2);
  CHECK(ops(g) == std::vector<std::string>{"relu"});
  CHECK(g.nodes[0].inputs[0] == "x");
  CHECK_FALSE(has_transpose_pairs(g));
}

TEST_CASE("fold_transpose_pairs: an inner value read elsewhere (here a graph output) stays") {
  Graph g = nhwc_round_trip(true);
  CHECK(fold_transpose_pairs(g) == 1);
  CHECK(ops(g) == std::vector<std::string>{"to_nhwc", "relu"});
  CHECK(g.nodes[1].inputs[0] == "x");
}

// One Transpose of `in` by `p`, run alone.
Tensor transpose(const Tensor& in, std::vector<int64_t> p) {
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(ValueInfo{"a", DType::F32, {}});
  g.nodes.push_back(make_node("t", "Transpose", {"a"}, "b", {{"perm", perm(std::move(p))}}));
  g.outputs.push_back(ValueInfo{"b", DType::F32, {}});
  return Executor(g, ExecutorOptions{}).run({{"a", in}})[0];
}

TEST_CASE("fold_transpose_pairs: two that do not cancel become one with the composed perm") {
  Graph g = nhwc_round_trip(false);
  g.nodes[1].attrs["perm"] = perm({0, 2, 1, 3});  // [N, H, W, C] -> [N, W, H, C]
  CHECK(fold_transpose_pairs(g) == 1);
  REQUIRE(ops(g) == std::vector<std::string>{"to_nchw", "relu"});
  // r[i] = p[q[i]] with p = (0, 2, 3, 1), q = (0, 2, 1, 3): (0, 3, 2, 1).
  CHECK(g.nodes[0].attr_ints("perm") == std::vector<int64_t>{0, 3, 2, 1});
  const Tensor x = random4({2, 3, 4, 5});
  const Tensor two = transpose(transpose(x, {0, 2, 3, 1}), {0, 2, 1, 3});
  CHECK(equal(transpose(x, {0, 3, 2, 1}), two));
}

TEST_CASE("the Executor folds the pairs of the graph it runs: same numbers, no Transpose run") {
  const Graph g = nhwc_round_trip(false);
  Executor exec(g, ExecutorOptions{});
  int transposes = 0;
  exec.set_observer([&](const Node& n, const std::vector<Tensor>&) { transposes += n.op_type == "Transpose"; });
  const Tensor x = random4({2, 3, 4, 5});
  const Tensor y = exec.run({{"x", x}})[0];
  CHECK(transposes == 0);
  Tensor relu = x.clone();
  for (int64_t i = 0; i < relu.numel(); ++i) relu.data<float>()[i] = std::max(0.0f, relu.data<float>()[i]);
  CHECK(equal(y, relu));
  CHECK(g.nodes.size() == 3);  // the caller's graph is not changed
}

TEST_CASE("fold_transpose_pairs: a value an If branch reads from the outer scope keeps its producer") {
  // x -> to_nhwc -> to_nchw -> relu -> y as above, plus If(cond) whose branches return `nchw`
  // (read from the outer scope, not as a node input): to_nchw must stay.
  Graph g = nhwc_round_trip(false);
  g.inputs.push_back(ValueInfo{"cond", DType::Bool, std::vector<Dim>{}});
  auto branch = std::make_shared<Graph>();
  branch->name = "branch";
  branch->opsets[""] = 13;
  branch->nodes.push_back(make_node("pass", "Identity", {"nchw"}, "b_out"));
  branch->outputs.push_back(ValueInfo{"b_out", DType::F32, {}});
  Attribute a;
  a.kind = Attribute::Kind::Graph;
  a.g = branch;
  Node n = make_node("if", "If", {"cond"}, "z", {{"then_branch", a}, {"else_branch", a}});
  g.nodes.push_back(n);
  g.outputs.push_back(ValueInfo{"z", DType::F32, {}});
  CHECK_FALSE(has_transpose_pairs(g));
  CHECK(fold_transpose_pairs(g) == 0);
  const Tensor x = random4({2, 3, 4, 5});
  const std::vector<Tensor> out =
      Executor(g, ExecutorOptions{}).run({{"x", x}, {"cond", Tensor::scalar<bool>(true)}});
  CHECK(equal(out[1], x));
}

