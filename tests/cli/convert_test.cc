// `convert MODEL -o OUT`: FP16/BF16 inference models from the real binary, checked three ways:
// our loader (dtypes of initializers, inputs and outputs), ONNX itself (PyPI onnx's full checker)
// and ONNX Runtime (the converted model runs and its outputs stay within 1e-2 of the FP32
// model's, relative to the largest |output|, with the same top-1 class).
//
// The Python side (ort_check below) runs with OAT_PYTHON or python3 and needs onnxruntime, onnx
// and numpy; scripts/setup.sh installs them, so a missing package FAILS these tests, naming it.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "reference_models.h"

using namespace oat;
using namespace oat_test;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs both models in ONNX Runtime on the same inputs (x.npy when given, else N(0,1) floats with
// dynamic dims = 2, bools True, ints 0) and prints one JSON line: per output rel (max|y - r| /
// max|r|) and top-1 agreement, the converted model's input/output element types, and whether
// onnx.checker.check_model(full_check=True) accepted it.
const char* kOrtCheck = R"PY(
import json, sys
try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:
    print("missing Python package '%s': pip install onnxruntime onnx numpy "
          "(scripts/setup.sh installs them)" % e.name)
    sys.exit(2)
ref_path, conv_path = sys.argv[1], sys.argv[2]
x_path = sys.argv[3] if len(sys.argv) > 3 else ""
conv = onnx.load(conv_path)
onnx.checker.check_model(conv, full_check=True)
np_of = {1: np.float32, 10: np.float16, 7: np.int64, 6: np.int32, 9: np.bool_}
rng = np.random.default_rng(0)
def feeds_for(model):
    feeds = {}
    inits = {i.name for i in model.graph.initializer}
    for i in model.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in t.shape.dim]
        if x_path and not feeds:
            v = np.load(x_path)
        elif t.elem_type in (1, 10):
            v = rng.standard_normal(shape).astype(np.float32)
        elif t.elem_type == 9:
            v = np.ones(shape, np.bool_)
        else:
            v = np.zeros(shape, np_of[t.elem_type])
        feeds[i.name] = v
    return feeds
ref_model = onnx.load(ref_path)
feeds = feeds_for(ref_model)
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
ref = ort.InferenceSession(ref_path, so, providers=["CPUExecutionProvider"])
sess = ort.InferenceSession(conv_path, so, providers=["CPUExecutionProvider"])
conv_feeds = {}
for i in sess.get_inputs():
    v = feeds[i.name]
    conv_feeds[i.name] = v.astype(np.float16) if i.type == "tensor(float16)" else v
r = ref.run(None, feeds)
y = sess.run(None, conv_feeds)
out = {"rel": [], "top1": [], "inputs": [i.type for i in sess.get_inputs()],
       "outputs": [o.type for o in sess.get_outputs()], "checker": True}
for a, b in zip(y, r):
    a = a.astype(np.float64); b = b.astype(np.float64)
    out["rel"].append(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)))
    out["top1"].append(bool((a.reshape(-1, a.shape[-1]).argmax(-1) ==
                             b.reshape(-1, b.shape[-1]).argmax(-1)).all()) if b.ndim >= 2 else True)
print(json.dumps(out))
)PY";

struct OrtResult {
  bool ok = false;
  std::string output;
  nlohmann::json j;
};

OrtResult ort_check(const TempDir& dir, const std::string& ref, const std::string& conv,
                    const std::string& x = "") {
  const std::string script = dir / "ort_check.py";
  write_bytes(script, kOrtCheck);
  const char* py = std::getenv("OAT_PYTHON");
  std::string cmd = cat(py ? py : "python3", " ", shell_quote(script), " ", shell_quote(ref), " ",
                        shell_quote(conv));
  if (!x.empty()) cmd += " " + shell_quote(x);
  cmd += " >" + shell_quote(dir / "ort_out.txt") + " 2>&1";
  const int raw = std::system(cmd.c_str());
  OrtResult r;
  r.output = read_bytes(dir / "ort_out.txt");
  if (!WIFEXITED(raw) || WEXITSTATUS(raw) != 0) return r;
  const size_t line = r.output.rfind('{');
  if (line == std::string::npos) return r;
  r.j = nlohmann::json::parse(r.output.substr(line), nullptr, false);
  r.ok = !r.j.is_discarded();
  return r;
}

// ONNX Runtime agrees: every output within 1e-2 of the FP32 model (and the same top-1 class, for
// models with class scores).
void check_in_ort(const TempDir& dir, const std::string& ref, const std::string& conv,
                  const std::string& x = "", bool top1 = true) {
  const OrtResult r = ort_check(dir, ref, conv, x);
  REQUIRE_MESSAGE(r.ok, "ONNX Runtime / onnx.checker on ", conv, " failed:\n", r.output);
  for (size_t k = 0; k < r.j["rel"].size(); ++k) {
    CAPTURE(r.output);
    CHECK(r.j["rel"][k].get<double>() <= 1e-2);
    if (top1) CHECK(r.j["top1"][k].get<bool>());
  }
}

uintmax_t file_size(const std::string& p) { return fs::file_size(p); }

// The float initializers of a loaded model, by dtype.
std::map<DType, int> initializer_dtypes(const Graph& g) {
  std::map<DType, int> r;
  for (const auto& [name, t] : g.initializers)
    if (is_floating(t.dtype())) ++r[t.dtype()];
  return r;
}

// The worst rel our binary printed ("worst rel 1.234e-04").
double printed_worst_rel(const std::string& out) {
  const size_t p = out.rfind("worst rel ");
  return p == std::string::npos ? INFINITY : std::stod(out.substr(p + 10));
}

struct LeNet {
  TempDir dir;
  std::string model = dir / "lenet.onnx";
  LeNet() { onnx_loader::save_graph(models::lenet5(1), model); }
  CliResult convert(std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = {"convert", model, "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, dir);
  }
};

// x [2, 4] -> MatMul(W1) -> h -> If(flag: then Relu(h), else Neg(h)) -> z -> MatMul(W2) -> y.
// The branches read h from the outer scope, which a converter must keep type-consistent.
ModelBuilder if_model() {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 4});
  mb.input("flag", onnx::TensorProto_DataType_BOOL, {});
  std::vector<float> w(16);
  for (int i = 0; i < 16; ++i) w[i] = 0.1f * static_cast<float>((i * 7) % 11) - 0.5f;
  mb.init_f32("W1", {4, 4}, w);
  mb.init_f32("W2", {4, 3}, std::vector<float>(w.begin(), w.begin() + 12));
  mb.node("MatMul", {"x", "W1"}, {"h"}, "mm1");
  auto* n = mb.node("If", {"flag"}, {"z"}, "branch");
  for (const char* which : {"then_branch", "else_branch"}) {
    auto* a = add_attr(n, which, onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(which);
    auto* sn = g->add_node();
    sn->set_name(std::string(which) + "_op");
    sn->set_op_type(std::string(which) == "then_branch" ? "Relu" : "Neg");
    sn->add_input("h");
    sn->add_output(std::string(which) + "_out");
    auto* o = g->add_output();
    o->set_name(std::string(which) + "_out");
    Dims d = {2, 4};
    set_type(o, kFloat, &d);
  }
  mb.node("MatMul", {"z", "W2"}, {"y"}, "mm2");
  mb.output("y", kFloat, {2, 3});
  return mb;
}

}  // namespace

TEST_SUITE("convert") {
  TEST_CASE(
      "LeNet-5 to FP16: checker ok, float16 initializers and I/O, half the size, runs in ORT") {
    LeNet t;
    const std::string out = t.dir / "lenet_fp16.onnx";
    CliResult r = t.convert({}, out);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "12 nodes in float16, 0 kept in float32"));
    CHECK(has(r.out, "ONNX checker: ok"));
    CHECK(printed_worst_rel(r.out) <= 1e-2);

    onnx_loader::Model m = onnx_loader::load_model(out);
    const auto dts = initializer_dtypes(m.graph);
    CHECK(dts.count(DType::F32) == 0);
    CHECK(dts.at(DType::F16) == 10);
    CHECK(m.graph.inputs[0].dtype == DType::F16);
    CHECK(m.graph.outputs[0].dtype == DType::F16);
    const double ratio = static_cast<double>(file_size(out)) / file_size(t.model);
    CHECK(ratio > 0.45);
    CHECK(ratio < 0.55);
    // What the loader keeps of the original: producer and opsets.
    CHECK(m.producer_name == "onnx-amp-train");
    CHECK(m.graph.opsets == onnx_loader::load_model(t.model).graph.opsets);
    check_in_ort(t.dir, t.model, out);
  }

  TEST_CASE("--keep-io-types keeps float32 inputs and outputs, with Casts at the boundary") {
    LeNet t;
    const std::string out = t.dir / "lenet_io32.onnx";
    CliResult r = t.convert({"--keep-io-types"}, out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    onnx_loader::Model m = onnx_loader::load_model(out);
    CHECK(m.graph.inputs[0].dtype == DType::F32);
    CHECK(m.graph.outputs[0].dtype == DType::F32);
    int casts = 0;
    for (const Node& n : m.graph.nodes) casts += n.op_type == "Cast";
    CHECK(casts == 2);
    const OrtResult o = ort_check(t.dir, t.model, out);
    REQUIRE_MESSAGE(o.ok, o.output);
    CHECK(o.j["inputs"][0] == "tensor(float)");
    CHECK(o.j["outputs"][0] == "tensor(float)");
    CHECK(o.j["rel"][0].get<double>() <= 1e-2);
  }

  TEST_CASE("--block-ops and --block-nodes keep those nodes and their weights in float32") {
    LeNet t;
    const std::string out = t.dir / "lenet_block.onnx";
    CliResult r = t.convert({"--block-ops", "Gemm", "--block-nodes", "conv2", "--plan"}, out);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    onnx_loader::Model m = onnx_loader::load_model(out);
    for (const auto& [name, tensor] : m.graph.initializers) {
      CAPTURE(name);
      const bool blocked = name.rfind("fc", 0) == 0 || name.rfind("conv2", 0) == 0;
      CHECK(tensor.dtype() == (blocked ? DType::F32 : DType::F16));
    }
    // Every Gemm and conv2 read float32 in the written graph.
    std::map<std::string, DType> type;
    for (const auto& [name, tensor] : m.graph.initializers) type[name] = tensor.dtype();
    for (const auto& v : m.graph.inputs) type[v.name] = v.dtype;
    for (const auto& [name, v] : m.graph.value_info) type[name] = v.dtype;
    for (const Node& n : m.graph.nodes)
      if (n.op_type == "Gemm" || n.name == "conv2") {
        CAPTURE(n.name);
        REQUIRE(type.count(n.inputs[0]));
        CHECK(type[n.inputs[0]] == DType::F32);
      }
    CHECK(has(r.out, "conv2"));
    check_in_ort(t.dir, t.model, out);
  }

  TEST_CASE("list options take one value per occurrence: the model may follow them") {
    LeNet t;
    const std::string out = t.dir / "lenet_order.onnx";
    CliResult r = run_cli({"convert", "--block-ops", "Gemm", "--block-ops", "Conv", "--block-nodes",
                           "relu1", t.model, "-o", out},
                          t.dir);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "0 nodes in float16, 12 kept in float32"));
  }

  TEST_CASE("weights beyond FP16's range are clamped to ±65504 and each is reported") {
    TempDir dir;
    ModelBuilder mb(13);
    mb.input("x", kFloat, {"batch", 3});
    mb.init_f32("big", {3, 2}, {1e6f, -2e5f, 1.0f, 0.5f, 70000.0f, 2.0f});
    mb.init_f32("fine", {3, 2}, {1, 2, 3, 4, 5, 6});
    mb.node("MatMul", {"x", "big"}, {"h"}, "mm_big");
    mb.node("MatMul", {"x", "fine"}, {"g"}, "mm_fine");
    mb.node("Add", {"h", "g"}, {"y"}, "add");
    mb.output("y", kFloat, {"batch", 2});
    const std::string model = mb.save(dir.path / "big.onnx");
    const std::string out = dir / "big_fp16.onnx";
    CliResult r = run_cli({"convert", model, "-o", out}, dir);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "clamped big"));
    CHECK(has(r.out, "3 values"));
    CHECK_FALSE(has(r.out, "clamped fine"));
    onnx_loader::Model m = onnx_loader::load_model(out);
    const std::vector<float> v = m.graph.initializers.at("big").to_float_vector();
    CHECK(v[0] == 65504.0f);
    CHECK(v[1] == -65504.0f);
    CHECK(v[4] == 65504.0f);
    CHECK(v[2] == 1.0f);
  }

  TEST_CASE("--to bf16: bfloat16 where ONNX's schemas allow it, FP32 where they do not") {
    LeNet t;
    const std::string out = t.dir / "lenet_bf16.onnx";
    CliResult r = t.convert({"--to", "bf16"}, out);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "nodes in bfloat16"));
    // Conv and MaxPool take no bfloat16 before opset 22: valid ONNX keeps them FP32.
    CHECK(has(r.out, "kept in float32 for ONNX's schema: conv1 (Conv, opset 17)"));
    CHECK(has(r.out, "ONNX checker: ok"));
    // BF16 keeps 8 bits of mantissa: worse than FP16's 11, still close.
    const double rel = printed_worst_rel(r.out);
    CHECK(rel > 0);
    CHECK(rel <= 5e-2);
    onnx_loader::Model m = onnx_loader::load_model(out);
    for (const auto& [name, tensor] : m.graph.initializers) {
      CAPTURE(name);
      CHECK(tensor.dtype() == (name.rfind("fc", 0) == 0 ? DType::BF16 : DType::F32));
    }
  }

  TEST_CASE("--calib feeds the deviation run from a .npy file") {
    LeNet t;
    const std::string x = t.dir / "calib.npy";
    std::vector<float> v(3 * 28 * 28);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 256) / 255.0f;
    onnx_loader::write_npy(Tensor::from_vector<float>({3, 1, 28, 28}, v), x);
    CliResult r = t.convert({"--calib", x, "--keep-io-types"}, t.dir / "c.onnx");
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "--calib inputs"));
    CHECK(has(r.out, "3/3"));  // top-1 over the 3 calibration rows
    check_in_ort(t.dir, t.model, t.dir / "c.onnx", x);
  }

  TEST_CASE("a model with an If whose branches read a converted value stays valid") {
    TempDir dir;
    const std::string model = if_model().save(dir.path / "if.onnx");
    const std::string out = dir / "if_fp16.onnx";
    CliResult r = run_cli({"convert", model, "-o", out, "--keep-io-types"}, dir);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "ONNX checker: ok"));
    // Our runtime measures the deviation when it runs If; ONNX Runtime checks the model anyway.
    if (has(r.out, "worst rel"))
      CHECK(printed_worst_rel(r.out) <= 1e-2);
    else
      CHECK(has(r.err, "warning: deviation not measured"));
    check_in_ort(dir, model, out);
  }

  TEST_CASE("external data in, external data out, loadable by us and ONNX Runtime") {
    LeNet t;
    const std::string ext = t.dir / "lenet_ext.onnx";
    onnx_loader::Model m = onnx_loader::load_model(t.model);
    onnx_loader::SaveOptions so;
    so.external_data = true;
    onnx_loader::save_model(m, {}, ext, so);
    REQUIRE(fs::exists(ext + ".data"));
    const std::string out = t.dir / "lenet_ext_fp16.onnx";
    CliResult r = run_cli({"convert", ext, "-o", out}, t.dir);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    REQUIRE(fs::exists(out + ".data"));
    const double ratio = static_cast<double>(file_size(out) + file_size(out + ".data")) /
                         (file_size(ext) + file_size(ext + ".data"));
    CHECK(ratio < 0.6);
    onnx_loader::Model c = onnx_loader::load_model(out);
    CHECK(initializer_dtypes(c.graph).at(DType::F16) == 10);
    check_in_ort(t.dir, t.model, out);
  }

  TEST_CASE("bad input: clear error, non-zero exit, no output file") {
    LeNet t;
    const std::string out = t.dir / "never.onnx";
    auto expect = [&](const CliResult& r, int status, const std::vector<std::string>& parts) {
      CAPTURE(r.out);
      CAPTURE(r.err);
      CHECK(r.status == status);
      const auto lines = r.err_lines();
      REQUIRE(lines.size() == 1);
      CHECK(lines[0].rfind("error: ", 0) == 0);
      for (const auto& p : parts) {
        CAPTURE(p);
        CHECK(has(lines[0], p));
      }
      CHECK_FALSE(fs::exists(out));
      for (const auto& f : t.dir.list()) CHECK_FALSE(has(f, "never"));  // no temp files either
    };
    SUBCASE("missing model") {
      expect(run_cli({"convert", t.dir / "nope.onnx", "-o", out}, t.dir), 1,
             {"nope.onnx", "no such file"});
    }
    SUBCASE("unknown --to") { expect(t.convert({"--to", "fp8"}, out), 2, {"--to", "fp8"}); }
    SUBCASE("unknown node in --block-nodes") {
      expect(t.convert({"--block-nodes", "conv1,no_such_node"}, out), 1,
             {"--block-nodes", "no_such_node"});
    }
    SUBCASE("output folder does not exist") {
      const std::string bad = t.dir / "missing_dir/never.onnx";
      CliResult r = t.convert({}, bad);
      expect(r, 1, {"missing_dir", "does not exist"});
    }
    SUBCASE("output folder is not writable") {
      if (::geteuid() == 0) {
        // root writes anywhere: a path through a regular file cannot be written by anyone.
        write_bytes(t.dir / "afile", "x");
        expect(t.convert({}, t.dir / "afile/never.onnx"), 1, {"afile"});
      } else {
        const std::string ro = t.dir / "ro";
        fs::create_directory(ro);
        ::chmod(ro.c_str(), 0555);
        expect(t.convert({}, ro + "/never.onnx"), 1, {"not writable"});
      }
    }
    SUBCASE("output is a folder") {
      fs::create_directory(t.dir / "never_dir.onnx");
      CliResult r = t.convert({}, t.dir / "never_dir.onnx");
      CHECK(r.status == 1);
      CHECK(has(r.err, "is a folder"));
    }
    SUBCASE("malformed --op-lists") {
      write_bytes(t.dir / "lists.json", "{\"allow\": {\"add\": [\"Relu\"]}, \"bogus\": {}}");
      expect(t.convert({"--op-lists", t.dir / "lists.json"}, out), 1, {"lists.json", "bogus"});
    }
    SUBCASE("--calib with the wrong shape") {
      const std::string x = t.dir / "bad.npy";
      onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 3}), x);
      expect(t.convert({"--calib", x}, out), 1, {"input"});
    }
    SUBCASE("not an ONNX file") {
      write_bytes(t.dir / "junk.onnx", "this is not protobuf");
      expect(run_cli({"convert", t.dir / "junk.onnx", "-o", out}, t.dir), 1, {"junk.onnx"});
    }
  }
}

namespace {

// x [2, 4] -> mm1 -> mm2 (weights 3e4: overflows FP16) -> Mul 1e-3 -> mm3 -> y. Only mm2 needs
// FP32; a search in node order would pin mm1 first.
ModelBuilder overflow_model() {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"batch", 4});
  std::vector<float> w1(16), w3(12);
  for (int i = 0; i < 16; ++i) w1[i] = (i % 5 == 0) ? 1.0f : 0.25f * static_cast<float>(i % 3);
  for (int i = 0; i < 12; ++i) w3[i] = 0.1f * static_cast<float>(i % 4) - 0.1f;
  mb.init_f32("W1", {4, 4}, w1);
  mb.init_f32("W2", {4, 4}, std::vector<float>(16, 30000.0f));
  mb.init_f32("s", {}, {1e-3f});
  mb.init_f32("W3", {4, 3}, w3);
  mb.node("MatMul", {"x", "W1"}, {"h1"}, "mm1");
  mb.node("MatMul", {"h1", "W2"}, {"h2"}, "mm2");
  mb.node("Mul", {"h2", "s"}, {"h3"}, "scale");
  mb.node("MatMul", {"h3", "W3"}, {"y"}, "mm3");
  mb.output("y", kFloat, {"batch", 3});
  return mb;
}

}  // namespace

TEST_SUITE("convert") {
  TEST_CASE("--auto pins the node where FP16 overflows, not the first node, and meets --rtol") {
    TempDir dir;
    const std::string model = overflow_model().save(dir.path / "ovf.onnx");
    // Without --auto the output overflows.
    CliResult plain = run_cli({"convert", model, "-o", dir / "plain.onnx", "--batch", "8"}, dir);
    CAPTURE(plain.out);
    REQUIRE(plain.status == 0);
    CHECK(printed_worst_rel(plain.out) > 1e-2);

    const std::string out = dir / "auto.onnx";
    CliResult r = run_cli({"convert", model, "-o", out, "--batch", "8", "--auto", "--rtol", "1e-2",
                           "--keep-io-types"},
                          dir);
    CAPTURE(r.out);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "1 node(s) kept in float32: mm2\n"));
    CHECK(printed_worst_rel(r.out) <= 1e-2);
    onnx_loader::Model m = onnx_loader::load_model(out);
    CHECK(m.graph.initializers.at("W2").dtype() == DType::F32);
    CHECK(m.graph.initializers.at("W1").dtype() == DType::F16);
    CHECK(m.graph.initializers.at("W3").dtype() == DType::F16);
    check_in_ort(dir, model, out, "", /*top1=*/false);  // 3 near-equal scores: top-1 is noise
  }
}

namespace {

// `all_fp16`: every node converts (the CNNs); `libonnx_checks`: the opset is one libonnx 1.12
// knows, so our own checker runs (opset 18 is checked by PyPI's onnx in ort_check only).
void check_reference_model(const std::string& name, bool all_fp16 = true,
                           bool libonnx_checks = true) {
  const fs::path dir = oat_test::reference_models() / name;
  TempDir t;
  const std::string model = (dir / "model.onnx").string();
  const std::string out = t / (name + "_fp16.onnx");
  // Our deviation run takes the reference batch (3); ONNX Runtime holds the fixed-batch file to
  // its declared batch of 1, so it gets the first sample.
  const std::string x = t / "x.npy", x1 = t / "x1.npy";
  const Tensor input =
      onnx_loader::read_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string()).tensor;
  onnx_loader::write_npy(input, x);
  Shape one = input.shape();
  one[0] = 1;
  std::vector<float> first = input.to_float_vector();
  first.resize(static_cast<size_t>(numel(one)));
  onnx_loader::write_npy(Tensor::from_vector<float>(one, first), x1);
  CliResult r = run_cli({"convert", model, "-o", out, "--keep-io-types", "--calib", x}, t);
  CAPTURE(r.out);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  MESSAGE(name, ":\n", r.out);
  CHECK(has(r.out, libonnx_checks ? "ONNX checker: ok" : "ONNX checker: skipped, opset 18"));
  // Every node in FP16 (Clip's Constant bounds become FP16 initializers; BatchNormalization at
  // opset 13 takes FP16 parameters, its one type T), Casts only at the float32 boundary.
  if (all_fp16) CHECK(has(r.out, ", 0 kept in float32; 2 casts inserted"));
  CHECK(printed_worst_rel(r.out) <= 1e-2);
  const double ratio = static_cast<double>(file_size(out)) / file_size(model);
  CHECK(ratio > 0.45);
  CHECK(ratio < 0.55);
  onnx_loader::Model m = onnx_loader::load_model(out);
  // Nearly all weights are FP16 (what stays FP32 is LayerNorm's scale and bias and
  // the like, read by FP32 nodes).
  double f16 = 0, f32 = 0;
  for (const auto& [n, w] : m.graph.initializers) {
    if (w.dtype() == DType::F16) f16 += static_cast<double>(w.numel());
    if (w.dtype() == DType::F32) f32 += static_cast<double>(w.numel());
  }
  CHECK(f16 / (f16 + f32) > 0.95);
  check_in_ort(t, model, out, x1);
}

}  // namespace

TEST_SUITE("convert") {
  TEST_CASE("torchvision ResNet-18 converts: checker, half size, ONNX Runtime within 1e-2") {
    check_reference_model("resnet18");
  }
  TEST_CASE("torchvision MobileNetV2 with BatchNormalization converts the same way") {
    check_reference_model("mobilenet_v2");
  }
  TEST_CASE("ResNet-18 at opset 18 (newer than libonnx): converted, checked by PyPI's onnx, runs") {
    check_reference_model("resnet18_opset18", true, false);
  }
  TEST_CASE("nn.TransformerEncoder: deny-list ops stay FP32, within 1e-2 in ONNX Runtime") {
    check_reference_model("transformer_encoder", false);
  }
}

TEST_CASE("convert refuses a model whose float32 run fails (Conv group 0); --no-verify writes it") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 2, 4, 4});
  mb.init_f32("w", {2, 2, 1, 1}, {1, 0, 0, 1});
  mb.output("y", kFloat, {1, 2, 4, 4});
  auto* n = mb.node("Conv", {"x", "w"}, {"y"}, "conv");
  auto* g = add_attr(n, "group", onnx::AttributeProto::INT);
  g->set_i(0);
  const std::string model = mb.save(dir.path / "group0.onnx");
  const std::string out = dir / "out_fp16.onnx";
  CliResult r = run_cli({"convert", model, "-o", out}, dir);
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("the float32 model fails on these inputs: node 'conv' (Conv, opset 13)") !=
        std::string::npos);
  CHECK(r.err.find("nothing written") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  r = run_cli({"convert", model, "-o", out, "--no-verify"}, dir);
  CHECK(r.status == 0);
  CHECK(r.err.find("warning: deviation not measured") != std::string::npos);
  CHECK(fs::exists(out));
}
