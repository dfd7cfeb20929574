// `infer` runs models whose inputs and outputs are sequences (ONNX's test_sequence_insert_at_back:
// NAME=FILE.pb binds a SequenceProto, the output is written as one and equals ONNX's data), and
// `train` refuses a sequence input by name.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/cli_runner.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;

namespace {
const std::filesystem::path kCase =
    "/usr/share/libonnx-testdata/data/node/test_sequence_insert_at_back";
}

TEST_CASE("infer: a sequence input and output through .pb files") {
  REQUIRE_MESSAGE(std::filesystem::is_directory(kCase), "libonnx-testdata is not installed");
  TempDir dir;
  const std::string data = (kCase / "test_data_set_0").string();
  CliResult r = run_cli(
      {"infer", (kCase / "model.onnx").string(), "--input", "sequence=" + data + "/input_0.pb",
       "--input", "tensor=" + data + "/input_1.pb", "-o", (dir.path / "out").string()},
      dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("output_sequence  sequence(int64) of 4") != std::string::npos);
  const Tensor got =
      onnx_loader::read_value_pb((dir.path / "out" / "output_0.pb").string(), ValueKind::Sequence)
          .tensor;
  const Tensor want = onnx_loader::read_value_pb(data + "/output_0.pb", ValueKind::Sequence).tensor;
  REQUIRE(got.items().size() == want.items().size());
  for (size_t k = 0; k < got.items().size(); ++k)
    CHECK(got.items()[k].to_int_vector() == want.items()[k].to_int_vector());

  // A tensor file for the sequence input is a named error, not a crash.
  r = run_cli(
      {"infer", (kCase / "model.onnx").string(), "--input", "sequence=" + data + "/input_1.pb",
       "--input", "tensor=" + data + "/input_1.pb", "-o", (dir.path / "out2").string()},
      dir);
  CHECK(r.status != 0);
  CHECK_MESSAGE(r.err.find("input_1.pb") != std::string::npos, r.err);
  CHECK_FALSE(std::filesystem::exists(dir.path / "out2" / "output_0.pb"));
}

TEST_CASE("train refuses a sequence input, naming it") {
  REQUIRE_MESSAGE(std::filesystem::is_directory(kCase), "libonnx-testdata is not installed");
  TempDir dir;
  const Tensor x = Tensor::zeros(DType::F32, {4, 3});
  const std::string xf = (dir.path / "x.npy").string();
  onnx_loader::write_npy(x, xf);
  CliResult r =
      run_cli({"train", (kCase / "model.onnx").string(), "--train-x", xf, "--train-y", xf}, dir);
  CHECK(r.status != 0);
  CHECK_MESSAGE(r.err.find("input 'sequence' is a sequence") != std::string::npos, r.err);
}
