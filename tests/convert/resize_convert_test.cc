// Resize in a converted model (DESIGN.md: Resize's roi/scales/sizes stay FP32). With the default
// lists Resize is denied (FP32: ONNX Runtime's CPU provider has no float16 Resize, and the
// converter's models must run there); pinned low, X and Y are FP16 while roi and scales keep FP32
// (convert/fp32_slots.cc) and our executor runs it. Both results stay close to the FP32 graph.
#include <doctest/doctest.h>

#include <cmath>

#include "convert/graph_build.h"
#include "runtime/executor.h"

using namespace oat;
using namespace oat::convert;
using oat_test::casts;
using oat_test::find_node;
using oat_test::GraphBuild;

namespace {

// Conv -> Resize(linear, scales 2) -> Conv, with the scales and an empty roi as initializers.
GraphBuild conv_resize_conv() {
  GraphBuild b;
  b.input("x", DType::F32, {1, 2, 3, 3})
      .weight("W1", {2, 2, 1, 1}, 0.25f)
      .weight("W2", {2, 2, 1, 1}, 0.5f);
  b.init("roi", Tensor(DType::F32, {0}));
  b.init("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
  b.node("Conv", {"x", "W1"}, {"c1"}, "conv1");
  Node& r = b.node("Resize", {"c1", "roi", "scales"}, {"r"}, "resize");
  Attribute mode;
  mode.kind = Attribute::Kind::String;
  mode.s = "linear";
  r.attrs["mode"] = mode;
  b.node("Conv", {"r", "W2"}, {"y"}, "conv2");
  b.output("y");
  return b;
}

std::vector<float> run(const Graph& g) {
  Tensor x(DType::F32, {1, 2, 3, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i) - 0.7f;
  Executor ex(g);
  return ex.run({{"x", x}}).at(0).to_float_vector();
}

void check_close(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() == 2 * 6 * 6);
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(std::fabs(a[i] - b[i]) <= 2e-3 + 2e-3 * std::fabs(b[i]));
}

}  // namespace

TEST_CASE("an FP16 model with Resize: denied by default, scales and roi FP32 when pinned low") {
  const std::vector<float> want = run(conv_resize_conv().g);
  SUBCASE("default lists: Resize runs in FP32 between the FP16 convolutions") {
    GraphBuild b = conv_resize_conv();
    const PrecisionPlan plan = paint(b.g, PaintOptions{});
    CHECK(oat_test::entry(plan, "resize").dtype == DType::F32);
    ApplyOptions a;
    a.keep_io_types = true;
    a.convert_initializers = true;
    apply_plan(b.g, plan, a);
    CHECK(b.g.initializers.at("scales").dtype() == DType::F32);
    CHECK(find_node(b.g, "resize")->inputs[2] == "scales");
    check_close(run(b.g), want);
  }
  SUBCASE("pinned low: X and Y FP16, roi and scales stay FP32 (no Cast on them)") {
    GraphBuild b = conv_resize_conv();
    PaintOptions p;
    p.low_nodes = {"resize"};
    const PrecisionPlan plan = paint(b.g, p);
    CHECK(oat_test::entry(plan, "resize").dtype == DType::F16);
    ApplyOptions a;
    a.keep_io_types = true;
    a.convert_initializers = true;
    apply_plan(b.g, plan, a);
    const Node* r = find_node(b.g, "resize");
    CHECK(r->inputs[1] == "roi");
    CHECK(r->inputs[2] == "scales");
    CHECK(b.g.initializers.at("scales").dtype() == DType::F32);
    CHECK(b.g.initializers.at("roi").dtype() == DType::F32);
    for (const Node* c : casts(b.g)) CHECK(c->inputs[0] != "scales");
    check_close(run(b.g), want);
  }
}
