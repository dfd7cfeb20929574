// The inference export (convert/export.h) and the --auto search (convert/auto_search.h), in
// process: schema-driven pins, Constant folding, BatchNormalization parameters by opset, the
// deviation measure, and the search on graphs where the right answer is known.
#include "convert/export.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "convert/auto_search.h"
#include "convert/graph_build.h"
#include "runtime/executor.h"

using namespace oat;
using namespace oat::convert;
using namespace oat_test;

namespace {

Tensor filled(Shape shape, float v) {
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

// x -> mmA (weights 3e4: overflows FP16) -> * 1e-3 ─┐
// x -> mmB (weights 3e4: overflows FP16) -> * 1e-3 ─┼─ Sum -> y
// x -> mmC (weights 0.5)                 ───────────┘
Graph two_overflows() {
  GraphBuild b;
  b.input("x", DType::F32, {8, 4});
  b.init("WA", filled({4, 4}, 30000.0f)).init("WB", filled({4, 4}, 30000.0f));
  b.init("WC", filled({4, 4}, 0.5f)).init("s", Tensor::scalar<float>(1e-3f));
  b.node("MatMul", {"x", "WA"}, {"a"}, "mmA");
  b.node("MatMul", {"x", "WB"}, {"b"}, "mmB");
  b.node("MatMul", {"x", "WC"}, {"c"}, "mmC");
  b.node("Mul", {"a", "s"}, {"a2"}, "scaleA");
  b.node("Mul", {"b", "s"}, {"b2"}, "scaleB");
  b.node("Sum", {"a2", "b2", "c"}, {"y"}, "sum");
  b.output("y");
  return b.g;
}

}  // namespace

TEST_SUITE("export") {
  TEST_CASE("deviation of ZipMap's sequence of maps: its values as numbers, its keys exactly") {
    auto maps = [](std::vector<int64_t> keys, std::vector<float> a, std::vector<float> b) {
      const Tensor k = Tensor::from_vector<int64_t>({static_cast<int64_t>(keys.size())}, keys);
      return Tensor::sequence(
          DType::F32, {Tensor::map(k, Tensor::from_vector<float>({2}, a)),
                       Tensor::map(k, Tensor::from_vector<float>({2}, b))});
    };
    const Tensor ref = maps({0, 1}, {0.25f, 0.75f}, {0.5f, 0.5f});
    OutputDeviation d = deviation("p", maps({0, 1}, {0.25f, 0.75f}, {0.5f, 0.4375f}), ref);
    CHECK(d.max_abs == doctest::Approx(0.0625));
    CHECK(d.max_ref == doctest::Approx(0.75));
    CHECK(d.top1_agree == -1);
    CHECK(std::isinf(deviation("p", maps({0, 2}, {0.25f, 0.75f}, {0.5f, 0.5f}), ref).rel));
    CHECK(std::isinf(deviation("p", Tensor::sequence(DType::F32, {ref.items()[0]}), ref).rel));
  }

  TEST_CASE("deviation: relative to the largest |reference|, overflow is infinite, top-1 by row") {
    const Tensor ref = Tensor::from_vector<float>({2, 3}, {1, 4, 2, -8, 0, 1});
    const Tensor got = Tensor::from_vector<float>({2, 3}, {1, 3.5f, 2, -8, 1.25f, 1});
    OutputDeviation d = deviation("y", got, ref);
    CHECK(d.max_abs == doctest::Approx(1.25));
    CHECK(d.max_ref == doctest::Approx(8));
    CHECK(d.rel == doctest::Approx(1.25 / 8));
    CHECK(d.rows == 2);
    CHECK(d.top1_agree == 1);  // row 1: class 1 both; row 2: class 1 vs the reference's 2
    const Tensor inf = Tensor::from_vector<float>({2, 3}, {1, INFINITY, 2, -8, 0, 1});
    CHECK(std::isinf(deviation("y", inf, ref).rel));
    CHECK_THROWS_WITH_AS(deviation("y", Tensor::zeros(DType::F32, {3, 2}), ref),
                         doctest::Contains("shape [3, 2]"), Error);
  }

  TEST_CASE("Constant nodes become initializers, except a graph output") {
    GraphBuild b;
    b.input("x");
    b.node("Constant", {}, {"k"}, "k").attrs["value"] = tensor_attr(filled({4}, 2.0f));
    b.node("Constant", {}, {"out_k"}, "out_k").attrs["value"] = tensor_attr(filled({1}, 1.0f));
    b.node("Mul", {"x", "k"}, {"y"}, "mul");
    b.output("y").output("out_k");
    Graph g = b.g;
    CHECK(constants_to_initializers(g) == 1);
    CHECK(g.initializers.count("k"));
    CHECK(find_node(g, "k") == nullptr);
    CHECK(find_node(g, "out_k") != nullptr);
  }

  TEST_CASE("BatchNormalization: FP16 parameters before opset 15 (one T), FP32 from 15 on") {
    for (int64_t opset : {13, 15}) {
      CAPTURE(opset);
      GraphBuild b;
      b.g.opsets[""] = opset;
      b.input("x", DType::F32, {1, 2, 3, 3});
      b.weight("W", {2, 2, 1, 1}).weight("scale", {2}, 1.0f).weight("bias", {2}, 0.0f);
      b.weight("mean", {2}, 0.1f).weight("var", {2}, 1.0f);
      b.node("Conv", {"x", "W"}, {"c"}, "conv").opset = opset;
      b.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"n"}, "bn").opset =
          opset;
      b.node("Conv", {"n", "W"}, {"y"}, "conv2").opset = opset;
      b.output("y");
      const ConvertedGraph c = convert_for_inference(b.g, {});
      CHECK(c.schema_pins.empty());
      CHECK(entry(c.plan, "bn").dtype == DType::F16);
      const DType params = opset < 15 ? DType::F16 : DType::F32;
      for (const char* p : {"scale", "bias", "mean", "var"}) {
        CAPTURE(p);
        CHECK(c.graph.initializers.at(p).dtype() == params);
      }
    }
  }

  TEST_CASE("BatchNormalization: a parameter also read through an Identity gets one Cast name") {
    // torch's eval-mode DenseNet: a zero conv bias is written as Identity(BN bias). apply_plan
    // casts the bias for the FP16 Identity ("bias_to_fp16"); the FP16 BN parameters need a
    // Cast of it too, which must not reuse that name (the checker wants SSA).
    GraphBuild b;
    b.input("x", DType::F32, {1, 2, 3, 3});
    b.weight("W", {2, 2, 1, 1}).weight("scale", {2}, 1.0f).weight("bias", {2}, 0.0f);
    b.weight("mean", {2}, 0.1f).weight("var", {2}, 1.0f);
    b.node("Conv", {"x", "W"}, {"c"}, "conv");
    b.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"n"}, "bn");
    b.node("Identity", {"bias"}, {"conv2_bias"}, "alias");
    b.node("Conv", {"n", "W", "conv2_bias"}, {"y"}, "conv2");
    b.output("y");
    const ConvertedGraph c = convert_for_inference(b.g, {});
    CHECK(entry(c.plan, "bn").dtype == DType::F16);
    std::set<std::string> written;
    for (const Node& n : c.graph.nodes)
      for (const auto& o : n.outputs) CHECK_MESSAGE(written.insert(o).second, o, " written twice");
    const Tensor x = Tensor::from_vector<float>({1, 2, 3, 3}, std::vector<float>(18, 0.5f));
    CHECK(Executor(c.graph).run({{"x", cast_tensor(x, DType::F16)}})[0].dtype() == DType::F16);
  }

  TEST_CASE("--to bf16 keeps Conv FP32 where ONNX has no bfloat16 Conv, with the reason") {
    GraphBuild b;
    b.g.opsets[""] = 17;
    b.input("x", DType::F32, {1, 2, 3, 3});
    b.weight("W", {2, 2, 1, 1}).weight("M", {3, 3});
    b.node("Conv", {"x", "W"}, {"c"}, "conv").opset = 17;
    b.node("MatMul", {"c", "M"}, {"y"}, "mm").opset = 17;
    b.output("y");
    ExportOptions o;
    o.paint.low = DType::BF16;
    const ConvertedGraph c = convert_for_inference(b.g, o);
    REQUIRE(c.schema_pins.size() == 1);
    CHECK(c.schema_pins[0].find("conv (Conv, opset 17): input 0 'x' cannot be bfloat16") !=
          std::string::npos);
    CHECK(entry(c.plan, "conv").dtype == DType::F32);
    CHECK(entry(c.plan, "mm").dtype == DType::BF16);
    CHECK(c.graph.initializers.at("W").dtype() == DType::F32);
    CHECK(c.graph.initializers.at("M").dtype() == DType::BF16);
  }

  TEST_CASE("auto_search pins exactly the two overflowing MatMuls, not the harmless one") {
    const Graph g = two_overflows();
    const auto feeds = sample_inputs(g, 8);
    // The op lists alone overflow.
    const ConvertedGraph plain = convert_for_inference(g, {});
    CHECK(std::isinf(worst_rel(compare_outputs(g, plain.graph, feeds))));

    AutoSearchOptions ao;
    ao.rtol = 1e-2;
    const AutoSearchResult r = auto_search(g, feeds, {}, ao);
    CHECK(r.met);
    CHECK(std::isinf(r.initial_worst_rel));
    CHECK(r.fp32_nodes == std::vector<std::string>{"mmA", "mmB"});
    CHECK(worst_rel(r.deviation) <= 1e-2);
    // Two pins, then the prune phase tried dropping each (both needed): 1 + 2 + 2 runs.
    CHECK(r.evaluations == 5);
    for (const auto& s : r.steps) CHECK_FALSE(s.pruned);

    // The reported deviation is that of the conversion with those pins.
    ExportOptions pinned;
    pinned.paint.fp32_nodes = {"mmA", "mmB"};
    const ConvertedGraph c = convert_for_inference(g, pinned);
    CHECK(worst_rel(compare_outputs(g, c.graph, feeds)) == doctest::Approx(worst_rel(r.deviation)));
  }

  TEST_CASE(
      "auto_search: nothing to pin when the op lists already meet --rtol; max_pins bounds it") {
    const Graph g = two_overflows();
    const auto feeds = sample_inputs(g, 8);
    AutoSearchOptions loose;
    loose.rtol = 1e9;  // only an overflow would break this
    ExportOptions base;
    base.paint.fp32_nodes = {"mmA", "mmB"};
    const AutoSearchResult none = auto_search(g, feeds, base, loose);
    CHECK(none.met);
    CHECK(none.fp32_nodes.empty());
    CHECK(none.evaluations == 1);

    AutoSearchOptions one;
    one.rtol = 1e-2;
    one.max_pins = 1;
    const AutoSearchResult capped = auto_search(g, feeds, {}, one);
    CHECK_FALSE(capped.met);
    CHECK(capped.fp32_nodes.size() == 1);
  }

  TEST_CASE("sample_inputs binds dynamic dims to the batch and refuses an unknown rank") {
    GraphBuild b;
    ValueInfo v;
    v.name = "x";
    v.dtype = DType::F16;
    v.shape = std::vector<Dim>{Dim{-1, "batch"}, Dim{3, ""}};
    b.g.inputs.push_back(v);
    auto feeds = sample_inputs(b.g, 5);
    CHECK(feeds.at("x").shape() == Shape{5, 3});
    CHECK(feeds.at("x").dtype() == DType::F16);
    b.g.inputs[0].shape.reset();
    CHECK_THROWS_WITH_AS(sample_inputs(b.g, 5), doctest::Contains("input 'x'"), Error);
  }

  TEST_CASE("a text pipeline converts: its string nodes untouched, the MatMul low, labels exact") {
    // words [2, 4] -> TfIdfVectorizer (pool_strings) [2, 3] -> MatMul W -> Softmax -> p;
    // ArgMax(p) -> Gather(labels) -> label (string), as sklearn-onnx text classifiers end.
    GraphBuild b;
    b.input("words", DType::String, {2, 4});
    Node& tf = b.node("TfIdfVectorizer", {"words"}, {"tf"}, "tfidf");
    tf.opset = 9;
    Attribute pool;
    pool.kind = Attribute::Kind::Strings;
    pool.strings = {"goal", "vote", "match"};
    tf.attrs = {{"mode", string_attribute("TF")},
                {"min_gram_length", int_attr(1)},
                {"max_gram_length", int_attr(1)},
                {"max_skip_count", int_attr(0)},
                {"ngram_counts", ints_attribute({0})},
                {"ngram_indexes", ints_attribute({0, 1, 2})},
                {"pool_strings", pool}};
    b.init("w", Tensor::from_vector<float>({3, 2}, {2, -1, -1, 2, 0.5f, 0.25f}));
    b.node("MatMul", {"tf", "w"}, {"logits"}, "mm");
    b.node("Softmax", {"logits"}, {"p"}, "softmax");
    b.node("ArgMax", {"p"}, {"k"}, "argmax").attrs = {{"axis", int_attr(1)},
                                                      {"keepdims", int_attr(0)}};
    b.init("labels", Tensor::from_vector<std::string>({2}, {"sports", "politics"}));
    b.node("Gather", {"labels", "k"}, {"label"}, "lookup");
    b.output("p").output("label", DType::String);
    ExportOptions o;
    o.paint.low = DType::F16;
    o.keep_io_types = true;
    const ConvertedGraph c = convert_for_inference(b.g, o);
    CHECK(entry(c.plan, "mm").dtype == DType::F16);
    CHECK(!entry(c.plan, "lookup").carries_floats);
    CHECK(c.graph.initializers.at("labels").dtype() == DType::String);
    const std::map<std::string, Tensor> feeds = {
        {"words", Tensor::from_vector<std::string>(
                      {2, 4}, {"goal", "match", "goal", "x", "vote", "vote", "match", "y"})}};
    const auto d = compare_outputs(b.g, c.graph, feeds);
    REQUIRE(d.size() == 2);
    CHECK(d[0].rel < 1e-2);
    CHECK(d[1].rel == 0);  // the labels agree exactly
    Executor ex(c.graph);
    const Tensor label = ex.run(feeds)[1];
    REQUIRE(label.dtype() == DType::String);
    CHECK(label.data<std::string>()[0] == "sports");
    CHECK(label.data<std::string>()[1] == "politics");
    // A label that differs is an infinite deviation, not a crash.
    Tensor other = label.clone();
    other.data<std::string>()[1] = "weather";
    CHECK(std::isinf(deviation("label", other, label).rel));
  }
}
