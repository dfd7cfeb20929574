// Executor: liveness-based freeing, feed validation, fetching intermediates, and errors that name
// the node. Kernels come from a registry local to this file, so the executor is tested on its
// own, whatever the real kernel table holds.
#include "runtime/executor.h"

#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>

using namespace oat;

namespace {

// y = -x, into freshly allocated storage; counting its runs.
int neg_runs = 0;
void neg_kernel(KernelContext& ctx) {
  ++neg_runs;
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = -x.data<float>()[i];
}
// y = a + b (same shapes).
void add_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.shape() != b.shape())
    ctx.fail(cat("shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " differ"));
  Tensor& y = ctx.allocate_output(0, a.dtype(), a.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    y.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
}
void throwing_kernel(KernelContext&) { throw std::runtime_error("kernel exploded"); }
// An output far beyond any memory: the allocation throws Error("out of memory allocating ...").
void huge_kernel(KernelContext& ctx) {
  ctx.allocate_output(0, DType::F32, {int64_t{1} << 40, int64_t{1} << 10});
}
// y = x, sharing x's storage (as Reshape and Identity do).
void alias_kernel(KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }
// Constant: [1, 2], counting its runs.
int constant_runs = 0;
void constant_kernel(KernelContext& ctx) {
  ++constant_runs;
  Tensor& y = ctx.allocate_output(0, DType::F32, {2});
  y.data<float>()[0] = 1;
  y.data<float>()[1] = 2;
}

// RandomUniformLike stand-in: x's shape filled with a number that grows at every run (a draw).
void draw_kernel(KernelContext& ctx) {
  static float next = 0;
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = next;
  next += 1;
}

const KernelRegistry& test_registry() {
  static const KernelRegistry r = [] {
    KernelRegistry reg;
    reg.add(OpId::Neg, Device::CPU, DType::F32, function_kernel(neg_kernel));
    reg.add(OpId::Add, Device::CPU, DType::F32, function_kernel(add_kernel));
    reg.add(OpId::Abs, Device::CPU, DType::F32, function_kernel(throwing_kernel));
    reg.add(OpId::Relu, Device::CPU, DType::F32, function_kernel(huge_kernel));
    reg.add(OpId::Identity, Device::CPU, DType::F32, function_kernel(alias_kernel));
    reg.add(OpId::Constant, Device::CPU, kAnyDType, function_kernel(constant_kernel));
    reg.add(OpId::RandomUniformLike, Device::CPU, DType::F32, function_kernel(draw_kernel));
    return reg;
  }();
  return r;
}

Node make_node(const std::string& name, OpId op, std::vector<std::string> in,
               std::vector<std::string> out) {
  Node n;
  n.name = name;
  n.op = op;
  n.op_type = op_name(op);
  n.opset = 13;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

ValueInfo input_info(const std::string& name, std::vector<Dim> dims) {
  ValueInfo v;
  v.name = name;
  v.dtype = DType::F32;
  v.shape = std::move(dims);
  return v;
}

// x -> neg1 -> a -> neg2 -> b -> add(b, a2) -> y, with a2 = neg3(a): `a` is read by neg2 and neg3.
Graph chain_graph() {
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(input_info("x", {Dim{2, ""}, Dim{3, ""}}));
  g.outputs.push_back({"y", DType::F32, std::nullopt});
  g.nodes.push_back(make_node("neg1", OpId::Neg, {"x"}, {"a"}));
  g.nodes.push_back(make_node("neg2", OpId::Neg, {"a"}, {"b"}));
  g.nodes.push_back(make_node("neg3", OpId::Neg, {"a"}, {"a2"}));
  g.nodes.push_back(make_node("add", OpId::Add, {"b", "a2"}, {"y"}));
  return g;
}

ExecutorOptions test_options() {
  ExecutorOptions o;
  o.registry = &test_registry();
  return o;
}

Tensor iota(Shape shape) {
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

}  // namespace

TEST_CASE("an intermediate's storage is released right after its last consumer") {
  Graph g = chain_graph();
  Executor exec(g, test_options());
  std::map<std::string, std::weak_ptr<Storage>> storage;
  std::map<std::string, std::map<std::string, bool>> alive_after;  // node -> value -> alive
  exec.set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
    storage[n.outputs[0]] = outs[0].storage();
    for (const auto& [name, w] : storage) alive_after[n.name][name] = !w.expired();
  });
  Tensor x = iota({2, 3});
  std::weak_ptr<Storage> x_storage = x.storage();
  auto out = exec.run({{"x", x}});
  REQUIRE(out.size() == 1);
  // a = -x, b = -a = x, a2 = -a = x, y = b + a2 = 2x.
  CHECK(out[0].to_float_vector() == std::vector<float>{0, 2, 4, 6, 8, 10});

  // `a` is read by neg2 and neg3: alive after neg2, released once neg3 (its last reader) ran.
  CHECK(alive_after["neg2"]["a"]);
  CHECK(alive_after["neg3"]["a"]);  // observers run before the release of the node's inputs
  CHECK_FALSE(alive_after["add"]["a"]);
  // `b` and `a2` are released after `add`; the graph output `y` is returned, not released.
  CHECK(alive_after["add"]["y"]);
  CHECK(storage["b"].expired());
  CHECK(storage["a2"].expired());
  CHECK_FALSE(storage["y"].expired());
  // The caller's feed is never released by the executor.
  CHECK_FALSE(x_storage.expired());
}

TEST_CASE("peak_bytes: the most bytes of computed values held at once, each storage once") {
  // x -> neg1 -> a -> neg2 -> b -> neg3 -> c -> identity (shares c) -> d -> neg4 -> y, plus
  // e = identity(x), which shares the feed's storage.
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(input_info("x", {Dim{-1, "batch"}, Dim{3, ""}}));
  g.outputs.push_back({"y", DType::F32, std::nullopt});
  g.outputs.push_back({"e", DType::F32, std::nullopt});
  g.nodes.push_back(make_node("neg1", OpId::Neg, {"x"}, {"a"}));
  g.nodes.push_back(make_node("neg2", OpId::Neg, {"a"}, {"b"}));
  g.nodes.push_back(make_node("neg3", OpId::Neg, {"b"}, {"c"}));
  g.nodes.push_back(make_node("alias", OpId::Identity, {"c"}, {"d"}));
  g.nodes.push_back(make_node("neg4", OpId::Neg, {"d"}, {"y"}));
  g.nodes.push_back(make_node("feed_alias", OpId::Identity, {"x"}, {"e"}));
  Executor exec(g, test_options());
  CHECK(exec.peak_bytes() == 0);
  const size_t one = 2 * 3 * sizeof(float);
  auto out = exec.run({{"x", iota({2, 3})}});
  CHECK(out[0].to_float_vector() == std::vector<float>{0, 1, 2, 3, 4, 5});
  // Never more than a node's input and output: liveness frees each value after its last reader
  // (5 values computed, 2 held at most); d shares c's storage and e the feed's, so neither adds.
  CHECK(exec.peak_bytes() == 2 * one);
  // Reset per run, and follows the batch.
  exec.run({{"x", iota({4, 3})}});
  CHECK(exec.peak_bytes() == 4 * one);
  exec.run({{"x", iota({2, 3})}});
  CHECK(exec.peak_bytes() == 2 * one);
  // Fetched intermediates stay held until the end of the run.
  exec.run({{"x", iota({2, 3})}}, {"a", "b", "y"});
  CHECK(exec.peak_bytes() == 4 * one);  // a, b, c (= d) and y at neg4
  // A filter counts only the values it accepts.
  exec.set_bytes_filter([](const std::string& v) { return v == "y" || v == "a"; });
  exec.run({{"x", iota({2, 3})}});
  CHECK(exec.peak_bytes() == one);  // a is freed before y exists
  exec.set_bytes_filter(nullptr);
  exec.run({{"x", iota({2, 3})}});
  CHECK(exec.peak_bytes() == 2 * one);
}

TEST_CASE("fetching intermediates by name keeps them alive") {
  Graph g = chain_graph();
  Executor exec(g, test_options());
  auto values = exec.run({{"x", iota({2, 3})}}, {"a", "y"});
  REQUIRE(values.count("a") == 1);
  CHECK(values["a"].to_float_vector() == std::vector<float>{0, -1, -2, -3, -4, -5});
  CHECK(values["y"].to_float_vector() == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK_THROWS_WITH_AS(exec.run({{"x", iota({2, 3})}}, {"nope"}),
                       doctest::Contains("no value named 'nope'"), Error);
  // The same executor runs again, with another batch size.
  CHECK(exec.run({{"x", iota({4, 3})}})[0].shape() == Shape{4, 3});
}

TEST_CASE("feeds are validated against the declared inputs") {
  Graph g = chain_graph();
  Executor exec(g, test_options());
  // The batch (first) dimension may differ from the declared fixed one...
  CHECK_NOTHROW(exec.validate_feeds({{"x", iota({64, 3})}}));
  CHECK(exec.run({{"x", iota({5, 3})}})[0].shape() == Shape{5, 3});
  // ...other fixed dimensions may not.
  CHECK_THROWS_WITH_AS(exec.run({{"x", iota({2, 4})}}),
                       doctest::Contains("input 'x' has shape [2, 4], expected [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(exec.run({{"x", iota({2, 3, 1})}}),
                       doctest::Contains("input 'x' has shape [2, 3, 1], expected [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(exec.run({{"x", Tensor::zeros(DType::F64, {2, 3})}}),
                       doctest::Contains("input 'x' has dtype float64, expected float32"), Error);
  CHECK_THROWS_WITH_AS(exec.run({}),
                       doctest::Contains("missing input 'x' (expected float32 [2, 3])"), Error);
  CHECK_THROWS_WITH_AS(exec.run({{"x", iota({2, 3})}, {"z", iota({1})}}),
                       doctest::Contains("input 'z' is not an input of the model"), Error);

  SUBCASE("symbolic and unknown dimensions accept any size") {
    Graph g2 = chain_graph();
    g2.inputs[0].shape = std::vector<Dim>{Dim{-1, "batch"}, Dim{}};
    Executor e2(g2, test_options());
    CHECK_NOTHROW(e2.validate_feeds({{"x", iota({7, 9})}}));
    CHECK_THROWS(e2.validate_feeds({{"x", iota({7})}}));
  }
}

TEST_CASE("a feed may override an initializer (old-IR inputs with defaults)") {
  Graph g;
  g.opsets[""] = 13;
  g.initializers["w"] = Tensor::from_vector<float>({2}, {1, 2});
  g.inputs.push_back(input_info("x", {Dim{2, ""}}));
  g.outputs.push_back({"y", DType::F32, std::nullopt});
  g.nodes.push_back(make_node("add", OpId::Add, {"x", "w"}, {"y"}));
  Executor exec(g, test_options());
  Tensor x = Tensor::from_vector<float>({2}, {10, 20});
  CHECK(exec.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22});
  CHECK(exec.run({{"x", x}, {"w", Tensor::from_vector<float>({2}, {0, 0})}})[0].to_float_vector() ==
        std::vector<float>{10, 20});
  // The initializer itself is untouched by runs.
  CHECK(g.initializers["w"].to_float_vector() == std::vector<float>{1, 2});
}

TEST_CASE("a Constant node is evaluated once, when the executor is made, unless observed") {
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(input_info("x", {Dim{2, ""}}));
  g.outputs.push_back({"y", DType::F32, std::nullopt});
  g.nodes.push_back(make_node("c", OpId::Constant, {}, {"c_out"}));
  g.nodes.push_back(make_node("add", OpId::Add, {"x", "c_out"}, {"y"}));
  constant_runs = 0;
  Executor exec(g, test_options());
  CHECK(constant_runs == 1);
  const Tensor x = Tensor::from_vector<float>({2}, {10, 20});
  for (int i = 0; i < 3; ++i)
    CHECK(exec.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22});
  CHECK(constant_runs == 1);
  // Fetched, it is the value held (the same storage at every run).
  const Tensor c1 = exec.run({{"x", x}}, {"c_out"}).at("c_out");
  const Tensor c2 = exec.run({{"x", x}}, {"c_out"}).at("c_out");
  CHECK(c1.to_float_vector() == std::vector<float>{1, 2});
  CHECK(c1.raw_data() == c2.raw_data());
  // An observer (check's per-node comparison) sees the node run, as every other node.
  std::vector<std::string> seen;
  exec.set_observer([&](const Node& n, const std::vector<Tensor>&) { seen.push_back(n.name); });
  CHECK(exec.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22});
  CHECK(seen == std::vector<std::string>{"c", "add"});
  CHECK(constant_runs == 2);
}

TEST_CASE("nodes computed from initializers alone run once; a fed initializer recomputes them") {
  // w -> neg_w -> wn -> neg_wn -> w2;  y = x + w2.  Only w2, which a computed node reads, is kept.
  Graph g;
  g.opsets[""] = 13;
  g.initializers["w"] = Tensor::from_vector<float>({2}, {1, 2});
  g.inputs.push_back(input_info("x", {Dim{2, ""}}));
  g.outputs.push_back({"y", DType::F32, std::nullopt});
  g.nodes.push_back(make_node("neg_w", OpId::Neg, {"w"}, {"wn"}));
  g.nodes.push_back(make_node("neg_wn", OpId::Neg, {"wn"}, {"w2"}));
  g.nodes.push_back(make_node("add", OpId::Add, {"x", "w2"}, {"y"}));
  Executor exec(g, test_options());
  const Tensor x = Tensor::from_vector<float>({2}, {10, 20});
  neg_runs = 0;
  for (int i = 0; i < 3; ++i)
    CHECK(exec.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22});
  CHECK(neg_runs == 2);  // both Negs once, at the first run
  CHECK(exec.folded_values() == 1);
  // Feeding the initializer (the Trainer feeds its parameters) makes its readers compute again,
  // and the kept value is used again once it is no longer fed.
  const Tensor w = Tensor::from_vector<float>({2}, {100, 200});
  CHECK(exec.run({{"x", x}, {"w", w}})[0].to_float_vector() == std::vector<float>{110, 220});
  CHECK(neg_runs == 4);
  CHECK(exec.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22});
  CHECK(neg_runs == 4);
  // An intermediate of the folded chain can still be fetched: its node runs again for it.
  CHECK(exec.run({{"x", x}}, {"wn"}).at("wn").to_float_vector() == std::vector<float>{-1, -2});
  CHECK(neg_runs == 5);
  // Under an observer (check) every node runs and is seen.
  std::vector<std::string> seen;
  exec.set_observer([&](const Node& n, const std::vector<Tensor>&) { seen.push_back(n.name); });
  CHECK(exec.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22});
  CHECK(seen == std::vector<std::string>{"neg_w", "neg_wn", "add"});
  CHECK(neg_runs == 7);
}

TEST_CASE("a random draw from initializers is not folded: every run draws again") {
  Graph g;
  g.opsets[""] = 13;
  g.initializers["w"] = Tensor::from_vector<float>({2}, {1, 2});
  g.inputs.push_back(input_info("x", {Dim{2, ""}}));
  g.outputs.push_back({"y", DType::F32, std::nullopt});
  g.nodes.push_back(make_node("draw", OpId::RandomUniformLike, {"w"}, {"r"}));
  g.nodes.push_back(make_node("add", OpId::Add, {"x", "r"}, {"y"}));
  Executor exec(g, test_options());
  const Tensor x = Tensor::from_vector<float>({2}, {0, 0});
  const std::vector<float> a = exec.run({{"x", x}})[0].to_float_vector();
  const std::vector<float> b = exec.run({{"x", x}})[0].to_float_vector();
  CHECK(a != b);
  CHECK(exec.folded_values() == 0);
}

TEST_CASE("executor errors name the node") {
  Graph g = chain_graph();
  g.nodes.push_back(make_node("mystery", OpId::Unknown, {"y"}, {"z"}));
  g.nodes.back().op_type = "FooBar";
  CHECK_THROWS_WITH_AS(Executor(g, test_options()),
                       doctest::Contains("node 'mystery' (FooBar, opset 13): op FooBar (opset 13) "
                                         "is not supported"),
                       Unsupported);

  Graph g2 = chain_graph();
  g2.nodes[1] = make_node("boom", OpId::Abs, {"a"}, {"b"});
  Executor e2(g2, test_options());
  CHECK_THROWS_WITH_AS(e2.run({{"x", iota({2, 3})}}),
                       doctest::Contains("node 'boom' (Abs, opset 13): kernel exploded"), Error);

  Graph g3 = chain_graph();
  g3.nodes[3].inputs[1] = "x";  // fine: add(b, x)
  Executor e3(g3, test_options());
  CHECK(e3.run({{"x", iota({2, 3})}})[0].to_float_vector() ==
        std::vector<float>{0, 2, 4, 6, 8, 10});

  Graph g4 = chain_graph();
  g4.outputs.push_back({"never", DType::F32, std::nullopt});
  CHECK_THROWS_WITH_AS(Executor(g4, test_options()),
                       doctest::Contains("graph output 'never' is not produced"), Error);

  // An Error raised below the kernel (the allocation of a huge output, as a Pad with pads of
  // 2^40 asks for) gets the node's name in front (found by the bad-input sweep).
  Graph g6 = chain_graph();
  g6.nodes[1] = make_node("huge", OpId::Relu, {"a"}, {"b"});
  Executor e6(g6, test_options());
  CHECK_THROWS_WITH_AS(e6.run({{"x", iota({2, 3})}}),
                       doctest::Contains("node 'huge' (Relu, opset 13): out of memory allocating"),
                       Error);

  // A node with no inputs says so, not "no cpu kernel for dtype undefined" (bad-input sweep).
  Graph g7 = chain_graph();
  g7.nodes[2].inputs.clear();
  Executor e7(g7, test_options());
  CHECK_THROWS_WITH_AS(e7.run({{"x", iota({2, 3})}}),
                       doctest::Contains("node 'neg3' (Neg, opset 13): has no inputs, but Neg "
                                         "reads at least one"),
                       Error);

  // A kernel failure reports shapes through ctx.fail.
  Graph g5 = chain_graph();
  g5.inputs.push_back(input_info("other", {Dim{1, ""}}));
  g5.nodes[3].inputs[1] = "other";
  Executor e5(g5, test_options());
  CHECK_THROWS_WITH_AS(
      e5.run({{"x", iota({2, 3})}, {"other", iota({1})}}),
      doctest::Contains("node 'add' (Add, opset 13): shapes [2, 3] and [1] differ"), Error);
}
