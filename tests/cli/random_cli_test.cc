// The CLI trains a saved VAE-like model whose latent code is sampled by RandomNormalLike
// (z = mu + exp(0.5·logvar)·eps, eps = RandomNormalLike(mu): what torch.randn_like exports to),
// with the MSE reconstruction loss, and `infer` runs it (each sample's noise fresh). The Trainer-
// level tests (loss falls, gradient check with a fixed draw) are tests/train/random_train_test.cc.
#include <doctest/doctest.h>

#include "cli/cli_runner.h"
#include "convert/graph_build.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/tensor_io.h"
#include "test_tensors.h"

using namespace oat;
using namespace oat_test;

namespace {

Graph vae() {
  GraphBuild b;
  b.input("x", DType::F32, {4, 8});
  b.g.inputs[0].shape = std::vector<Dim>{Dim{0, "batch"}, Dim{8, ""}};
  b.init("Wmu", uniform_tensor({8, 4}, 1, -0.4f, 0.4f)).init("bmu", Tensor::zeros(DType::F32, {4}));
  b.init("Wlv", uniform_tensor({8, 4}, 2, -0.4f, 0.4f)).init("blv", Tensor::zeros(DType::F32, {4}));
  b.init("Wd", uniform_tensor({4, 8}, 3, -0.4f, 0.4f)).init("bd", Tensor::zeros(DType::F32, {8}));
  b.init("half", Tensor::scalar<float>(0.5f));
  b.node("Gemm", {"x", "Wmu", "bmu"}, {"mu"}, "enc_mu");
  b.node("Gemm", {"x", "Wlv", "blv"}, {"logvar"}, "enc_lv");
  b.node("Mul", {"logvar", "half"}, {"hlv"}, "half_lv");
  b.node("Exp", {"hlv"}, {"sigma"}, "sigma");
  b.node("RandomNormalLike", {"mu"}, {"eps"}, "noise");
  b.node("Mul", {"sigma", "eps"}, {"se"}, "scale_noise");
  b.node("Add", {"mu", "se"}, {"z"}, "sample");
  b.node("Gemm", {"z", "Wd", "bd"}, {"y"}, "dec");
  b.output("y");
  b.g.outputs.back().shape = std::vector<Dim>{Dim{0, "batch"}, Dim{8, ""}};
  return b.g;
}

}  // namespace

TEST_CASE("cli: a VAE-like model with RandomNormalLike trains (mse) and runs") {
  TempDir dir;
  const std::string model = dir / "vae.onnx";
  onnx_loader::save_graph(vae(), model);
  const std::string x = dir / "x.npy";
  onnx_loader::write_npy(uniform_tensor({256, 8}, 9), x);
  CliResult r = run_cli({"train", model, "--train-x", x, "--train-y", x, "--loss", "mse",
                         "--epochs", "5", "--batch", "32", "--lr", "0.01", "-o", dir / "t.onnx"},
                        dir);
  INFO(r.out, r.err);
  REQUIRE(r.status == 0);
  // The trained file still draws its noise when it runs.
  const std::string trained = dir / "t.onnx";
  r = run_cli({"infer", trained, "-i", x, "-o", dir / "res"}, dir);
  INFO(r.out, r.err);
  CHECK(r.status == 0);
}
