// `inspect MODEL --precision fp16|bf16`: the mixed-precision plan (node, op, precision, reason,
// totals), its overrides (--op-lists, --fp32-nodes, --fp16-nodes), --json, and bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

using namespace oat_test;

namespace {

// x [batch, 4] -> Gemm fc -> Relu act -> Softmax sm -> Relu act2 -> Reshape(shape) -> y
std::string plan_model(const TempDir& dir) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"batch", 4});
  mb.init_f32("W", {4, 3}, std::vector<float>(12, 0.5f));
  mb.init_f32("B", {3}, {0, 0, 0});
  mb.init_i64("shape", {2}, {-1, 3});
  mb.node("Gemm", {"x", "W", "B"}, {"h"}, "fc");
  mb.node("Relu", {"h"}, {"r"}, "act");
  mb.node("Softmax", {"r"}, {"s"}, "sm");
  mb.node("Relu", {"s"}, {"r2"}, "act2");
  mb.node("Reshape", {"r2", "shape"}, {"y"}, "reshape");
  mb.output("y", kFloat, {"batch", 3});
  return mb.save(dir.path / "plan.onnx");
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("inspect --precision fp16 prints node, op, precision, reason and totals") {
  TempDir dir;
  const std::string model = plan_model(dir);
  CliResult r = run_cli({"inspect", model, "--precision", "fp16"}, dir);
  CAPTURE(r.out);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "nodes      5"));  // the ordinary report comes first
  CHECK(has(r.out,
            "precision plan (fp16)\n"
            "node     op       precision  reason\n"
            "fc       Gemm     fp16       allow list\n"
            "act      Relu     fp16       joins fp16 neighbour 'fc'\n"
            "sm       Softmax  fp32       deny list\n"
            "act2     Relu     fp32       follows deny node 'sm'\n"
            "reshape  Reshape  fp32       follows deny node 'sm'\n"
            "totals: 5 nodes, 2 fp16, 3 fp32\n"));

  CliResult bf = run_cli({"inspect", model, "--precision", "bf16"}, dir);
  REQUIRE(bf.status == 0);
  CHECK(has(bf.out, "fc       Gemm     bf16       allow list\n"));
  CHECK(has(bf.out, "totals: 5 nodes, 2 bf16, 3 fp32\n"));

  CliResult plain = run_cli({"inspect", model}, dir);
  REQUIRE(plain.status == 0);
  CHECK(!has(plain.out, "precision plan"));
}

TEST_CASE("inspect --precision with pins and an op-list file") {
  TempDir dir;
  const std::string model = plan_model(dir);
  CliResult pins = run_cli(
      {"inspect", model, "--precision", "fp16", "--fp32-nodes", "fc", "--fp16-nodes", "sm,act2"},
      dir);
  CAPTURE(pins.err);
  REQUIRE(pins.status == 0);
  CHECK(has(pins.out, "fc       Gemm     fp32       pinned by --fp32-nodes\n"));
  CHECK(has(pins.out, "sm       Softmax  fp16       pinned by --fp16-nodes\n"));
  CHECK(has(pins.out, "act2     Relu     fp16       pinned by --fp16-nodes\n"));
  CHECK(has(pins.out, "reshape  Reshape  fp16       joins fp16 neighbour 'act2'\n"));

  const std::string lists = dir / "lists.json";
  std::ofstream(lists) << R"({"deny": {"add": ["Gemm"]}, "clear": {"remove": ["Relu"]}})";
  CliResult l = run_cli({"inspect", model, "--precision", "fp16", "--op-lists", lists}, dir);
  CAPTURE(l.err);
  REQUIRE(l.status == 0);
  CHECK(has(l.out, "fc       Gemm     fp32       deny list\n"));
  CHECK(has(l.out, "act      Relu     fp32       not in any list\n"));
  CHECK(has(l.out, "totals: 5 nodes, 0 fp16, 5 fp32\n"));
}

TEST_CASE("inspect --precision fp16: a 1e-6 layer scale's Mul stays fp32; --no-out-of-range-fp32") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"batch", 4});
  mb.init_f32("W", {4, 4}, std::vector<float>(16, 0.5f));
  mb.init_f32("gamma", {4}, std::vector<float>(4, 1e-6f));
  mb.node("MatMul", {"x", "W"}, {"h"}, "fc");
  mb.node("Mul", {"h", "gamma"}, {"m"}, "scale");
  mb.node("Add", {"m", "h"}, {"y"}, "residual");
  mb.output("y", kFloat, {"batch", 4});
  const std::string model = mb.save(dir.path / "layer_scale.onnx");
  CliResult r = run_cli({"inspect", model, "--precision", "fp16"}, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(has(r.out,
            "scale     Mul     fp32       initializer 'gamma': max |x| = 1e-06 is below float16's "
            "smallest normal 6.1e-05\n"
            "residual  Add     fp32       follows fp32 node 'scale' (initializer 'gamma' out of "
            "float16's range)\n"));
  CliResult off = run_cli({"inspect", model, "--precision", "fp16", "--no-out-of-range-fp32"}, dir);
  REQUIRE(off.status == 0);
  CHECK(has(off.out, "scale     Mul     fp16       infer: inputs fp16 from 'fc'\n"));
  CHECK(has(off.out, "totals: 3 nodes, 3 fp16, 0 fp32\n"));
  CliResult bf = run_cli({"inspect", model, "--precision", "bf16"}, dir);
  REQUIRE(bf.status == 0);
  CHECK(has(bf.out, "totals: 3 nodes, 3 bf16, 0 fp32\n"));
  CliResult alone = run_cli({"inspect", model, "--no-out-of-range-fp32"}, dir);
  CHECK(alone.status != 0);
}

TEST_CASE("inspect --precision --json carries the plan") {
  TempDir dir;
  const std::string model = plan_model(dir);
  CliResult r = run_cli({"inspect", model, "--precision", "fp16", "--json"}, dir);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& plan = j.at("precision_plan");
  CHECK(plan.at("low") == "float16");
  REQUIRE(plan.at("nodes").size() == 5);
  CHECK(plan["nodes"][0]["node"] == "fc");
  CHECK(plan["nodes"][0]["op"] == "Gemm");
  CHECK(plan["nodes"][0]["precision"] == "float16");
  CHECK(plan["nodes"][0]["reason"] == "allow list");
  CHECK(plan["nodes"][2]["precision"] == "float32");
  CHECK(plan.at("totals").at("float16") == 2);
  CHECK(plan.at("totals").at("float32") == 3);
}

TEST_CASE("inspect --precision: bad names, lists files and values are one-line errors") {
  TempDir dir;
  const std::string model = plan_model(dir);
  CliResult nope = run_cli({"inspect", model, "--precision", "fp16", "--fp32-nodes", "nope"}, dir);
  CHECK(nope.status == 1);
  CHECK(nope.err ==
        "error: " + model + ": --fp32-nodes: no node named 'nope' in graph 'test_graph'\n");
  CHECK(nope.out.empty());

  const std::string bad = dir / "bad.json";
  std::ofstream(bad) << R"({"allow": {"add": "Conv"}})";
  CliResult lists = run_cli({"inspect", model, "--precision", "fp16", "--op-lists", bad}, dir);
  CHECK(lists.status == 1);
  CHECK(lists.err ==
        "error: op lists file '" + bad + "': 'allow.add' must be an array of op names\n");

  CliResult missing =
      run_cli({"inspect", model, "--precision", "fp16", "--op-lists", dir / "none.json"}, dir);
  CHECK(missing.status == 1);
  CHECK(has(missing.err, "none.json': cannot open it"));

  CliResult fp8 = run_cli({"inspect", model, "--precision", "fp8"}, dir);
  CHECK(fp8.status == 2);
  CHECK(fp8.err_lines().size() == 1);

  CliResult alone = run_cli({"inspect", model, "--fp32-nodes", "fc"}, dir);
  CHECK(alone.status == 2);
  CHECK(has(alone.err, "--precision"));
}
