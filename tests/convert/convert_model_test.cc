// The converter on real models from the zoo (models/zoo.h): the plan, and a rewritten graph that
// the ONNX checker accepts (onnx_loader/graph_writer.h) and that loads back with FP16 weights.
#include <doctest/doctest.h>

#include "convert/graph_build.h"
#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"

using namespace oat;
using namespace oat::convert;

TEST_CASE("LeNet-5: every node goes fp16, two boundary casts, the ONNX checker accepts it") {
  const Graph fp32 = models::lenet5(7);
  Graph g = fp32;
  const PrecisionPlan plan = paint(g, {});
  CHECK(plan.count(DType::F16) == g.nodes.size());
  const NodePrecision* gemm = nullptr;
  for (const auto& p : plan.nodes)
    if (p.op_type == "Gemm") gemm = &p;
  REQUIRE(gemm != nullptr);
  CHECK(gemm->reason == "allow list");

  ApplyOptions a;
  a.keep_io_types = true;
  a.convert_initializers = true;
  const ApplyReport r = apply_plan(g, plan, a);
  CHECK(r.casts_inserted == 2);
  CHECK(r.casts_removed == 0);
  CHECK(r.clamped.empty());
  CHECK(r.converted_initializers.size() == fp32.initializers.size());
  REQUIRE(oat_test::casts(g).size() == 2);
  CHECK(oat_test::casts(g)[0]->name == "input_to_fp16");
  CHECK(oat_test::casts(g)[1]->outputs[0] == "logits");
  CHECK(g.inputs[0].dtype == DType::F32);
  CHECK(g.outputs[0].dtype == DType::F32);
  CHECK(oat_test::topologically_sorted(g));

  // Written with the checker on; loads back with the same types.
  const std::string bytes = onnx_loader::serialize_graph(g);
  const onnx_loader::Model back = onnx_loader::load_model_from_bytes(bytes, ".");
  for (const auto& [name, t] : back.graph.initializers)
    CHECK_MESSAGE(t.dtype() == DType::F16, name);
  CHECK(back.graph.outputs[0].dtype == DType::F32);
  // Half the bytes of the FP32 model, give or take the graph itself.
  const std::string fp32_bytes = onnx_loader::serialize_graph(fp32);
  CHECK(bytes.size() < fp32_bytes.size() * 0.55);
}

TEST_CASE("MLP without keep_io_types: fp16 input and output, fp16 weights, no casts") {
  Graph g = models::mlp(1);
  ApplyOptions a;
  a.convert_initializers = true;
  const ApplyReport r = apply_plan(g, paint(g, {}), a);
  CHECK(r.casts_inserted == 0);
  CHECK(g.inputs[0].dtype == DType::F16);
  CHECK(g.outputs[0].dtype == DType::F16);
  onnx_loader::serialize_graph(g);
}
