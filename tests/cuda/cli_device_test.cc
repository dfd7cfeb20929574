// `infer --device cuda` through the real binary: where no device answers it exits 1 with one
// "no CUDA device" error and writes nothing; where one answers its outputs equal the CPU's.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/cli_runner.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/cuda/device.h"

using namespace oat;
using namespace oat_test;

TEST_CASE("infer --device cuda") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3});
  mb.output("y", kFloat, {2, 3});
  mb.node("Relu", {"x"}, {"y"}, "relu");
  const std::string model = mb.save(dir.path / "model.onnx");
  const std::string x = dir / "x.npy";
  onnx_loader::write_npy(Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6}), x);
  const std::string out = dir / "out";
  CliResult r = run_cli({"infer", model, "-i", x, "-o", out, "--device", "cuda"}, dir);
  if (cuda::device_count() == 0) {
    CHECK(r.status == 1);
    REQUIRE(r.err_lines().size() == 1);
    CHECK(r.err.find("error: no CUDA device") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
  } else {
    REQUIRE(r.status == 0);
    const Tensor y = onnx_loader::read_tensor_pb(out + "/output_0.pb").tensor;
    CHECK(y.to_float_vector() == std::vector<float>{0, 2, 0, 4, 0, 6});
  }
  r = run_cli({"infer", model, "-i", x, "-o", out, "--device", "tpu"}, dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("tpu") != std::string::npos);
}

// `check --device cuda` on the zoo's transformer: every node within tolerance in fp32 and fp16.
// In fp32 the bias gradients of the attention key projections are mathematically zero (softmax is
// shift invariant), FP32 noise on both paths summed in different orders; check measures sums
// against the size of their terms (train/check.cc, sum_like), else they failed with rel ~1.
TEST_CASE("check --device cuda passes on the zoo transformer (fp32 and fp16)") {
  TempDir dir;
  const std::string model = dir / "transformer.onnx";
  REQUIRE(run_cli({"zoo", "transformer", "-o", model}, dir).status == 0);
  for (const char* p : {"fp32", "fp16"}) {
    CAPTURE(p);
    const CliResult r =
        run_cli({"check", model, "--device", "cuda", "--precision", p, "--batch", "4"}, dir);
    if (cuda::device_count() == 0) {
      CHECK(r.status == 1);
      CHECK(r.err.find("no CUDA device") != std::string::npos);
      continue;
    }
    CHECK(r.status == 0);
    CHECK(r.out.find("0 failing") != std::string::npos);
  }
}

// --cudnn-benchmark: the device commands take it (the convolutions' algorithms then come from a
// timed search), inspect does not; on LeNet-5 `check --device cuda` still passes with it.
TEST_CASE("--cudnn-benchmark: check --device cuda passes on the zoo LeNet-5 with it") {
  TempDir dir;
  const std::string model = dir / "lenet5.onnx";
  REQUIRE(run_cli({"zoo", "lenet5", "-o", model}, dir).status == 0);
  const CliResult r = run_cli(
      {"check", model, "--device", "cuda", "--precision", "fp16", "--cudnn-benchmark"}, dir);
  if (cuda::device_count() == 0) {
    CHECK(r.status == 1);
    CHECK(r.err.find("no CUDA device") != std::string::npos);
  } else {
    CHECK(r.status == 0);
    CHECK(r.out.find("0 failing") != std::string::npos);
  }
  const CliResult bad = run_cli({"inspect", model, "--cudnn-benchmark"}, dir);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--cudnn-benchmark") != std::string::npos);
}

// `check --device cuda --forward-only`: the inference model as `convert` writes it (fp16/bf16
// weights, Casts, FP32 inputs/outputs) on the device against the FP32 model on the CPU.
TEST_CASE("check --device cuda --forward-only passes on the zoo LeNet-5 and transformer") {
  TempDir dir;
  for (const char* name : {"lenet5", "transformer"}) {
    const std::string model = dir / (std::string(name) + ".onnx");
    REQUIRE(run_cli({"zoo", name, "-o", model}, dir).status == 0);
    for (const char* p : {"fp16", "bf16", "fp32"}) {
      CAPTURE(name);
      CAPTURE(p);
      const CliResult r = run_cli(
          {"check", model, "--device", "cuda", "--forward-only", "--precision", p, "--batch", "4"},
          dir);
      if (cuda::device_count() == 0) {
        CHECK(r.status == 1);
        CHECK(r.err.find("no CUDA device") != std::string::npos);
        continue;
      }
      INFO(r.out, r.err);
      CHECK(r.status == 0);
      CHECK(r.out.rfind("check CUDA-vs-CPU", 0) == 0);
      CHECK(r.out.find("forward only") != std::string::npos);
      CHECK(r.out.find("0 failing") != std::string::npos);
    }
  }
}
