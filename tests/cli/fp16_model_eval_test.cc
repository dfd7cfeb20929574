// A low-precision inference model (what `convert` writes, float16 inputs and weights): `eval`
// rounds the float32 batches to its input type and scores it next to the float32 model, `infer`
// rounds a float32 file with a note; `train` and `check` refuse it naming a float16 parameter
// and saying what to train instead.
#include <doctest/doctest.h>

#include <random>
#include <sstream>

#include "cli/cli_runner.h"
#include "onnx_loader/tensor_io.h"
#include "test_tensors.h"

using namespace oat;
using namespace oat_test;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

double value_after(const std::string& out, const std::string& key) {
  const size_t at = out.find(key);
  REQUIRE(at != std::string::npos);
  std::istringstream in(out.substr(at + key.size()));
  double v = 0;
  in >> v;
  return v;
}

}  // namespace

TEST_CASE("eval scores a converted float16 model; train and check refuse it") {
  TempDir dir;
  const std::string fp32 = dir / "mlp.onnx", fp16 = dir / "mlp_fp16.onnx";
  REQUIRE(run_cli({"zoo", "mlp", "-o", fp32}, dir).status == 0);
  CliResult r = run_cli({"convert", fp32, "-o", fp16}, dir);  // float16 inputs and outputs
  REQUIRE(r.status == 0);
  const std::string x = dir / "x.npy", y = dir / "y.npy";
  onnx_loader::write_npy(uniform_tensor({64, 1, 28, 28}, 1, 0.0f, 1.0f), x);
  Tensor labels(DType::I64, {64});
  for (int64_t i = 0; i < 64; ++i) labels.data<int64_t>()[i] = i % 10;
  onnx_loader::write_npy(labels, y);

  const CliResult a = run_cli({"eval", fp32, "--val-x", x, "--val-y", y}, dir);
  const CliResult b = run_cli({"eval", fp16, "--val-x", x, "--val-y", y}, dir);
  INFO(a.out, a.err, b.out, b.err);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const double la = value_after(a.out, "loss "), lb = value_after(b.out, "loss ");
  CHECK(la > 1.0);
  CHECK(std::fabs(la - lb) < 1e-2 * la);

  // infer takes the float32 file too, rounding it with a note.
  const std::string one = dir / "x1.npy";
  onnx_loader::write_npy(uniform_tensor({2, 1, 28, 28}, 2, 0.0f, 1.0f), one);
  r = run_cli({"infer", fp16, "-i", "input=" + one, "-o", dir / "out16"}, dir);
  CHECK(r.status == 0);
  CHECK(has(r.err, "note: input 'input' given as float32, rounded to the model's float16"));

  for (const char* cmd : {"train", "check"}) {
    CAPTURE(cmd);
    const std::vector<std::string> args =
        std::string(cmd) == "train"
            ? std::vector<std::string>{"train", fp16, "--train-x", x, "--train-y", y, "-o", dir / "t.onnx"}
            : std::vector<std::string>{"check", fp16, "--device", "cpu"};
    r = run_cli(args, dir);
    CHECK(r.status == 1);
    CHECK(has(r.err, "is float16: this is a low-precision inference model"));
    CHECK(has(r.err, "train the float32 model, with --precision fp16 or bf16"));
  }
}
