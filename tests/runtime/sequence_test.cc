// Sequences and optionals (runtime/cpu/kernels/sequence.cc, SequenceMap in control_flow.cc;
// values of runtime/tensor.h's ValueKind): what ONNX's conformance cases leave out — negative
// positions, the ranges' errors, SplitToSequence's uneven chunks and keepdims = 0, stacking on a
// negative axis, empty optionals, SequenceMap with a tensor beside the sequence — plus the
// executor's guards (a sequence fed where a tensor is declared, a sequence given to Add) and
// the .pb round trip of sequence and optional values.
#include <doctest/doctest.h>

#include <filesystem>

#include "node_builder.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "single_node.h"

using namespace oat;
using oat_test::make_node;
using oat_test::make_node_outputs;

namespace {

Tensor fv(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor pos(int64_t p) { return Tensor::scalar<int64_t>(p); }

// A graph of `nodes` with the given typed inputs (name, kind) and outputs, run on `feeds`.
std::vector<Tensor> run(std::vector<Node> nodes, std::vector<std::pair<std::string, ValueKind>> ins,
                        std::vector<std::string> outs, const std::map<std::string, Tensor>& feeds) {
  Graph g;
  g.opsets[""] = 17;
  for (auto& [name, kind] : ins) {
    ValueInfo v;
    v.name = name;
    v.kind = kind;
    v.dtype = feeds.at(name).dtype();
    g.inputs.push_back(v);
  }
  for (auto& o : outs) g.outputs.push_back(ValueInfo{o, DType::Undefined, std::nullopt});
  g.nodes = std::move(nodes);
  Executor ex(g);
  return ex.run(feeds);
}

std::string error_of(std::function<void()> f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const ValueKind T = ValueKind::Tensor, S = ValueKind::Sequence;

}  // namespace

TEST_CASE("sequence: insert, at and erase with negative positions; their ranges are errors") {
  const Tensor a = fv({1}, {1}), b = fv({2}, {2, 3}), c = fv({1}, {4});
  auto out = run({make_node("mk", "SequenceConstruct", {"a", "b"}, "s"),
                  make_node("ins", "SequenceInsert", {"s", "c", "p"}, "s2"),  // before the last
                  make_node("at", "SequenceAt", {"s2", "q"}, "x"),
                  make_node("er", "SequenceErase", {"s2"}, "s3"),  // the last
                  make_node("len", "SequenceLength", {"s3"}, "n")},
                 {{"a", T}, {"b", T}, {"c", T}, {"p", T}, {"q", T}}, {"s2", "x", "s3", "n"},
                 {{"a", a}, {"b", b}, {"c", c}, {"p", pos(-1)}, {"q", pos(-2)}});
  REQUIRE(out[0].kind() == ValueKind::Sequence);
  REQUIRE(out[0].items().size() == 3);
  CHECK(out[0].items()[1].to_float_vector() == std::vector<float>{4});
  CHECK(out[1].to_float_vector() == std::vector<float>{4});  // s2[-2]
  CHECK(out[2].items().size() == 2);
  CHECK(out[2].items()[1].to_float_vector() == std::vector<float>{4});
  CHECK(out[3].item_as_int() == 2);

  const std::string e = error_of([&] {
    run({make_node("mk", "SequenceConstruct", {"a"}, "s"),
         make_node("at", "SequenceAt", {"s", "q"}, "x")},
        {{"a", T}, {"q", T}}, {"x"}, {{"a", a}, {"q", pos(1)}});
  });
  CHECK_MESSAGE(e.find("node 'at' (SequenceAt") != std::string::npos, e);
  CHECK_MESSAGE(e.find("position 1 is out of range for a sequence of 1") != std::string::npos, e);
  const std::string mixed = error_of([&] {
    run({make_node("mk", "SequenceConstruct", {"a", "i"}, "s")}, {{"a", T}, {"i", T}}, {"s"},
        {{"a", a}, {"i", pos(3)}});
  });
  CHECK_MESSAGE(mixed.find("a sequence has one element type") != std::string::npos, mixed);
  const std::string empty = error_of([&] {
    run({make_node("mk", "SequenceEmpty", {}, "s"), make_node("er", "SequenceErase", {"s"}, "t")},
        {}, {"t"}, {});
  });
  CHECK_MESSAGE(empty.find("cannot erase from an empty sequence") != std::string::npos, empty);
}

TEST_CASE("SplitToSequence and ConcatFromSequence: uneven chunks, keepdims 0, stacking") {
  const Tensor x = oat_test::iota_f({2, 5});
  Attribute axis1 = oat_test::attr_i(1);
  auto out = run({make_node("split", "SplitToSequence", {"x", "k"}, "s", {{"axis", axis1}}),
                  make_node("cat", "ConcatFromSequence", {"s"}, "y", {{"axis", axis1}}),
                  make_node("rows", "SplitToSequence", {"x"}, "r",
                            {{"axis", oat_test::attr_i(0)}, {"keepdims", oat_test::attr_i(0)}}),
                  make_node("stack", "ConcatFromSequence", {"r"}, "z",
                            {{"axis", oat_test::attr_i(-1)}, {"new_axis", oat_test::attr_i(1)}})},
                 {{"x", T}, {"k", T}}, {"s", "y", "r", "z"}, {{"x", x}, {"k", pos(2)}});
  REQUIRE(out[0].items().size() == 3);  // 2 + 2 + 1 columns
  CHECK(out[0].items()[2].shape() == Shape{2, 1});
  CHECK(out[0].items()[2].to_float_vector() == std::vector<float>{4, 9});
  CHECK(out[1].shape() == Shape{2, 5});
  CHECK(out[1].to_float_vector() == x.to_float_vector());
  REQUIRE(out[2].items().size() == 2);
  CHECK(out[2].items()[0].shape() == Shape{5});  // squeezed
  // The two rows stacked on a new last axis: z[j, i] = x[i, j].
  CHECK(out[3].shape() == Shape{5, 2});
  CHECK(out[3].to_float_vector() == std::vector<float>{0, 5, 1, 6, 2, 7, 3, 8, 4, 9});

  const std::string e = error_of([&] {
    run({make_node("split", "SplitToSequence", {"x", "k"}, "s", {{"axis", axis1}})},
        {{"x", T}, {"k", T}}, {"s"}, {{"x", x}, {"k", Tensor::from_vector<int64_t>({2}, {2, 2})}});
  });
  CHECK_MESSAGE(e.find("split lengths sum to 4, the axis has 5") != std::string::npos, e);
  const std::string shapes = error_of([&] {
    run({make_node("mk", "SequenceConstruct", {"a", "b"}, "s"),
         make_node("cat", "ConcatFromSequence", {"s"}, "y", {{"axis", oat_test::attr_i(0)}})},
        {{"a", T}, {"b", T}}, {"y"}, {{"a", fv({1, 2}, {1, 2})}, {"b", fv({1, 3}, {1, 2, 3})}});
  });
  CHECK_MESSAGE(shapes.find("item 1 has shape [1, 3], item 0 [1, 2]") != std::string::npos, shapes);
}

TEST_CASE("optionals: empty of a declared type, has/get, and the empty one's error") {
  Attribute type;
  type.kind = Attribute::Kind::TypeProto;
  type.type_kind = ValueKind::Sequence;
  type.type_elem = DType::F32;
  auto out = run({make_node("none", "Optional", {}, "o", {{"type", type}}),
                  make_node("has", "OptionalHasElement", {"o"}, "h"),
                  make_node("some", "Optional", {"x"}, "p"),
                  make_node("has2", "OptionalHasElement", {"p"}, "h2"),
                  make_node("get", "OptionalGetElement", {"p"}, "v")},
                 {{"x", T}}, {"o", "h", "h2", "v"}, {{"x", fv({2}, {7, 8})}});
  CHECK(out[0].kind() == ValueKind::Optional);
  CHECK(out[0].inner_kind() == ValueKind::Sequence);
  CHECK(out[0].items().empty());
  CHECK(out[1].item_as_int() == 0);
  CHECK(out[2].item_as_int() == 1);
  CHECK(out[3].to_float_vector() == std::vector<float>{7, 8});
  const std::string e = error_of([&] {
    run({make_node("none", "Optional", {}, "o", {{"type", type}}),
         make_node("get", "OptionalGetElement", {"o"}, "v")},
        {}, {"v"}, {});
  });
  CHECK_MESSAGE(e.find("node 'get' (OptionalGetElement") != std::string::npos, e);
  CHECK_MESSAGE(e.find("'o' is an empty optional") != std::string::npos, e);
}

TEST_CASE("SequenceMap: a tensor beside the sequence is given whole to every run") {
  // body(item, t) = item + t
  auto body = std::make_shared<Graph>();
  body->inputs = {ValueInfo{"item", DType::F32, std::nullopt},
                  ValueInfo{"t", DType::F32, std::nullopt}};
  body->outputs = {ValueInfo{"sum", DType::F32, std::nullopt}};
  body->nodes = {make_node("add", "Add", {"item", "t"}, "sum")};
  Attribute b;
  b.kind = Attribute::Kind::Graph;
  b.g = body;
  auto out = run(
      {make_node("map", "SequenceMap", {"s", "t"}, "y", {{"body", b}}, 17)}, {{"s", S}, {"t", T}},
      {"y"},
      {{"s", Tensor::sequence(DType::F32, {fv({2}, {1, 2}), fv({1}, {5})})}, {"t", fv({1}, {10})}});
  REQUIRE(out[0].items().size() == 2);
  CHECK(out[0].items()[0].to_float_vector() == std::vector<float>{11, 12});
  CHECK(out[0].items()[1].to_float_vector() == std::vector<float>{15});
}

TEST_CASE("the executor gives sequences only to the ops that take them, and checks fed kinds") {
  const Tensor seq = Tensor::sequence(DType::F32, {fv({1}, {1})});
  std::string e = error_of([&] {
    run({make_node("add", "Add", {"s", "s"}, "y")}, {{"s", S}}, {"y"}, {{"s", seq}});
  });
  CHECK_MESSAGE(e.find("node 'add' (Add") != std::string::npos, e);
  CHECK_MESSAGE(e.find("is a sequence(float32) of 1; Add takes tensors") != std::string::npos, e);
  e = error_of([&] {
    run({make_node("id", "Identity", {"x"}, "y")}, {{"x", T}}, {"y"}, {{"x", seq}});
  });
  CHECK_MESSAGE(
      e.find("input 'x' is a sequence(float32) of 1, expected a tensor") != std::string::npos, e);
  // Identity passes a sequence through.
  auto out = run({make_node("id", "Identity", {"x"}, "y")}, {{"x", S}}, {"y"}, {{"x", seq}});
  CHECK(out[0].kind() == ValueKind::Sequence);
  // Reading a sequence's data as a tensor throws instead of reading nothing.
  CHECK_THROWS_WITH(seq.data<float>(), doctest::Contains("is not a tensor"));
}

TEST_CASE("sequence and optional values round-trip through their .pb files") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "oat_sequence_pb";
  fs::create_directories(dir);
  const Tensor seq = Tensor::sequence(DType::F32, {fv({2}, {1, 2}), fv({1, 1}, {3})});
  onnx_loader::write_value_pb(seq, "s", (dir / "s.pb").string());
  const Tensor back =
      onnx_loader::read_value_pb((dir / "s.pb").string(), ValueKind::Sequence).tensor;
  REQUIRE(back.kind() == ValueKind::Sequence);
  REQUIRE(back.items().size() == 2);
  CHECK(back.items()[1].shape() == Shape{1, 1});
  CHECK(back.items()[1].to_float_vector() == std::vector<float>{3});
  const Tensor opt = Tensor::optional(DType::F32, ValueKind::Sequence, seq);
  onnx_loader::write_value_pb(opt, "o", (dir / "o.pb").string());
  const Tensor ob = onnx_loader::read_value_pb((dir / "o.pb").string(), ValueKind::Optional).tensor;
  REQUIRE(ob.kind() == ValueKind::Optional);
  CHECK(ob.inner_kind() == ValueKind::Sequence);
  CHECK(ob.items().at(0).items().size() == 2);
  onnx_loader::write_value_pb(Tensor::optional(DType::F32, ValueKind::Tensor), "e",
                              (dir / "e.pb").string());
  CHECK(onnx_loader::read_value_pb((dir / "e.pb").string(), ValueKind::Optional)
            .tensor.items()
            .empty());
  // A tensor file where a sequence is expected is a named error.
  onnx_loader::write_tensor_pb(fv({1}, {1}), "t", (dir / "t.pb").string());
  CHECK_THROWS_WITH(onnx_loader::read_value_pb((dir / "t.pb").string(), ValueKind::Optional),
                    doctest::Contains("t.pb"));
  fs::remove_all(dir);
}

TEST_CASE("a graph with sequences and an empty Optional is written, checked, loaded and run") {
  // x -> SplitToSequence (chunks of 2) -> SequenceLength; an empty optional(sequence(float))
  // -> OptionalHasElement. The writer keeps the sequence output's type and Optional's `type`.
  Attribute type;
  type.kind = Attribute::Kind::TypeProto;
  type.type_kind = ValueKind::Sequence;
  type.type_elem = DType::F32;
  Graph g;
  g.name = "seq";
  g.opsets[""] = 15;
  ValueInfo x{"x", DType::F32, std::vector<Dim>{Dim{5, ""}}};
  g.inputs = {x};
  ValueInfo s{"s", DType::F32, std::nullopt};
  s.kind = ValueKind::Sequence;
  g.outputs = {s, ValueInfo{"n", DType::I64, std::vector<Dim>{}},
               ValueInfo{"h", DType::Bool, std::vector<Dim>{}}};
  g.initializers["k"] = pos(2);
  g.nodes = {make_node("split", "SplitToSequence", {"x", "k"}, "s", {}, 15),
             make_node("len", "SequenceLength", {"s"}, "n", {}, 15),
             make_node("none", "Optional", {}, "o", {{"type", type}}, 15),
             make_node("has", "OptionalHasElement", {"o"}, "h", {}, 15)};
  const std::string bytes = onnx_loader::serialize_graph(g);  // runs the ONNX checker
  onnx_loader::Model m = onnx_loader::load_model_from_bytes(bytes, "");
  CHECK(m.graph.outputs[0].kind == ValueKind::Sequence);
  CHECK(m.graph.outputs[0].type_string() == "sequence(float32)");
  Executor ex(m.graph);
  auto out = ex.run({{"x", oat_test::iota_f({5})}});
  REQUIRE(out[0].items().size() == 3);
  CHECK(out[0].items()[2].to_float_vector() == std::vector<float>{4});
  CHECK(out[1].item_as_int() == 3);
  CHECK(out[2].item_as_int() == 0);
}
