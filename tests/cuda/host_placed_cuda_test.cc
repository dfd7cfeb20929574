// Control flow (If, Loop) and the sequence ops in a CUDA executor: they have no device kernels and
// run on the host (runtime/cuda/context.cc, placement), their device inputs downloaded, their
// outputs uploaded where a device node reads them; every output agrees with the CPU executor's. A
// capture (the Trainer's CUDA graph) refuses control flow by name.
// The wider integer types (int16, uint16, uint32, uint64) have no device element type: their
// nodes run on the host the same way.
#include <doctest/doctest.h>

#include <iostream>
#include <memory>

#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/onnx_type_code.h"
#include "tests/node_builder.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using oat_test::attr_t;
using oat_test::graph_attr;
using oat_test::make_node;
using oat_test::make_node_outputs;

namespace {

ValueInfo info(const std::string& name, DType dtype, std::optional<std::vector<Dim>> shape,
               ValueKind kind = ValueKind::Tensor) {
  ValueInfo v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.kind = kind;
  return v;
}

// A branch without inputs: t = op(r [, two]) with r a value of the enclosing graph.
std::shared_ptr<Graph> branch(const std::string& name, const std::string& op) {
  auto b = std::make_shared<Graph>();
  b->name = name;
  b->opsets[""] = 13;
  if (op == "Mul") {
    b->nodes.push_back(
        make_node(name + "_two", "Constant", {}, "two", {{"value", attr_t(Tensor::scalar(2.0f))}}));
    b->nodes.push_back(make_node(name + "_mul", "Mul", {"r", "two"}, name + "_t"));
  } else {
    b->nodes.push_back(make_node(name + "_" + op, op, {"r"}, name + "_t"));
  }
  b->outputs = {info(name + "_t", DType::F32, std::nullopt)};
  return b;
}

// Loop body (i, c, v) -> (c, v + r): r from the enclosing graph.
std::shared_ptr<Graph> accumulate_body() {
  auto b = std::make_shared<Graph>();
  b->name = "body";
  b->opsets[""] = 13;
  b->inputs = {info("i", DType::I64, std::vector<Dim>{}),
               info("c", DType::Bool, std::vector<Dim>{}), info("v", DType::F32, std::nullopt)};
  b->nodes.push_back(make_node("keep", "Identity", {"c"}, "c_out"));
  b->nodes.push_back(make_node("acc", "Add", {"v", "r"}, "v_out"));
  b->outputs = {info("c_out", DType::Bool, std::vector<Dim>{}),
                info("v_out", DType::F32, std::nullopt)};
  return b;
}

// x [2, 3], c: r = Relu(x); y = If(c, r·2, −r); z = y + x; seq = SplitToSequence(z) (two rows);
// s = Sigmoid(seq[1]); n = len(seq); vf = Loop(3 times, v += r) from x. Outputs z, s, n, vf,
// seq (a sequence output), and e = ConcatFromSequence(seq) · 3 (a device node after a host one).
Graph host_placed_graph() {
  Graph g;
  g.opsets[""] = 13;
  g.inputs = {info("x", DType::F32, std::vector<Dim>{Dim{2, ""}, Dim{3, ""}}),
              info("c", DType::Bool, std::vector<Dim>{})};
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, "r"));
  g.nodes.push_back(make_node("if", "If", {"c"}, "y",
                              {{"then_branch", graph_attr(branch("then", "Mul"))},
                               {"else_branch", graph_attr(branch("else", "Neg"))}}));
  g.nodes.push_back(make_node("add", "Add", {"y", "x"}, "z"));
  g.nodes.push_back(make_node("split", "SplitToSequence", {"z"}, "seq", {}, 11));
  g.nodes.push_back(
      make_node("one", "Constant", {}, "one", {{"value", attr_t(Tensor::scalar<int64_t>(1))}}));
  g.nodes.push_back(make_node("at", "SequenceAt", {"seq", "one"}, "a", {}, 11));
  g.nodes.push_back(make_node("sig", "Sigmoid", {"a"}, "s"));
  g.nodes.push_back(make_node("len", "SequenceLength", {"seq"}, "n", {}, 11));
  g.nodes.push_back(
      make_node("three", "Constant", {}, "m", {{"value", attr_t(Tensor::scalar<int64_t>(3))}}));
  g.nodes.push_back(make_node_outputs("loop", "Loop", {"m", "", "x"}, {"vf"},
                                      {{"body", graph_attr(accumulate_body())}}));
  g.nodes.push_back(
      make_node("cat", "ConcatFromSequence", {"seq"}, "joined", {{"axis", int_attribute(0)}}, 11));
  g.nodes.push_back(make_node("scale", "Mul", {"joined", "m_f"}, "e"));
  g.initializers["m_f"] = Tensor::from_vector<float>({3}, {3, 3, 3});
  for (const char* o : {"z", "s", "n", "vf", "e"})
    g.outputs.push_back(info(o, DType::Undefined, std::nullopt));
  g.outputs.push_back(info("seq", DType::F32, std::nullopt, ValueKind::Sequence));
  return g;
}

void check_same(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  CAPTURE(what);
  REQUIRE(gpu.is_tensor());
  CHECK(gpu.device() == Device::CPU);  // run() returns host tensors
  REQUIRE(gpu.dtype() == cpu.dtype());
  REQUIRE(gpu.shape() == cpu.shape());
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    CAPTURE(i);
    CHECK(gpu.item_as_double(i) == doctest::Approx(cpu.item_as_double(i)).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("a CUDA executor runs If, Loop and the sequence ops on the host, as the CPU does") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  const Graph g = host_placed_graph();
  Executor cpu(g);
  ExecutorOptions o;
  o.device = Device::CUDA;
  Executor gpu(g, o);
  const Tensor x = Tensor::from_vector<float>({2, 3}, {-1.5f, 0.25f, 2, 3, -4, 0.5f});
  for (const bool c : {true, false}) {
    CAPTURE(c);
    const std::map<std::string, Tensor> feeds = {{"x", x}, {"c", Tensor::scalar<bool>(c)}};
    const std::vector<Tensor> want = cpu.run(feeds), got = gpu.run(feeds);
    REQUIRE(got.size() == want.size());
    const char* names[] = {"z", "s", "n", "vf", "e"};
    for (size_t k = 0; k < 5; ++k) check_same(want[k], got[k], names[k]);
    // z by hand: r·2 + x or −r + x.
    for (int64_t i = 0; i < 6; ++i) {
      const double xi = x.item_as_double(i), r = xi > 0 ? xi : 0;
      CHECK(got[0].item_as_double(i) == doctest::Approx(c ? 2 * r + xi : xi - r));
    }
    CHECK(got[2].item_as_double(0) == 2);
    REQUIRE(got[5].kind() == ValueKind::Sequence);
    REQUIRE(got[5].items().size() == 2);
    for (size_t k = 0; k < 2; ++k) check_same(want[5].items()[k], got[5].items()[k], "seq item");
  }
  // The identity on a sequence feed runs on the host too (it used to be refused).
  Graph id;
  id.opsets[""] = 13;
  id.inputs = {info("q", DType::F32, std::nullopt, ValueKind::Sequence)};
  id.outputs = {info("p", DType::F32, std::nullopt, ValueKind::Sequence)};
  id.nodes = {make_node("id", "Identity", {"q"}, "p")};
  Executor idx(id, o);
  const Tensor seq = Tensor::sequence(DType::F32, {Tensor::zeros(DType::F32, {2})});
  const auto out = idx.run({{"q", seq}});
  REQUIRE(out.at(0).kind() == ValueKind::Sequence);
  CHECK(out.at(0).items().size() == 1);
}

TEST_CASE("a CUDA graph capture refuses control flow, naming the node") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  const Graph g = host_placed_graph();
  ExecutorOptions o;
  o.device = Device::CUDA;
  Executor gpu(g, o);
  const std::map<std::string, Tensor> feeds = {
      {"x", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
      {"c", Tensor::scalar<bool>(true)}};
  gpu.run(feeds);  // eager first: kernels created, constants uploaded
  DeviceContext* dc = gpu.device_context();
  REQUIRE(dc);
  dc->begin_capture();
  std::string m;
  try {
    gpu.run_resident(feeds, {"z"});
  } catch (const Error& e) {
    m = e.what();
  }
  dc->abort_capture();
  CAPTURE(m);
  CHECK(m.find("node 'if' (If, opset 13): control flow runs its subgraphs on the host") !=
        std::string::npos);
  CHECK(m.find("cannot be captured") != std::string::npos);
  // Eager again after the failed capture: still the same results.
  Executor cpu(g);
  check_same(cpu.run(feeds).at(0), gpu.run(feeds).at(0), "z after the capture");
}

TEST_CASE("int16/uint16/uint32/uint64 nodes run on the host in a CUDA executor, as the CPU does") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  // x [2, 3] float (device): u = Cast(Relu(x)·10, uint16); m = Max(u, k) (uint16 initializer);
  // s = BitShift(Cast(m, uint32), 2) LEFT; w = Mod(Cast(s, uint64), 7); i = Cast(Neg(x), int16)
  // reshaped to [3, 2]; f = Cast(w, float) + x (back on the device). The wide integer nodes
  // have no device element type: they run on the host, their device inputs downloaded.
  Graph g;
  g.opsets[""] = 13;
  g.inputs = {info("x", DType::F32, std::vector<Dim>{Dim{2, ""}, Dim{3, ""}})};
  auto cast = [](const char* name, const char* in, const char* out, DType to) {
    return make_node(name, "Cast", {in}, out, {{"to", int_attribute(onnx_code_of(to))}});
  };
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, "r"));
  g.nodes.push_back(make_node("ten", "Mul", {"r", "ten_f"}, "r10"));
  g.nodes.push_back(cast("to_u16", "r10", "u", DType::U16));
  g.nodes.push_back(make_node("max", "Max", {"u", "k"}, "m"));
  g.nodes.push_back(cast("to_u32", "m", "m32", DType::U32));
  g.nodes.push_back(make_node("shift", "BitShift", {"m32", "two"}, "s",
                              {{"direction", string_attribute("LEFT")}}));
  g.nodes.push_back(cast("to_u64", "s", "s64", DType::U64));
  g.nodes.push_back(make_node("mod", "Mod", {"s64", "seven"}, "w"));
  g.nodes.push_back(make_node("neg", "Neg", {"x"}, "nx"));
  g.nodes.push_back(cast("to_i16", "nx", "i16", DType::I16));
  g.nodes.push_back(make_node("reshape", "Reshape", {"i16", "shape"}, "i"));
  g.nodes.push_back(cast("to_f", "w", "wf", DType::F32));
  g.nodes.push_back(make_node("add", "Add", {"wf", "x"}, "f"));
  g.initializers["ten_f"] = Tensor::scalar(10.0f);
  g.initializers["k"] = cast_tensor(Tensor::from_vector<int64_t>({3}, {4, 40, 0}), DType::U16);
  g.initializers["two"] = cast_tensor(Tensor::scalar<int64_t>(2), DType::U32);
  g.initializers["seven"] = cast_tensor(Tensor::scalar<int64_t>(7), DType::U64);
  g.initializers["shape"] = Tensor::from_vector<int64_t>({2}, {3, 2});
  for (const char* o : {"m", "s", "w", "i", "f"})
    g.outputs.push_back(info(o, DType::Undefined, std::nullopt));
  Executor cpu(g);
  ExecutorOptions o;
  o.device = Device::CUDA;
  Executor gpu(g, o);
  const std::map<std::string, Tensor> feeds = {
      {"x", Tensor::from_vector<float>({2, 3}, {-1.5f, 0.25f, 2, 3, -4, 0.5f})}};
  const std::vector<Tensor> want = cpu.run(feeds), got = gpu.run(feeds);
  REQUIRE(got.size() == 5);
  const char* names[] = {"m", "s", "w", "i", "f"};
  for (size_t k = 0; k < 5; ++k) check_same(want[k], got[k], names[k]);
  CHECK(got[0].dtype() == DType::U16);
  CHECK(got[1].dtype() == DType::U32);
  CHECK(got[2].dtype() == DType::U64);
  CHECK(got[3].dtype() == DType::I16);
  // By hand: u = [0, 2, 20, 30, 0, 5]; m = max(u, [4, 40, 0]) = [4, 40, 20, 30, 40, 5];
  // s = m << 2; w = s mod 7; i = trunc(−x).
  CHECK(got[0].to_int_vector() == std::vector<int64_t>{4, 40, 20, 30, 40, 5});
  CHECK(got[1].to_int_vector() == std::vector<int64_t>{16, 160, 80, 120, 160, 20});
  CHECK(got[2].to_int_vector() == std::vector<int64_t>{2, 6, 3, 1, 6, 6});
  CHECK(got[3].shape() == Shape{3, 2});
  CHECK(got[3].to_int_vector() == std::vector<int64_t>{1, 0, -2, -3, 4, 0});
}

TEST_CASE("string nodes run on the host in a CUDA executor, as the CPU does") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  // x [2, 3] float (device): t = Cast(Relu(x), string); w = StringNormalizer(Concat(words, ...))
  // on the host; g = Transpose(Reshape(t, [3, 2])) (strings moved by number); f = Cast(g, float)
  // + 1 (back on the device). String tensors live on the host: every node that reads or makes
  // one runs there.
  Graph g;
  g.opsets[""] = 13;
  g.inputs = {info("x", DType::F32, std::vector<Dim>{Dim{2, ""}, Dim{3, ""}}),
              info("words", DType::String, std::vector<Dim>{Dim{3, ""}})};
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, "r"));
  g.nodes.push_back(make_node("to_s", "Cast", {"r"}, "t", {{"to", int_attribute(8)}}));
  g.nodes.push_back(make_node("reshape", "Reshape", {"t", "shape"}, "t32"));
  g.nodes.push_back(make_node("transpose", "Transpose", {"t32"}, "gt"));
  g.nodes.push_back(make_node("to_f", "Cast", {"gt"}, "gf", {{"to", int_attribute(1)}}));
  g.nodes.push_back(make_node("add", "Add", {"gf", "one"}, "f"));
  Node norm = make_node("norm", "StringNormalizer", {"words"}, "w",
                        {{"case_change_action", string_attribute("UPPER")}}, 10);
  Attribute stop;
  stop.kind = Attribute::Kind::Strings;
  stop.strings = {"b"};
  norm.attrs["stopwords"] = stop;
  g.nodes.push_back(norm);
  g.initializers["shape"] = Tensor::from_vector<int64_t>({2}, {3, 2});
  g.initializers["one"] = Tensor::scalar(1.0f);
  for (const char* o : {"gt", "f", "w"}) g.outputs.push_back(info(o, DType::Undefined, std::nullopt));
  Executor cpu(g);
  ExecutorOptions o;
  o.device = Device::CUDA;
  Executor gpu(g, o);
  const std::map<std::string, Tensor> feeds = {
      {"x", Tensor::from_vector<float>({2, 3}, {-1.5f, 0.25f, 2, 3, -4, 0.5f})},
      {"words", Tensor::from_vector<std::string>({3}, {"a", "B", "c"})}};
  const std::vector<Tensor> want = cpu.run(feeds), got = gpu.run(feeds);
  REQUIRE(got.size() == 3);
  auto strings = [](const Tensor& t) {
    REQUIRE(t.dtype() == DType::String);
    return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.numel());
  };
  // r = [0, 0.25, 2, 3, 0, 0.5] as [3, 2], transposed.
  CHECK(strings(got[0]) == std::vector<std::string>{"0", "2", "0", "0.25", "3", "0.5"});
  CHECK(strings(got[0]) == strings(want[0]));
  check_same(want[1], got[1], "f");
  CHECK(got[1].to_float_vector() == std::vector<float>{1, 3, 1, 1.25f, 4, 1.5f});
  CHECK(strings(got[2]) == std::vector<std::string>{"A", "C"});
}

namespace {

// An ai.onnx.ml node made by hand (make_node looks ops up in the default domain).
Node ml_node(const std::string& name, const std::string& op, std::vector<std::string> in,
             std::vector<std::string> out, std::map<std::string, Attribute> attrs) {
  Node n = make_node_outputs(name, op, std::move(in), std::move(out), std::move(attrs), 3);
  n.domain = kMlDomain;
  n.op = ml_op_from_name(op);
  return n;
}

}  // namespace

TEST_CASE("ai.onnx.ml nodes run on the host in a CUDA executor, as the CPU does") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  // x [3, 2] (device): r = Relu(x); s = Scaler(r) (host); (label, p) = LinearClassifier(s) with
  // string labels; q = p · 2 (device again); t = TreeEnsembleRegressor(s), one stump.
  Graph g;
  g.opsets[""] = 13;
  g.opsets[kMlDomain] = 3;
  g.inputs = {info("x", DType::F32, std::vector<Dim>{Dim{3, ""}, Dim{2, ""}})};
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, "r"));
  g.nodes.push_back(ml_node("scale", "Scaler", {"r"}, {"s"},
                            {{"offset", oat_test::attr_floats({0.5f, 0})}, {"scale", oat_test::attr_floats({2, 1})}}));
  g.nodes.push_back(ml_node("linear", "LinearClassifier", {"s"}, {"label", "p"},
                            {{"coefficients", oat_test::attr_floats({1, 0, 0, 1, -1, -1})},
                             {"intercepts", oat_test::attr_floats({0, 0, 0.5f})},
                             {"classlabels_strings", oat_test::attr_strings({"a", "b", "c"})},
                             {"post_transform", string_attribute("SOFTMAX")}}));
  g.nodes.push_back(make_node("twice", "Mul", {"p", "two"}, "q"));
  g.nodes.push_back(ml_node("tree", "TreeEnsembleRegressor", {"s"}, {"t"},
                            {{"nodes_treeids", ints_attribute({0, 0, 0})},
                             {"nodes_nodeids", ints_attribute({0, 1, 2})},
                             {"nodes_featureids", ints_attribute({1, 0, 0})},
                             {"nodes_values", oat_test::attr_floats({1, 0, 0})},
                             {"nodes_modes", oat_test::attr_strings({"BRANCH_LEQ", "LEAF", "LEAF"})},
                             {"nodes_truenodeids", ints_attribute({1, 0, 0})},
                             {"nodes_falsenodeids", ints_attribute({2, 0, 0})},
                             {"target_treeids", ints_attribute({0, 0})},
                             {"target_nodeids", ints_attribute({1, 2})},
                             {"target_ids", ints_attribute({0, 0})},
                             {"target_weights", oat_test::attr_floats({-1, 1})}}));
  // z = ZipMap(p): a sequence of maps, made on the host from the host's p
  g.nodes.push_back(ml_node("zip", "ZipMap", {"p"}, {"z"},
                            {{"classlabels_strings", oat_test::attr_strings({"a", "b", "c"})}}));
  g.initializers["two"] = Tensor::scalar(2.0f);
  for (const char* o : {"label", "q", "t", "z"})
    g.outputs.push_back(info(o, DType::Undefined, std::nullopt));
  Executor cpu(g);
  ExecutorOptions o;
  o.device = Device::CUDA;
  Executor gpu(g, o);
  const std::map<std::string, Tensor> feeds = {
      {"x", Tensor::from_vector<float>({3, 2}, {1, 0.5f, -2, 3, 0.25f, -1})}};
  const std::vector<Tensor> want = cpu.run(feeds), got = gpu.run(feeds);
  REQUIRE(got.size() == 4);
  REQUIRE(got[0].dtype() == DType::String);
  // s = [(1, 0.5), (-1, 3), (-0.5, 0)]: scores (1, 0.5, -1), (-1, 3, -1.5), (-0.5, 0, 1)
  const std::vector<std::string> labels_got(got[0].data<std::string>(),
                                            got[0].data<std::string>() + 3);
  CHECK(labels_got == std::vector<std::string>{"a", "b", "c"});
  CHECK(labels_got == std::vector<std::string>(want[0].data<std::string>(),
                                               want[0].data<std::string>() + 3));
  check_same(want[1], got[1], "q");
  check_same(want[2], got[2], "t");
  CHECK(got[2].to_float_vector() == std::vector<float>{-1, 1, -1});
  REQUIRE(got[3].describe() == "sequence(map(string, float32)) of 3");
  for (size_t row = 0; row < 3; ++row) {
    CAPTURE(row);
    CHECK(got[3].items()[row].map_values().to_float_vector() ==
          want[3].items()[row].map_values().to_float_vector());
  }
}
