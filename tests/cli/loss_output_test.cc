// --loss-output NAME (train, eval, check): a model with several outputs (a classifier with an
// auxiliary head, as torchvision's GoogLeNet/Inception and FCN export in training mode) trains,
// evaluates and checks the output it names; the first output is the default; an unknown name is
// an error listing the outputs.
#include <doctest/doctest.h>

#include "test_tensors.h"
#include "cli/cli_runner.h"
#include "convert/graph_build.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Tensor uniform(Shape s, uint32_t seed) { return uniform_tensor(std::move(s), seed); }

// x [batch, 6] → aux head (Gemm to 3 classes) = output 'aux', main head (Gemm to 5 classes) =
// output 'main'. 'aux' is first, so the default loss reads it.
Graph two_heads() {
  GraphBuild b;
  b.g.opsets[""] = 13;
  b.input("x", DType::F32, {4, 6});
  b.g.inputs[0].shape = std::vector<Dim>{Dim{0, "batch"}, Dim{6, ""}};
  b.init("Wa", uniform({6, 3}, 1)).init("ba", uniform({3}, 2));
  b.init("Wm", uniform({6, 5}, 3)).init("bm", uniform({5}, 4));
  b.node("Gemm", {"x", "Wa", "ba"}, {"aux"}, "aux_head");
  b.node("Gemm", {"x", "Wm", "bm"}, {"main"}, "main_head");
  b.output("aux");
  b.g.outputs.back().shape = std::vector<Dim>{Dim{0, "batch"}, Dim{3, ""}};
  b.output("main");
  b.g.outputs.back().shape = std::vector<Dim>{Dim{0, "batch"}, Dim{5, ""}};
  return b.g;
}

}  // namespace

TEST_CASE("--loss-output picks the output that train, eval and check use") {
  TempDir dir;
  const std::string model = dir / "heads.onnx";
  onnx_loader::save_graph(two_heads(), model);
  const std::string x = dir / "x.npy", y = dir / "y.npy";
  onnx_loader::write_npy(uniform({32, 6}, 5), x);
  Tensor labels(DType::I64, {32});
  for (int64_t i = 0; i < 32; ++i) labels.data<int64_t>()[i] = i % 5;  // 5 classes: the main head's
  onnx_loader::write_npy(labels, y);

  // Default: the first output ('aux', 3 classes) does not take labels up to 4.
  CliResult r = run_cli({"train", model, "--train-x", x, "--train-y", y, "--epochs", "1", "-o",
                         dir / "t.onnx"}, dir);
  CHECK(r.status == 1);
  CHECK(has(r.err, "outside [0, 3)"));

  r = run_cli({"train", model, "--train-x", x, "--train-y", y, "--val-x", x, "--val-y", y,
               "--epochs", "3", "--lr", "0.05", "--loss-output", "main", "-o", dir / "t.onnx"}, dir);
  INFO(r.out, r.err);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "class axis 1 of output 'main'"));
  CHECK(has(r.out, "val accuracy"));

  r = run_cli({"eval", dir / "t.onnx", "--val-x", x, "--val-y", y, "--loss-output", "main"}, dir);
  CHECK(r.status == 0);
  CHECK(has(r.out, "output 'main'"));
  CHECK(has(r.out, "accuracy "));

  r = run_cli({"check", model, "--device", "cpu", "--batch", "4", "--loss-output", "main"}, dir);
  CHECK(r.status == 0);
  CHECK(has(r.out, "class axis 1 of output 'main'"));
  CHECK(has(r.out, " 0 failing"));
  CHECK(has(r.out, "main_head"));

  r = run_cli({"eval", model, "--val-x", x, "--val-y", y, "--loss-output", "logits"}, dir);
  CHECK(r.status == 1);
  CHECK(has(r.err, "--loss-output: the model has no output named 'logits' (its outputs: 'aux', 'main')"));
}
