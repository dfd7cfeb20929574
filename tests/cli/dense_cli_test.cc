// Dense cross-entropy and token-id inputs through the real binary (tests/dense_models.h):
// `check` passes on a conv segmentation net ([N, 3, 8, 8], classes at axis 1) and on a token
// model (int64 ids -> Gather embedding -> [N, 8, 16], classes last), CPU mixed vs CPU FP32, and
// says which class axis it chose; `train` and `eval` take int64 ids and per-token labels from
// .npy and report the axis and the per-token accuracy; labels of the wrong shape, a bad
// --class-axis and an integer input no Gather bounds end in one error line naming the shapes.
#include <doctest/doctest.h>

#include "cli/cli_runner.h"
#include "dense_models.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;
using namespace oat::dense_test;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string save(const Graph& g, const TempDir& dir, const std::string& name) {
  const std::string path = dir / (name + ".onnx");
  onnx_loader::save_graph(g, path);
  return path;
}

// Exit 1 and one `error:` line holding every part.
void expect_error(const CliResult& r, const std::vector<std::string>& parts) {
  INFO(r.out, r.err);
  CHECK(r.status == 1);
  const auto lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("error: ", 0) == 0);
  for (const auto& p : parts) CHECK_MESSAGE(has(lines[0], p), p);
}

}  // namespace

TEST_SUITE("cli dense cross-entropy") {
  TEST_CASE("check passes on a segmentation net and a token model, naming the class axis") {
    TempDir dir;
    struct Case {
      std::string name;
      Graph g;
      std::string axis_line, input, labels;
    };
    const std::vector<Case> cases = {
        {"seg", seg_net(), "class axis 1 of output 'logits' [batch, 3, 8, 8]",
         "input float32 [4, 1, 8, 8]", "labels [4, 8, 8]"},
        {"tokens", token_net(), "class axis 2 (last) of output 'logits' [batch, 8, 16]",
         "input int64 [4, 8]", "labels [4, 8]"},
    };
    for (const Case& c : cases)
      for (const std::string p : {"fp16", "bf16"}) {
        CAPTURE(c.name);
        CAPTURE(p);
        const CliResult r = run_cli({"check", save(c.g, dir, c.name), "--device", "cpu",
                                     "--precision", p, "--batch", "4"},
                                    dir);
        INFO(r.out, r.err);
        CHECK(r.status == 0);
        CHECK(has(r.out, "CPU-vs-CPU"));
        CHECK(has(r.out, c.input));
        CHECK(has(r.out, "cross-entropy over " + c.axis_line));
        CHECK(has(r.out, c.labels));
        CHECK(has(r.out, " 0 failing"));
      }
    // --class-axis overrides: the token model's logits with classes at axis 1 ([N, 8] labels).
    const CliResult r = run_cli({"check", save(token_net(), dir, "tokens"), "--device", "cpu",
                                 "--class-axis", "1", "--batch", "2"},
                                dir);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    CHECK(has(r.out, "class axis 1 of output 'logits' [batch, 8, 16] (--class-axis 1)"));
    CHECK(has(r.out, "labels [2, 16]"));
  }

  TEST_CASE("train and eval: int64 ids and per-token labels from .npy, fp16") {
    TempDir dir;
    const std::string model = save(token_net(), dir, "tokens");
    const train::Dataset tr = token_data(512, 1), va = token_data(64, 2);
    const std::string tx = dir / "tx.npy", ty = dir / "ty.npy", vx = dir / "vx.npy",
                      vy = dir / "vy.npy", out = dir / "trained.onnx";
    onnx_loader::write_npy(tr.inputs, tx);
    onnx_loader::write_npy(tr.targets, ty);
    onnx_loader::write_npy(va.inputs, vx);
    onnx_loader::write_npy(va.targets, vy);
    CliResult r = run_cli({"train", model, "--train-x", tx, "--train-y", ty, "--val-x", vx,
                           "--val-y", vy, "--precision", "fp16", "--epochs", "4", "--batch", "32",
                           "--lr", "0.05", "-o", out},
                          dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "cross-entropy over class axis 2 (last) of output 'logits' [batch, 8, 16] "
                     "(the labels [N, 8] are its shape without that axis), ignore_index -100"));
    CHECK(has(r.out, "input 'ids': int64 ids fed as they are, in [0, 16)"));
    CHECK(has(r.out, "val accuracy 100%"));
    r = run_cli({"eval", out, "--val-x", vx, "--val-y", vy}, dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "samples 64"));
    CHECK(has(r.out, "accuracy 100% (of 512 labelled positions)"));
    // ignore_index: every label 3 ignored -> fewer positions counted.
    r = run_cli({"eval", out, "--val-x", vx, "--val-y", vy, "--ignore-index", "3"}, dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    int64_t threes = 0;
    for (int64_t i = 0; i < va.targets.numel(); ++i) threes += va.targets.data<int64_t>()[i] == 3;
    CHECK(threes > 0);
    CHECK(has(r.out, cat("(of ", 512 - threes, " labelled positions)")));
  }

  TEST_CASE("segmentation: train from .npy in fp32, the class axis from the labels") {
    TempDir dir;
    const std::string model = save(seg_net(), dir, "seg");
    const train::Dataset tr = seg_data(128, 1);
    const std::string tx = dir / "tx.npy", ty = dir / "ty.npy";
    onnx_loader::write_npy(tr.inputs, tx);
    onnx_loader::write_npy(tr.targets, ty);
    const CliResult r = run_cli({"train", model, "--train-x", tx, "--train-y", ty, "--epochs", "1",
                                 "--batch", "32", "-o", dir / "trained.onnx"},
                                dir);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "cross-entropy over class axis 1 of output 'logits' [batch, 3, 8, 8] (the "
                     "labels [N, 8, 8] are its shape without that axis)"));
  }

  TEST_CASE("bad input: labels of the wrong shape, a bad --class-axis, unbounded ids") {
    TempDir dir;
    const std::string seg = save(seg_net(), dir, "seg");
    const train::Dataset tr = seg_data(8, 1);
    const std::string tx = dir / "tx.npy", ty = dir / "ty.npy", ty5 = dir / "ty5.npy";
    onnx_loader::write_npy(tr.inputs, tx);
    onnx_loader::write_npy(tr.targets, ty);
    onnx_loader::write_npy(Tensor::zeros(DType::I64, {8, 5, 5}), ty5);
    expect_error(run_cli({"train", seg, "--train-x", tx, "--train-y", ty5, "-o", dir / "o.onnx"}, dir),
                 {"labels of shape [N, 5, 5] do not fit output 'logits' [batch, 3, 8, 8]",
                  "[N, 8, 8] (classes at axis 1)"});
    expect_error(run_cli({"train", seg, "--train-x", tx, "--train-y", ty, "--class-axis", "3",
                          "-o", dir / "o.onnx"},
                         dir),
                 {"labels of shape [N, 8, 8] do not fit", "with class axis 3",
                  "needs labels [N, 3, 8]"});
    expect_error(run_cli({"check", seg, "--device", "cpu", "--class-axis", "0"}, dir),
                 {"--class-axis 0 is not a class axis of output 'logits'"});
    expect_error(run_cli({"eval", seg, "--val-x", tx, "--val-y", ty5}, dir),
                 {"labels of shape [N, 5, 5]", "[batch, 3, 8, 8]"});
    expect_error(run_cli({"train", seg, "--train-x", tx, "--train-y", ty, "--loss", "mse",
                          "--class-axis", "1", "-o", dir / "o.onnx"},
                         dir),
                 {"--class-axis applies to --loss cross-entropy"});
    // Integer inputs that no Gather bounds (here: counts the model casts to float itself): check
    // cannot make them up and asks for data.
    Graph g;
    g.name = "counts";
    g.opsets[""] = 17;
    g.inputs.push_back(value("ids", DType::I64, {-1, kSeq}));
    g.initializers["W"] = Tensor::zeros(DType::F32, {kSeq, 4});
    Attribute to_float = int_attribute(1);
    g.nodes.push_back(make_node("to_float", "Cast", {"ids"}, "xf", {{"to", to_float}}));
    g.nodes.push_back(make_node("fc", "MatMul", {"xf", "W"}, "logits"));
    g.outputs.push_back(value("logits", DType::F32, {-1, 4}));
    const std::string unbounded = save(g, dir, "unbounded");
    expect_error(run_cli({"check", unbounded, "--device", "cpu"}, dir),
                 {"input 'ids' takes int64 ids", "give --data IDS.npy"});
    // ... and with the ids as an .npy file it runs.
    const std::string ids = dir / "ids.npy";
    onnx_loader::write_npy(token_data(2, 5).inputs, ids);
    const CliResult ok = run_cli({"check", unbounded, "--device", "cpu", "--data", ids}, dir);
    INFO(ok.out, ok.err);
    CHECK(ok.status == 0);
    CHECK(has(ok.out, "first batch of " + ids));
  }
}
