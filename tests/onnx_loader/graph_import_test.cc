// ModelProto -> Graph: attributes of every type, opset imports and domains, old-IR models,
// topological order, cycles, shape inference, and opsets newer than libonnx knows.
#include <doctest/doctest.h>

#include "onnx_loader/model.h"
#include "onnx_loader/model_builder.h"
#include "runtime/executor.h"

using namespace oat;
using namespace oat_test;
using onnx_loader::load_model_from_bytes;

namespace {

onnx_loader::Model load(const ModelBuilder& mb, bool infer = true) {
  onnx_loader::LoadOptions opts;
  opts.run_shape_inference = infer;
  return load_model_from_bytes(mb.bytes(), "", opts, "test.onnx");
}

std::string load_error(const ModelBuilder& mb) {
  try {
    load(mb);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

}  // namespace

TEST_CASE("every attribute type is imported with its kind") {
  using A = onnx::AttributeProto;
  ModelBuilder mb;
  mb.input("x", kFloat, {2});
  mb.output("y", kFloat, {2});
  auto* n = mb.node("Identity", {"x"}, {"y"}, "all_attrs");
  add_attr(n, "f", A::FLOAT)->set_f(0.5f);
  add_attr(n, "i", A::INT)->set_i(-3);
  add_attr(n, "s", A::STRING)->set_s("SAME_UPPER");
  auto* t = add_attr(n, "t", A::TENSOR)->mutable_t();
  t->set_data_type(kInt64);
  t->add_dims(2);
  t->add_int64_data(7);
  t->add_int64_data(8);
  auto* fs_ = add_attr(n, "fs", A::FLOATS);
  fs_->add_floats(1.0f);
  fs_->add_floats(2.0f);
  auto* is = add_attr(n, "is", A::INTS);
  for (int v : {1, 2, 3}) is->add_ints(v);
  auto* ss = add_attr(n, "ss", A::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  auto* ts = add_attr(n, "ts", A::TENSORS);
  auto* t0 = ts->add_tensors();
  t0->set_data_type(kFloat);
  t0->add_float_data(4.0f);  // a scalar
  // A subgraph that reads 'x' from the enclosing graph.
  auto* g = add_attr(n, "g", A::GRAPH)->mutable_g();
  g->set_name("body");
  auto* gn = g->add_node();
  gn->set_op_type("Neg");
  gn->set_name("inner_neg");
  gn->add_input("x");
  gn->add_output("z");
  auto* gout = g->add_output();
  gout->set_name("z");
  auto* gs = add_attr(n, "gs", A::GRAPHS);
  *gs->add_graphs() = *g;
  *gs->add_graphs() = *g;

  auto m = load(mb, false);
  const Node& node = node_named(m.graph, "all_attrs");
  using K = Attribute::Kind;
  CHECK(node.attr("f")->kind == K::Float);
  CHECK(node.attr_float("f", 0) == 0.5f);
  CHECK(node.attr_int("i", 0) == -3);
  CHECK(node.attr_string("s", "") == "SAME_UPPER");
  CHECK(node.attr("t")->kind == K::Tensor);
  CHECK(node.attr("t")->t.to_int_vector() == std::vector<int64_t>{7, 8});
  CHECK(node.attr_floats("fs") == std::vector<float>{1.0f, 2.0f});
  CHECK(node.attr_ints("is") == std::vector<int64_t>{1, 2, 3});
  CHECK(node.attr("ss")->strings == std::vector<std::string>{"a", "b"});
  REQUIRE(node.attr("ts")->tensors.size() == 1);
  CHECK(node.attr("ts")->tensors[0].rank() == 0);
  CHECK(node.attr("ts")->tensors[0].item_as_double() == 4.0);
  REQUIRE(node.attr("g")->kind == K::Graph);
  REQUIRE(node.attr("g")->g->nodes.size() == 1);
  CHECK(node.attr("g")->g->nodes[0].op == OpId::Neg);
  CHECK(node.attr("g")->g->nodes[0].opset == 13);
  CHECK(node.attr("gs")->graphs.size() == 2);
  // A typed accessor on the wrong kind names the node and both kinds.
  CHECK_THROWS_WITH_AS(node.attr_int("s", 0),
                       doctest::Contains("'all_attrs' (Identity, opset 13): attribute 's' is "
                                         "string, expected int"),
                       Error);
}

TEST_CASE("IR-1 attributes without a type field get the type of the field that is set") {
  ModelBuilder mb(1, 1);
  mb.input("x", kFloat, {2});
  mb.output("y", kFloat, {2});
  auto* n = mb.node("LeakyRelu", {"x"}, {"y"}, "old");
  auto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_f(0.2f);
  auto* b = n->add_attribute();
  b->set_name("perm");
  b->add_ints(1);
  b->add_ints(0);
  auto m = load(mb, false);
  CHECK(m.graph.nodes[0].attr_float("alpha", 0) == 0.2f);
  CHECK(m.graph.nodes[0].attr_ints("perm") == std::vector<int64_t>{1, 0});
}

TEST_CASE("a repeated attribute is an error naming the node") {
  ModelBuilder mb;
  mb.input("x", kFloat, {2});
  mb.output("y", kFloat, {2});
  auto* n = mb.node("LeakyRelu", {"x"}, {"y"}, "twice");
  add_attr(n, "alpha", onnx::AttributeProto::FLOAT)->set_f(0.1f);
  add_attr(n, "alpha", onnx::AttributeProto::FLOAT)->set_f(0.2f);
  CHECK(contains(load_error(mb),
                 "node 'twice' (LeakyRelu, opset 13): attribute 'alpha' appears twice"));
}

TEST_CASE("zero strides, dilations or kernel sizes are an error naming the node, not a crash") {
  // libonnx's convPoolShapeInference divides by the strides: before this check a Conv, MaxPool,
  // AveragePool or LpPool with strides [0, 0] died of SIGFPE while loading (bad-input sweep).
  for (const char* op : {"Conv", "MaxPool", "AveragePool", "LpPool", "ConvTranspose"}) {
    for (const char* attr : {"strides", "dilations", "kernel_shape"}) {
      CAPTURE(op);
      CAPTURE(attr);
      const bool conv = std::string(op).rfind("Conv", 0) == 0;
      ModelBuilder mb(13);
      mb.input("x", kFloat, {1, 1, 6, 6});
      if (conv) mb.init_f32("w", {1, 1, 2, 2}, std::vector<float>(4, 1.0f));
      mb.output("y", kFloat, {1, 1, 3, 3});
      auto* n = mb.node(op, conv ? std::vector<std::string>{"x", "w"} : std::vector<std::string>{"x"},
                        {"y"}, "win");
      const bool pool = !conv;
      if (pool && std::string(attr) != "kernel_shape") {
        auto* k = add_attr(n, "kernel_shape", onnx::AttributeProto::INTS);
        k->add_ints(2);
        k->add_ints(2);
      }
      auto* a = add_attr(n, attr, onnx::AttributeProto::INTS);
      a->add_ints(0);
      a->add_ints(std::string(attr) == "kernel_shape" ? -2 : 0);
      const std::string err = load_error(mb);
      CHECK(contains(err, cat("test.onnx: node 'win' (", op, ", opset 13): ", attr)));
      CHECK(contains(err, "must all be >= 1"));
    }
  }
  // Inside a subgraph too.
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 1, 4, 4});
  mb.input("c", onnx::TensorProto_DataType_BOOL, {});
  mb.output("y", kFloat, {});
  auto* iff = mb.node("If", {"c"}, {"y"}, "branch");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = add_attr(iff, branch, onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(branch);
    auto* n = g->add_node();
    n->set_op_type("MaxPool");
    n->set_name(std::string("pool_") + branch);
    n->add_input("x");
    n->add_output(std::string("p_") + branch);
    auto* k = n->add_attribute();
    k->set_name("kernel_shape");
    k->set_type(onnx::AttributeProto::INTS);
    k->add_ints(2);
    k->add_ints(2);
    auto* s = n->add_attribute();
    s->set_name("strides");
    s->set_type(onnx::AttributeProto::INTS);
    s->add_ints(0);
    s->add_ints(1);
    auto* o = g->add_output();
    o->set_name(std::string("p_") + branch);
    set_type(o, kFloat, nullptr);
  }
  const std::string err = load_error(mb);
  CHECK(contains(err, "node 'pool_then_branch' (MaxPool, opset 13): strides [0, 1] must all be >= 1"));
}

TEST_CASE("a required input left empty is an error naming the node, not a crash in libonnx") {
  // A Shape whose input is "": libonnx's inference read its type through a null pointer (SIGSEGV).
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3});
  mb.output("y", kInt64, {2});
  mb.node("Shape", {""}, {"y"}, "shape_of_nothing");
  CHECK(contains(load_error(mb),
                 "test.onnx: node 'shape_of_nothing' (Shape, opset 13): required input 0 "
                 "('data') is missing"));
  // Optional inputs may be left out: Clip without min.
  ModelBuilder clip(13);
  clip.input("x", kFloat, {2, 3});
  clip.init_f32("hi", {}, {1.0f});
  clip.output("y", kFloat, {2, 3});
  clip.node("Clip", {"x", "", "hi"}, {"y"}, "clip");
  CHECK(load_error(clip).empty());
}

TEST_CASE("nodes out of file order reach libonnx sorted") {
  // s = Slice(x, starts, ends) is listed before the Mul that makes `ends`. (The sweep's crash was
  // a GPT export with a Slice rewired to read a later Mul: SIGSEGV in libonnx before sorting.)
  ModelBuilder mb(13);
  mb.input("x", kFloat, {4, 6});
  mb.init_i64("starts", {1}, {0});
  mb.init_i64("two", {1}, {2});
  mb.init_i64("one", {1}, {1});
  mb.output_unshaped("y", kFloat);
  mb.node("Relu", {"s"}, {"y"}, "relu");
  mb.node("Slice", {"x", "starts", "ends"}, {"s"}, "slice");
  mb.node("Mul", {"two", "one"}, {"ends"}, "mul");
  onnx_loader::Model m = load(mb);
  CHECK(m.graph.nodes.back().name == "relu");
  for (const auto& w : m.warnings) CHECK_FALSE(contains(w, "shape inference failed"));
  CHECK(m.graph.find_value_info("ends") != nullptr);  // inference reached the late Mul
}

TEST_CASE("a typeless graph input or an old IR version skip what would crash libonnx") {
  // Shape of a graph input that has no type: SIGSEGV in libonnx before (GPT probe mutant).
  ModelBuilder mb(13);
  mb.g()->add_input()->set_name("x");
  mb.output_unshaped("y", kInt64);
  mb.node("Shape", {"x"}, {"y"}, "shape");
  onnx_loader::Model m = load(mb);
  bool warned = false;
  for (const auto& w : m.warnings) warned = warned || contains(w, "graph input 'x' has no type");
  CHECK(warned);
  // IR version 0 with an initializer that is not a graph input: loads, shapes inferred.
  ModelBuilder old(13);
  old.m.set_ir_version(0);
  old.input("x", kFloat, {2, 3});
  old.init_i64("shape", {2}, {3, 2});
  old.output_unshaped("y", kFloat);
  old.node("Reshape", {"x", "shape"}, {"r"}, "reshape");
  old.node("Shape", {"r"}, {"s"}, "shape");
  old.node("Reshape", {"r", "s"}, {"y"}, "again");
  onnx_loader::Model o = load(old);
  CHECK(o.graph.nodes.size() == 3);
}

TEST_CASE("a graph that declares no outputs is an error naming the file and the graph") {
  // Before: `eval` crashed (SIGSEGV) and `check` printed a bare vector::_M_range_check.
  ModelBuilder mb;
  mb.input("x", kFloat, {2});
  mb.node("Relu", {"x"}, {"y"}, "relu");
  mb.g()->set_name("headless");
  CHECK(contains(load_error(mb),
                 "test.onnx: graph 'headless' declares no outputs (an ONNX graph needs at least one)"));
}

TEST_CASE("opset imports: versions per domain, unknown domains rejected by name") {
  ModelBuilder mb(13);
  auto* ml = mb.m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  auto* unused = mb.m.add_opset_import();  // imported but not used: fine
  unused->set_domain("com.example.unused");
  unused->set_version(1);
  mb.input("x", kFloat, {2});
  mb.output("y", kFloat, {2});
  mb.node("Relu", {"x"}, {"y"}, "relu");
  auto m = load(mb);
  CHECK(m.graph.opsets.at("") == 13);
  CHECK(m.graph.opsets.at("ai.onnx.ml") == 3);
  CHECK(m.graph.nodes[0].opset == 13);
  CHECK(m.graph.nodes[0].op == OpId::Relu);

  SUBCASE("a node in an unknown domain") {
    auto* n = mb.node("FastGelu", {"y"}, {"z"}, "ms_gelu");
    n->set_domain("com.microsoft");
    mb.g()->mutable_output(0)->set_name("z");
    std::string msg = load_error(mb);
    CHECK(contains(msg, "test.onnx"));
    CHECK(contains(msg, "node 'ms_gelu'"));
    CHECK(contains(msg, "unknown operator domain 'com.microsoft'"));
    CHECK_THROWS_AS(load(mb), Unsupported);
  }
  SUBCASE("a node in a known domain the model does not import") {
    auto* n = mb.node("Adam", {"y"}, {"z"}, "opt");
    n->set_domain("ai.onnx.preview.training");
    mb.g()->mutable_output(0)->set_name("z");
    std::string msg = load_error(mb);
    CHECK(contains(msg, "node 'opt' (Adam)"));
    CHECK(contains(msg, "imports no opset for domain 'ai.onnx.preview.training'"));
  }
  SUBCASE("the domain spelled 'ai.onnx' is the default domain") {
    mb.g()->mutable_node(0)->set_domain("ai.onnx");
    auto m2 = load(mb);
    CHECK(m2.graph.nodes[0].domain.empty());
    CHECK(m2.graph.nodes[0].op == OpId::Relu);
  }
  SUBCASE("an op the runtime does not know still loads, as OpId::Unknown") {
    mb.g()->mutable_node(0)->set_op_type("FooBar");
    auto m2 = load(mb);
    CHECK(m2.graph.nodes[0].op == OpId::Unknown);
    CHECK(m2.graph.nodes[0].describe() == "node 'relu' (FooBar, opset 13)");
  }
}

TEST_CASE("old-IR models: initializers also listed as graph inputs stay initializers") {
  ModelBuilder mb(7, 3);
  mb.input("x", kFloat, {1, 2});
  mb.input("W", kFloat, {2, 2});  // IR 3: every initializer is also an input
  mb.init_f32("W", {2, 2}, {1, 0, 0, 1});
  mb.output("y", kFloat, {1, 2});
  mb.node("MatMul", {"x", "W"}, {"y"}, "mm");
  auto m = load(mb);
  CHECK(m.ir_version == 3);
  REQUIRE(m.graph.inputs.size() == 1);
  CHECK(m.graph.inputs[0].name == "x");
  CHECK(m.graph.initializers.count("W") == 1);
  CHECK(m.graph.nodes[0].opset == 7);

  SUBCASE("no opset_import before IR 3 means opset 1; from IR 3 on it is an error") {
    mb.m.clear_opset_import();
    CHECK_THROWS_WITH_AS(load(mb), doctest::Contains("imports no opset; is the file truncated?"),
                         Error);
    mb.m.set_ir_version(2);
    auto m1 = load(mb, false);
    CHECK(m1.graph.opsets.at("") == 1);
    CHECK(m1.graph.nodes[0].opset == 1);
  }
}

TEST_CASE("nodes out of order are sorted; a cycle is an error naming a node") {
  ModelBuilder mb;
  mb.input("x", kFloat, {2});
  mb.output("y", kFloat, {2});
  mb.node("Relu", {"b"}, {"y"}, "third");
  mb.node("Neg", {"a"}, {"b"}, "second");
  mb.node("Abs", {"x"}, {"a"}, "first");
  auto m = load(mb);
  REQUIRE(m.graph.nodes.size() == 3);
  CHECK(m.graph.nodes[0].name == "first");
  CHECK(m.graph.nodes[1].name == "second");
  CHECK(m.graph.nodes[2].name == "third");

  SUBCASE("cycle") {
    mb.g()->mutable_node(2)->set_input(0, "y");  // first reads y, which depends on first
    std::string msg = load_error(mb);
    CHECK(contains(msg, "cycle"));
    CHECK((contains(msg, "'first'") || contains(msg, "'second'") || contains(msg, "'third'")));
  }
  SUBCASE("an input nothing produces") {
    mb.g()->mutable_node(2)->set_input(0, "ghost");
    std::string msg = load_error(mb);
    CHECK(contains(msg, "node 'first' (Abs, opset 13): input 'ghost' is not a graph input"));
  }
  SUBCASE("two nodes writing the same value") {
    mb.node("Abs", {"x"}, {"a"}, "again");
    CHECK(contains(load_error(mb), "output 'a' is already produced by another node"));
  }
  SUBCASE("a graph output nothing produces") {
    mb.output("missing", kFloat, {2});
    CHECK(contains(load_error(mb), "output 'missing' is not produced"));
  }
}

TEST_CASE("ONNX shape inference fills value_info of a small Conv/Gemm model") {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"N", 3, 8, 8});
  mb.init_f32("w", {4, 3, 3, 3}, std::vector<float>(4 * 3 * 3 * 3, 0.1f));
  mb.init_f32("b", {4}, {0, 0, 0, 0});
  // Over 1 MiB: shape inference sees its dims but not its data.
  mb.init_f32("fc_w", {144, 2000}, std::vector<float>(144 * 2000, 0.01f));
  mb.init_f32("fc_b", {2000}, std::vector<float>(2000, 0.0f));
  mb.init_i64("shape", {2}, {0, -1});
  mb.output_unshaped("logits", kFloat);
  mb.node("Conv", {"x", "w", "b"}, {"conv"}, "conv1");
  mb.node("Relu", {"conv"}, {"act"}, "relu1");
  mb.node("Reshape", {"act", "shape"}, {"flat"}, "flatten");
  mb.node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}, "fc");
  auto m = load(mb);
  CHECK(m.warnings.empty());
  const ValueInfo* conv = m.graph.find_value_info("conv");
  REQUIRE(conv != nullptr);
  CHECK(conv->dtype == DType::F32);
  CHECK(conv->shape_string() == "[N, 4, 6, 6]");
  REQUIRE(m.graph.find_value_info("flat") != nullptr);
  // Data propagation through the Reshape's shape constant: [N, 144].
  CHECK(m.graph.find_value_info("flat")->shape_string() == "[N, 144]");
  CHECK(m.graph.outputs[0].shape_string() == "[N, 2000]");
  // The model's own proto keeps the big weight's data.
  CHECK(m.graph.initializers.at("fc_w").numel() == 144 * 2000);

  SUBCASE("skipped when asked") {
    auto m2 = load(mb, false);
    CHECK(m2.graph.find_value_info("conv") == nullptr);
    CHECK(m2.graph.outputs[0].shape_string() == "?");
  }
}

TEST_CASE("opset 18 models load: shape inference skipped with a warning") {
  REQUIRE(onnx_loader::libonnx_max_opset() >= 17);
  // ReduceMean-18 takes axes as an input, Split-18 takes split as an input.
  ModelBuilder mb(18);
  mb.input("x", kFloat, {2, 6});
  mb.init_i64("axes", {1}, {1});
  mb.init_i64("split", {2}, {2, 4});
  mb.output("mean", kFloat, {2, 1});
  mb.output("left", kFloat, {2, 2});
  mb.output("right", kFloat, {2, 4});
  add_attr(mb.node("ReduceMean", {"x", "axes"}, {"mean"}, "mean"), "keepdims",
           onnx::AttributeProto::INT)
      ->set_i(1);
  add_attr(mb.node("Split", {"x", "split"}, {"left", "right"}, "split"), "axis",
           onnx::AttributeProto::INT)
      ->set_i(1);
  auto m = load(mb);
  CHECK(m.graph.opsets.at("") == 18);
  REQUIRE(m.warnings.size() == 1);
  CHECK(contains(m.warnings[0], "opset 18 is newer than libonnx knows"));
  CHECK(contains(m.warnings[0], "shape inference skipped"));
  const Node& mean = node_named(m.graph, "mean");
  CHECK(mean.opset == 18);
  CHECK(mean.inputs == std::vector<std::string>{"x", "axes"});
  CHECK(node_named(m.graph, "split").inputs == std::vector<std::string>{"x", "split"});

  // And they run, with shapes from the actual tensors (a batch of 3, not the declared 2).
  Executor exec(m.graph);
  Tensor x(DType::F32, {3, 6});
  for (int64_t i = 0; i < 18; ++i) x.data<float>()[i] = static_cast<float>(i);
  auto out = exec.run({{"x", x}});
  REQUIRE(out.size() == 3);
  CHECK(out[0].shape() == Shape{3, 1});
  CHECK(out[0].to_float_vector() == std::vector<float>{2.5f, 8.5f, 14.5f});
  CHECK(out[1].shape() == Shape{3, 2});
  CHECK(out[1].to_float_vector() == std::vector<float>{0, 1, 6, 7, 12, 13});
  CHECK(out[2].shape() == Shape{3, 4});
  CHECK(out[2].to_float_vector() == std::vector<float>{2, 3, 4, 5, 8, 9, 10, 11, 14, 15, 16, 17});
}

TEST_CASE("files that are not ONNX models") {
  CHECK_THROWS_WITH_AS(load_model_from_bytes("", "", {}, "empty.onnx"),
                       doctest::Contains("empty.onnx: file is empty"), Error);
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  CHECK_THROWS_WITH_AS(load_model_from_bytes(png, "", {}, "a.png"),
                       doctest::Contains("a.png: not an ONNX model"), Error);
  CHECK_THROWS_WITH_AS(load_model_from_bytes("hello, world\n", "", {}, "notes.txt"),
                       doctest::Contains("notes.txt: not an ONNX model"), Error);
  ModelBuilder mb;
  mb.init_f32("w", {256}, std::vector<float>(256, 1.0f));
  mb.output("w", kFloat, {256});
  const std::string bytes = mb.bytes();
  CHECK_THROWS_WITH_AS(load_model_from_bytes(bytes.substr(0, bytes.size() / 2), "", {}, "cut.onnx"),
                       doctest::Contains("cut.onnx: not an ONNX model"), Error);
  // Cut exactly after the graph (fields serialise in number order; opset_import follows graph):
  // the prefix parses as a message, and is still refused.
  ModelBuilder no_opset = mb;
  no_opset.m.clear_opset_import();
  const std::string prefix = no_opset.bytes();
  REQUIRE(bytes.compare(0, prefix.size(), prefix) == 0);
  CHECK_THROWS_WITH_AS(load_model_from_bytes(bytes.substr(0, prefix.size()), "", {}, "cut.onnx"),
                       doctest::Contains("cut.onnx: the model (IR version 8) imports no opset"),
                       Error);
  CHECK_THROWS_WITH_AS(onnx_loader::load_model("/nonexistent/model.onnx"),
                       doctest::Contains("/nonexistent/model.onnx: no such file"), Error);
}
