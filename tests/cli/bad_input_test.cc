// Bad input to the real binary: each case ends in exit status 1 and exactly one `error: ...` line
// on stderr that names what was wrong, and leaves no output file behind.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cli/cli_runner.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;

namespace {

// x: float32 [2, 3] -> Relu -> y, with a weight so that a truncated file cuts through data.
ModelBuilder relu_model() {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3});
  mb.init_f32("unused_weight", {512}, std::vector<float>(512, 1.0f));
  mb.output("y", kFloat, {2, 3});
  mb.node("Relu", {"x"}, {"y"}, "relu");
  return mb;
}

struct Fixture {
  TempDir dir;
  std::string model, x_ok, out;
  Fixture() {
    model = relu_model().save(dir.path / "model.onnx");
    x_ok = dir / "x.npy";
    onnx_loader::write_npy(Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6}), x_ok);
    out = dir / "out";
  }
  CliResult infer(const std::string& model_path, std::vector<std::string> inputs,
                  const std::string& out_dir) {
    std::vector<std::string> args = {"infer", model_path};
    for (const auto& i : inputs) {
      args.push_back("-i");
      args.push_back(i);
    }
    args.push_back("-o");
    args.push_back(out_dir);
    return run_cli(args, dir);
  }
  // Exit 1, one `error:` line containing every part, and no output folder or file.
  void expect_error(const CliResult& r, const std::vector<std::string>& parts) {
    CAPTURE(r.err);
    CHECK(r.status == 1);
    auto lines = r.err_lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].rfind("error: ", 0) == 0);
    for (const auto& p : parts) {
      CAPTURE(p);
      CHECK(lines[0].find(p) != std::string::npos);
    }
    CHECK_FALSE(fs::exists(out));
  }
};

}  // namespace

TEST_CASE("infer works on a good model and input (the baseline for the cases below)") {
  Fixture f;
  CliResult r = f.infer(f.model, {f.x_ok}, f.out);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  auto y = onnx_loader::read_tensor_pb(f.out + "/output_0.pb");
  CHECK(y.name == "y");
  CHECK(y.tensor.to_float_vector() == std::vector<float>{0, 2, 0, 4, 0, 6});
  // The batch (first) dimension may differ from the declared one; NAME=FILE binds by name.
  const std::string x5 = f.dir / "x5.pb";
  onnx_loader::write_tensor_pb(Tensor::zeros(DType::F32, {5, 3}), "whatever", x5);
  r = f.infer(f.model, {"x=" + x5}, f.dir / "out5");
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(onnx_loader::read_tensor_pb(f.dir / "out5/output_0.pb").tensor.shape() == Shape{5, 3});
}

TEST_CASE("a truncated model file") {
  Fixture f;
  const std::string bytes = read_bytes(f.model);
  write_bytes(f.dir / "cut.onnx", bytes.substr(0, bytes.size() / 2));
  f.expect_error(f.infer(f.dir / "cut.onnx", {f.x_ok}, f.out),
                 {"cut.onnx", "not an ONNX model", "truncated"});
}

TEST_CASE("files that are not ONNX models: a PNG, a text file, an empty file, a folder") {
  Fixture f;
  write_bytes(f.dir / "image.png",
              std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0", 29));
  f.expect_error(f.infer(f.dir / "image.png", {f.x_ok}, f.out), {"image.png", "not an ONNX model"});
  write_bytes(f.dir / "readme.txt", "This is a text file.\nIt is not a model.\n");
  f.expect_error(f.infer(f.dir / "readme.txt", {f.x_ok}, f.out),
                 {"readme.txt", "not an ONNX model"});
  write_bytes(f.dir / "empty.onnx", "");
  f.expect_error(f.infer(f.dir / "empty.onnx", {f.x_ok}, f.out), {"empty.onnx", "empty"});
  f.expect_error(f.infer(f.dir.path.string(), {f.x_ok}, f.out), {"is a directory"});
}

TEST_CASE("a missing model file") {
  Fixture f;
  f.expect_error(f.infer(f.dir / "nope.onnx", {f.x_ok}, f.out), {"nope.onnx", "no such file"});
}

TEST_CASE("an unsupported op names the node, the op and the opset") {
  Fixture f;
  ModelBuilder mb = relu_model();
  mb.g()->mutable_node(0)->set_op_type("FooBar");
  mb.g()->mutable_node(0)->set_name("strange_node");
  mb.save(f.dir.path / "foobar.onnx");
  f.expect_error(f.infer(f.dir / "foobar.onnx", {f.x_ok}, f.out),
                 {"'strange_node'", "FooBar", "opset 13", "not supported"});
  // StringNormalizer is a real ONNX op (opset 10) that takes strings only: given float32, it is
  // refused naming the node, the op and the dtype.
  ModelBuilder mn(11);
  mn.input("x", kFloat, {2, 3});
  mn.output("y", kFloat, {2, 3});
  mn.node("StringNormalizer", {"x"}, {"y"}, "normalizer");
  mn.save(f.dir.path / "strnorm.onnx");
  f.expect_error(f.infer(f.dir / "strnorm.onnx", {f.x_ok}, f.out),
                 {"'normalizer'", "StringNormalizer", "opset 11", "float32", "have: string"});
  // An operator domain the loader does not know.
  mb.g()->mutable_node(0)->set_domain("com.microsoft");
  mb.save(f.dir.path / "ms.onnx");
  f.expect_error(f.infer(f.dir / "ms.onnx", {f.x_ok}, f.out),
                 {"'strange_node'", "unknown operator domain 'com.microsoft'"});
}

TEST_CASE("a missing external-data file is named") {
  Fixture f;
  ModelBuilder mb = relu_model();
  auto* w = mb.g()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("model_weights.bin");
  mb.save(f.dir.path / "ext.onnx");
  f.expect_error(f.infer(f.dir / "ext.onnx", {f.x_ok}, f.out),
                 {"ext.onnx", "unused_weight", "model_weights.bin", "does not exist"});
}

TEST_CASE("inputs of the wrong shape or dtype, a missing input, a bad input file") {
  Fixture f;
  const std::string wide = f.dir / "wide.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 4}), wide);
  f.expect_error(f.infer(f.model, {wide}, f.out), {"input 'x'", "[2, 4]", "expected [2, 3]"});
  const std::string ints = f.dir / "ints.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::I64, {2, 3}), ints);
  f.expect_error(f.infer(f.model, {ints}, f.out), {"input 'x'", "int64", "expected float32"});

  ModelBuilder two = relu_model();
  two.input("bias", kFloat, {3});
  two.node("Add", {"y", "bias"}, {"z"}, "add");
  two.g()->mutable_output(0)->set_name("z");
  two.save(f.dir.path / "two.onnx");
  f.expect_error(f.infer(f.dir / "two.onnx", {f.x_ok}, f.out),
                 {"missing input 'bias'", "float32 [3]"});
  f.expect_error(f.infer(f.model, {}, f.out), {"missing input 'x'", "float32 [2, 3]"});
  f.expect_error(f.infer(f.model, {"nosuch=" + f.x_ok}, f.out),
                 {"input 'nosuch' is not an input of the model"});
  f.expect_error(f.infer(f.model, {f.x_ok, f.x_ok}, f.out),
                 {"more inputs given than the model has"});
  f.expect_error(f.infer(f.model, {f.dir / "absent.npy"}, f.out), {"absent.npy", "no such file"});
  write_bytes(f.dir / "broken.npy", std::string("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'", 25));
  f.expect_error(f.infer(f.model, {f.dir / "broken.npy"}, f.out), {"broken.npy"});
}

TEST_CASE("an output folder that cannot be written") {
  Fixture f;
  // Under a regular file: neither it nor anything else is created.
  CliResult r = f.infer(f.model, {f.x_ok}, f.model + "/out");
  f.expect_error(r, {"model.onnx/out", "cannot create output folder", "is not a folder"});
  // The output path is a regular file.
  f.expect_error(f.infer(f.model, {f.x_ok}, f.x_ok), {"x.npy", "not a folder"});
  CHECK(f.dir.list() ==
        std::vector<std::string>{"cli_stderr.txt", "cli_stdout.txt", "model.onnx", "x.npy"});
}

TEST_CASE("outputs are written all or none") {
  Fixture f;
  ModelBuilder mb = relu_model();
  mb.output("x", kFloat, {2, 3});  // a second output: the input itself
  mb.save(f.dir.path / "two_out.onnx");
  fs::create_directories(f.dir.path / "res/output_1.pb");  // output 1 cannot be written
  CliResult r = f.infer(f.dir / "two_out.onnx", {f.x_ok}, f.dir / "res");
  CHECK(r.status == 1);
  CHECK(r.err.find("output_1.pb") != std::string::npos);
  CHECK_FALSE(fs::exists(f.dir.path / "res/output_0.pb"));
  fs::remove(f.dir.path / "res/output_1.pb");
  r = run_cli(
      {"infer", f.dir / "two_out.onnx", "-i", f.x_ok, "-o", f.dir / "res", "--threads", "1"},
      f.dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("1 threads") != std::string::npos);
  CHECK(onnx_loader::read_tensor_pb(f.dir / "res/output_1.pb").name == "x");
  CHECK(onnx_loader::read_tensor_pb(f.dir / "res/output_1.pb").tensor.to_float_vector() ==
        std::vector<float>{-1, 2, -3, 4, -5, 6});
}

TEST_CASE("--help works on every subcommand; a bad command line is one error line") {
  TempDir dir;
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"},
                                        {"infer", "--help"},
                                        {"inspect", "--help"},
                                        {"train", "--help"},
                                        {"eval", "--help"},
                                        {"zoo", "--help"}}) {
    CliResult r = run_cli(args, dir);
    CAPTURE(args[0]);
    CHECK(r.status == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
    CHECK(r.err.empty());
  }
  CHECK(run_cli({"infer", "--help"}, dir).out.find("--output-dir") != std::string::npos);
  CHECK(run_cli({"--version"}, dir).status == 0);
  for (std::vector<std::string> args : {std::vector<std::string>{},
                                        {"--frobnicate"},
                                        {"infer", "m.onnx"},
                                        {"inspect", "--bogus", "m.onnx"}}) {
    CliResult r = run_cli(args, dir);
    CAPTURE(r.err);
    CHECK(r.status == 2);
    REQUIRE(r.err_lines().size() == 1);
    CHECK(r.err_lines()[0].rfind("error: ", 0) == 0);
  }
  // A first word that is no subcommand is a model for the default `train`: a missing file.
  CliResult r = run_cli({"frobnicate"}, dir);
  CHECK(r.status == 1);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err_lines()[0].find("frobnicate") != std::string::npos);
}

// Cases found by the bad-input sweep (mutated zoo models and torch exports through inspect, infer,
// convert, check, train and eval): each crashed or printed a message that named nothing.
namespace {

// x: float32 [N, 1, 6, 6] -> MaxPool 2x2 with `strides` -> Flatten -> y [N, 9].
ModelBuilder pool_model(std::vector<int64_t> strides) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"N", 1, 6, 6});
  mb.output("y", kFloat, {"N", 9});
  auto* n = mb.node("MaxPool", {"x"}, {"p"}, "pool");
  auto* k = add_attr(n, "kernel_shape", onnx::AttributeProto::INTS);
  k->add_ints(2);
  k->add_ints(2);
  auto* s = add_attr(n, "strides", onnx::AttributeProto::INTS);
  for (int64_t v : strides) s->add_ints(v);
  mb.node("Flatten", {"p"}, {"y"}, "flat");
  return mb;
}

// Exit 1 and one `error:` line with every part.
void expect_one_error(const CliResult& r, const std::vector<std::string>& parts) {
  CAPTURE(r.err);
  CHECK(r.status == 1);
  auto lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("error: ", 0) == 0);
  for (const auto& p : parts) {
    CAPTURE(p);
    CHECK(lines[0].find(p) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("strides [0, 0] are an error naming the node in every command, not SIGFPE") {
  TempDir dir;
  const std::string model = pool_model({0, 0}).save(dir.path / "zero_stride.onnx");
  const std::string x = dir / "x.npy", y = dir / "y.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 1, 6, 6}), x);
  onnx_loader::write_npy(Tensor::from_vector<int64_t>({2}, {1, 3}), y);
  const std::vector<std::string> parts = {"zero_stride.onnx", "node 'pool' (MaxPool, opset 13)",
                                          "strides [0, 0] must all be >= 1"};
  expect_one_error(run_cli({"inspect", model}, dir), parts);
  expect_one_error(run_cli({"infer", model, "-i", x, "-o", dir / "out"}, dir), parts);
  expect_one_error(run_cli({"convert", model, "-o", dir / "out.onnx"}, dir), parts);
  expect_one_error(run_cli({"check", model, "--batch", "2"}, dir), parts);
  expect_one_error(run_cli({"train", model, "--train-x", x, "--train-y", y, "--steps", "1",
                            "--batch", "2", "-o", dir / "trained.onnx"},
                           dir),
                   parts);
  expect_one_error(run_cli({"eval", model, "--val-x", x, "--val-y", y}, dir), parts);
  CHECK_FALSE(fs::exists(dir.path / "out"));
  CHECK_FALSE(fs::exists(dir.path / "out.onnx"));
  CHECK_FALSE(fs::exists(dir.path / "trained.onnx"));
  // The same model with strides [2, 2] runs (the baseline).
  pool_model({2, 2}).save(dir.path / "ok.onnx");
  CliResult r = run_cli({"infer", dir / "ok.onnx", "-i", x, "-o", dir / "out"}, dir);
  CAPTURE(r.err);
  CHECK(r.status == 0);
}

TEST_CASE("a model without inputs runs without -i") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.output("y", kFloat, {2});
  onnx::NodeProto* c = mb.node("Constant", {}, {"y"}, "constant");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(kFloat);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_float_data(1.5f);
  a->mutable_t()->add_float_data(-2.0f);
  const std::string model = mb.save(dir.path / "constant.onnx");
  CliResult r = run_cli({"infer", model, "-o", dir / "out"}, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  const Tensor y =
      onnx_loader::read_tensor_file((dir.path / "out" / "output_0.pb").string()).tensor;
  CHECK(y.shape() == Shape{2});
  CHECK(y.data<float>()[1] == -2.0f);
}

TEST_CASE("a ConvTranspose whose weight has the wrong rank is named, not a crash in libonnx") {
  // ONNX 1.12's ConvTranspose inference reads the kernel's dims past the end of a rank-2 weight
  // (SIGSEGV); inference runs in a child process (onnx_loader/isolated_inference.h), its crash
  // is a warning, and the kernel names the node.
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 2, 5});
  mb.input("w", kFloat, {2, 5});
  mb.output("y", kFloat, {1, 2, 5});
  mb.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
  const std::string model = mb.save(dir.path / "deconv.onnx");
  const std::string x = dir / "x.npy", w = dir / "w.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {1, 2, 5}), x);
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 5}), w);
  const std::vector<std::string> parts = {"node 'deconv' (ConvTranspose, opset 13)",
                                          "W [2, 5] and X [1, 2, 5] must have the same rank"};
  expect_one_error(run_cli({"infer", model, "-i", x, "-i", w, "-o", dir / "out"}, dir), parts);
  // convert verifies the converted model against the float32 one on these shapes.
  expect_one_error(run_cli({"convert", model, "-o", dir / "out.onnx"}, dir), parts);
  // inspect lists the node; it runs nothing.
  CliResult r = run_cli({"inspect", model}, dir);
  CAPTURE(r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("ConvTranspose") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out"));
  CHECK_FALSE(fs::exists(dir.path / "out.onnx"));
}

TEST_CASE("a model without outputs: eval, check and train say so instead of crashing") {
  TempDir dir;
  ModelBuilder mb = pool_model({2, 2});
  mb.g()->clear_output();
  const std::string model = mb.save(dir.path / "no_outputs.onnx");
  const std::string x = dir / "x.npy", y = dir / "y.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 1, 6, 6}), x);
  onnx_loader::write_npy(Tensor::from_vector<int64_t>({2}, {1, 3}), y);
  const std::vector<std::string> parts = {"no_outputs.onnx", "declares no outputs"};
  expect_one_error(run_cli({"eval", model, "--val-x", x, "--val-y", y}, dir), parts);
  expect_one_error(run_cli({"check", model, "--batch", "2"}, dir), parts);
  expect_one_error(run_cli({"train", model, "--train-x", x, "--train-y", y, "--steps", "1",
                            "-o", dir / "trained.onnx"},
                           dir),
                   parts);
  expect_one_error(run_cli({"convert", model, "-o", dir / "out.onnx"}, dir), parts);
  CHECK_FALSE(fs::exists(dir.path / "trained.onnx"));
  CHECK_FALSE(fs::exists(dir.path / "out.onnx"));
}

TEST_CASE("a huge Pad names the node when its output cannot be allocated") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3});
  mb.init_i64("pads", {4}, {int64_t{1} << 40, 0, 0, 0});
  mb.output("y", kFloat, {});
  mb.node("Pad", {"x", "pads"}, {"y"}, "big_pad");
  const std::string model = mb.save(dir.path / "pad.onnx");
  const std::string x = dir / "x.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 3}), x);
  expect_one_error(run_cli({"infer", model, "-i", x, "-o", dir / "out"}, dir),
                   {"node 'big_pad' (Pad, opset 13)", "out of memory allocating"});
  CHECK_FALSE(fs::exists(dir.path / "out"));
}

TEST_CASE("training inputs or targets of rank 0 are named as such") {
  TempDir dir;
  const std::string model = dir / "mlp.onnx";
  REQUIRE(run_cli({"zoo", "mlp", "-o", model}, dir).status == 0);
  const std::string x = dir / "x.npy", y = dir / "y.npy", scalar = dir / "scalar.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 1, 28, 28}), x);
  onnx_loader::write_npy(Tensor::from_vector<int64_t>({2}, {1, 3}), y);
  onnx_loader::write_npy(Tensor::from_vector<float>({}, {1.0f}), scalar);
  // Before: `error: vector::_M_range_check: __n (which is 0) >= this->size() (which is 0)`.
  expect_one_error(run_cli({"train", model, "--train-x", scalar, "--train-y", y, "--steps", "1",
                            "-o", dir / "trained.onnx"},
                           dir),
                   {"training data", "inputs are a single value (shape [])"});
  onnx_loader::write_npy(Tensor::from_vector<int64_t>({}, {1}), scalar);
  expect_one_error(run_cli({"train", model, "--train-x", x, "--train-y", scalar, "--steps", "1",
                            "-o", dir / "trained.onnx"},
                           dir),
                   {"training data", "targets are a single value (shape [])"});
  expect_one_error(run_cli({"eval", model, "--val-x", x, "--val-y", scalar}, dir),
                   {"evaluation data", "targets are a single value (shape [])"});
  CHECK_FALSE(fs::exists(dir.path / "trained.onnx"));
}

TEST_CASE("an index out of range in a composite op names the model's node, not its expansion") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("d", kFloat, {4, 3});
  mb.input("i", kInt64, {2, 1});
  mb.input("u", kFloat, {2, 3});
  mb.output("y", kFloat, {4, 3});
  mb.node("ScatterND", {"d", "i", "u"}, {"y"}, "scatter");
  const std::string model = mb.save(dir.path / "scatter.onnx");
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {4, 3}), dir / "d.npy");
  onnx_loader::write_npy(Tensor::from_vector<int64_t>({2, 1}, {1, 7}), dir / "i.npy");
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2, 3}), dir / "u.npy");
  // Before: the error began with the expansion's internal GatherGrad node.
  const CliResult r = run_cli({"infer", model, "-i", "d=" + dir / "d.npy", "-i",
                               "i=" + dir / "i.npy", "-i", "u=" + dir / "u.npy", "-o", dir / "out"},
                              dir);
  expect_one_error(r, {"node 'scatter' (ScatterND), in its expansion:", "out of range"});
  CHECK(r.err.find("error: node 'scatter' (ScatterND)") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out"));
}

TEST_CASE("NaN or infinite values in a data set are named by sample before training starts") {
  TempDir dir;
  const std::string model = dir / "mlp.onnx";
  REQUIRE(run_cli({"zoo", "mlp", "-o", model}, dir).status == 0);
  const std::string x = dir / "x.npy", y = dir / "y.npy";
  Tensor xs = Tensor::zeros(DType::F32, {3, 1, 28, 28});
  xs.data<float>()[2 * 784 + 5] = std::numeric_limits<float>::quiet_NaN();
  onnx_loader::write_npy(xs, x);
  onnx_loader::write_npy(Tensor::from_vector<int64_t>({3}, {1, 3, 2}), y);
  expect_one_error(run_cli({"train", model, "--train-x", x, "--train-y", y, "--steps", "1",
                            "-o", dir / "trained.onnx"},
                           dir),
                   {"training data: inputs: value NaN at sample 2 (element 5"});
  expect_one_error(run_cli({"eval", model, "--val-x", x, "--val-y", y}, dir),
                   {"evaluation data: inputs: value NaN at sample 2"});
  xs.data<float>()[2 * 784 + 5] = 0.0f;
  xs.data<float>()[784] = -std::numeric_limits<float>::infinity();
  onnx_loader::write_npy(xs, x);
  expect_one_error(run_cli({"train", model, "--train-x", x, "--train-y", y, "--steps", "1",
                            "-o", dir / "trained.onnx"},
                           dir),
                   {"training data: inputs: value -inf at sample 1 (element 0"});
  CHECK_FALSE(fs::exists(dir.path / "trained.onnx"));
}

TEST_CASE("a model input of a type no kernel takes (COMPLEX64) is refused, whatever file is given") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("s", onnx::TensorProto_DataType_COMPLEX64, {2});
  mb.output("y", onnx::TensorProto_DataType_COMPLEX64, {2});
  mb.node("Identity", {"s"}, {"y"}, "id");
  const std::string model = mb.save(dir.path / "complex.onnx");
  const std::string f = dir / "f.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {2}), f);
  // Before: the float file ran through the Identity and came out as a float32 output.
  expect_one_error(run_cli({"infer", model, "-i", "s=" + f, "-o", dir / "out"}, dir),
                   {"input 's' is of type COMPLEX64, which onnx-amp-train does not support"});
  CHECK_FALSE(fs::exists(dir.path / "out"));
  expect_one_error(run_cli({"check", model}, dir), {"input 's' is of type COMPLEX64"});
  const CliResult r = run_cli({"inspect", model}, dir);
  CHECK(r.status == 0);
  CHECK(r.out.find("s  COMPLEX64 [2]  (a type this build cannot feed)") != std::string::npos);
  CHECK(r.out.find("1 input(s) have a type this build cannot feed") != std::string::npos);
}

TEST_CASE("a string input runs in infer from a .npy or .pb file, and is refused by check and train") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("s", onnx::TensorProto_DataType_STRING, {3});
  mb.output("y", onnx::TensorProto_DataType_FLOAT, {3});
  add_attr(mb.node("Cast", {"s"}, {"y"}, "parse"), "to", onnx::AttributeProto::INT)->set_i(1);
  auto* labels = mb.g()->add_initializer();  // unread: inspect counts its text
  labels->set_name("labels");
  labels->set_data_type(onnx::TensorProto_DataType_STRING);
  labels->add_dims(2);
  labels->add_string_data("ab");
  labels->add_string_data("cde");
  const std::string model = mb.save(dir.path / "strings.onnx");
  // A float file for a string input is refused naming the input; a unicode .npy runs.
  const std::string f = dir / "f.npy";
  onnx_loader::write_npy(Tensor::zeros(DType::F32, {3}), f);
  const CliResult wrong = run_cli({"infer", model, "-i", "s=" + f, "-o", dir / "out"}, dir);
  CHECK(wrong.status != 0);
  CHECK(wrong.err.find("'s'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out"));
  const std::string t = dir / "t.npy";
  onnx_loader::write_npy(Tensor::from_vector<std::string>({3}, {"1.5", "-2", "1e3"}), t);
  const CliResult ok = run_cli({"infer", model, "-i", "s=" + t, "-o", dir / "out"}, dir);
  CAPTURE(ok.err);
  REQUIRE(ok.status == 0);
  CHECK(onnx_loader::read_tensor_pb(dir / "out/output_0.pb").tensor.to_float_vector() ==
        std::vector<float>{1.5f, -2.0f, 1000.0f});
  // A string .pb file too.
  onnx_loader::write_tensor_pb(Tensor::from_vector<std::string>({3}, {"4", "5", "NaN"}), "s",
                               dir / "t.pb");
  fs::remove_all(dir.path / "out");
  REQUIRE(run_cli({"infer", model, "-i", "s=" + (dir / "t.pb"), "-o", dir / "out"}, dir).status == 0);
  const Tensor y = onnx_loader::read_tensor_pb(dir / "out/output_0.pb").tensor;
  CHECK(y.to_float_vector()[1] == 5.0f);
  CHECK(std::isnan(y.to_float_vector()[2]));
  expect_one_error(run_cli({"check", model}, dir), {"input 's' is a string tensor"});
  const CliResult r = run_cli({"inspect", model}, dir);
  CHECK(r.status == 0);
  CHECK(r.out.find("cannot feed") == std::string::npos);
  CHECK(r.out.find("1 integer/bool/string initializers, 2 elements (5 bytes)") != std::string::npos);
}

TEST_CASE("OAT_HOST_CACHE_MB that is not a whole number warns once and keeps the default") {
  Fixture f;
  for (const char* bad : {"lots", "-5", "12MB"}) {
    CAPTURE(bad);
    const std::string err = f.dir / "env_err.txt";
    const std::string cmd = std::string("OAT_HOST_CACHE_MB=") + shell_quote(bad) + " " +
                            shell_quote(OAT_CLI_PATH) + " infer " + shell_quote(f.model) + " -i " +
                            shell_quote(f.x_ok) + " -o " + shell_quote(f.dir / "env_out") +
                            " >/dev/null 2>" + shell_quote(err);
    CHECK(std::system(cmd.c_str()) == 0);  // the run itself is unaffected
    const std::string e = read_bytes(err);
    CHECK_MESSAGE(e.find("warning: OAT_HOST_CACHE_MB='" + std::string(bad) +
                         "' is not a whole number of MiB; using the default 2048") == 0,
                  e);
    CHECK(std::count(e.begin(), e.end(), '\n') == 1);
  }
}
