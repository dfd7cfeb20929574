// Models with several inputs through the real binary: a tiny BERT-like classifier exported by
// torch.onnx (scripts/make_bert_tiny.py: input_ids, attention_mask, token_type_ids, int64 [N, 8];
// token + position + token-type embeddings, an nn.TransformerEncoder with src_key_padding_mask
// from attention_mask, a head on the first token -> logits [N, 2]) and .npy data for a learnable
// task (label: more than half the unpadded tokens are >= 11; padded positions are id 0).
//   train: fp16 from .npy with --train-input/--val-input, the loss falls and validation accuracy
//          rises; resuming from an epoch's checkpoint ends with the weights of the straight run;
//   eval:  loss and accuracy with --val-input;
//   check: passes with its defaults (mask all ones, token types random below the table size)
//          and with every input given by --input (padding in the mask);
//   errors: an input not fed, a wrong N, a wrong dtype, an unknown name, ids outside the table,
//          an input no default covers: one error line naming the input and the flag.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/cli_runner.h"
#include "onnx_loader/model_builder.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
using namespace oat_test;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void expect_error(const CliResult& r, const std::vector<std::string>& parts) {
  INFO(r.out, r.err);
  CHECK(r.status == 1);
  const auto lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("error: ", 0) == 0);
  for (const auto& p : parts) CHECK_MESSAGE(has(lines[0], p), p);
}

// Exports the model and writes the data into `dir` (torch 1.13: Debian's python3-torch; the
// interpreter is $OAT_TORCH_PYTHON, else /usr/bin/python3). CI installs torch through
// scripts/setup.sh, so a failure here is a test failure, not a skip.
void make_bert_tiny(const TempDir& dir) {
  const char* env = std::getenv("OAT_TORCH_PYTHON");
  const std::string py = env ? env : "/usr/bin/python3";
  const std::string cmd = cat(shell_quote(py), " ", shell_quote(cat(OAT_SOURCE_DIR, "/scripts/make_bert_tiny.py")),
                              " ", shell_quote(dir.path.string()), " 512 128 2>&1");
  const int status = std::system(cmd.c_str());
  REQUIRE_MESSAGE(status == 0, cmd, " failed: it needs Python with torch and numpy (Debian: "
                                    "python3-torch; scripts/setup.sh installs it)");
}

// The number after `key` on the last line that has it (-1 when none).
double last_value(const std::string& text, const std::string& key) {
  double v = -1;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t p = line.find(key);
    if (p != std::string::npos) v = std::atof(line.c_str() + p + key.size());
  }
  return v;
}

std::vector<std::string> data_args(const TempDir& d) {
  return {"--train-x", d / "train_ids.npy", "--train-y", d / "train_labels.npy",
          "--train-input", "attention_mask=" + d / "train_mask.npy",
          "--train-input", "token_type_ids=" + d / "train_types.npy",
          "--val-x", d / "val_ids.npy", "--val-y", d / "val_labels.npy",
          "--val-input", "attention_mask=" + d / "val_mask.npy",
          "--val-input", "token_type_ids=" + d / "val_types.npy"};
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_SUITE("cli multi-input") {
  TEST_CASE("a BERT-like model: train fp16, resume, eval, check, and the errors") {
    TempDir d;
    make_bert_tiny(d);
    const std::string model = d / "bert_tiny.onnx";

    // Train in fp16: the loss falls, validation accuracy rises well above chance (59% class 0).
    const std::vector<std::string> train = {"train", model, "--precision", "fp16", "--batch", "32",
                                            "--lr", "3e-3", "--seed", "1", "--log-every", "1000"};
    const CliResult r = run_cli(train + data_args(d) + std::vector<std::string>{
                                    "--epochs", "6", "-o", d / "trained.onnx"}, d);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "fp16, dynamic loss scale"));
    const double first = std::atof(r.out.c_str() + r.out.find("epoch 1: train loss ") + 20);
    const double last = last_value(r.out, "train loss ");
    const double acc = last_value(r.out, "val accuracy ");
    CHECK(first > 0.6);
    CHECK(last < 0.75 * first);
    CHECK(acc > 75.0);

    // eval of the trained model with the extra inputs: the last epoch's validation numbers.
    const CliResult e = run_cli({"eval", d / "trained.onnx", "--val-x", d / "val_ids.npy",
                                 "--val-y", d / "val_labels.npy", "--val-input",
                                 "attention_mask=" + d / "val_mask.npy", "--val-input",
                                 "token_type_ids=" + d / "val_types.npy"},
                                d);
    INFO(e.out, e.err);
    REQUIRE(e.status == 0);
    CHECK(has(e.out, "samples 128"));
    CHECK(last_value(e.out, "accuracy ") == doctest::Approx(acc).epsilon(1e-4));

    // Resume: 2 epochs with a checkpoint, then on to 3, ends where a straight 3-epoch run does
    // (the extra inputs follow the same shuffled indices as ids and labels).
    const std::vector<std::string> ck = {"--checkpoint", d / "ck", "--epochs"};
    REQUIRE(run_cli(train + data_args(d) + ck + std::vector<std::string>{"2", "-o", d / "a.onnx"}, d).status == 0);
    const CliResult resumed = run_cli(
        train + data_args(d) + ck + std::vector<std::string>{"3", "--resume", "-o", d / "b.onnx"}, d);
    INFO(resumed.out, resumed.err);
    REQUIRE(resumed.status == 0);
    const CliResult straight = run_cli(
        train + data_args(d) + std::vector<std::string>{"--epochs", "3", "-o", d / "c.onnx"}, d);
    REQUIRE(straight.status == 0);
    CHECK(last_value(resumed.out, "val loss ") == last_value(straight.out, "val loss "));
    CHECK(last_value(resumed.out, "val loss ") > 0);

    // check: defaults, then every input from --input (the mask has padding).
    const CliResult c1 = run_cli({"check", model, "--device", "cpu", "--batch", "4"}, d);
    INFO(c1.out, c1.err);
    CHECK(c1.status == 0);
    CHECK(has(c1.out, "input 'attention_mask' int64 [4, 8] (all ones: a mask by its name)"));
    CHECK(has(c1.out, "input 'token_type_ids' int64 [4, 8] (random ids in [0, 2))"));
    CHECK(has(c1.out, " 0 failing"));
    const CliResult c2 = run_cli({"check", model, "--device", "cpu", "--batch", "4", "--input",
                                  "input_ids=" + d / "val_ids.npy", "--input",
                                  "attention_mask=" + d / "val_mask.npy", "--input",
                                  "token_type_ids=" + d / "val_types.npy"},
                                 d);
    INFO(c2.out, c2.err);
    CHECK(c2.status == 0);
    CHECK(has(c2.out, "first batch of --input input_ids"));
    CHECK(has(c2.out, "input 'attention_mask' int64 [4, 8] (--input)"));
    CHECK(has(c2.out, " 0 failing"));

    // Errors.
    namespace np = onnx_loader;
    const Tensor mask = np::read_npy(d / "train_mask.npy");
    Tensor short_mask(DType::I64, {100, 8});
    std::memcpy(short_mask.raw_data(), mask.raw_data(), short_mask.nbytes());
    np::write_npy(short_mask, d / "short_mask.npy");
    np::write_npy(cast_tensor(mask, DType::F32), d / "float_mask.npy");
    Tensor big_types = np::read_npy(d / "train_types.npy");
    big_types.data<int64_t>()[3] = 7;
    np::write_npy(big_types, d / "big_types.npy");
    const std::vector<std::string> base = {"train", model, "--train-x", d / "train_ids.npy",
                                           "--train-y", d / "train_labels.npy", "-o", d / "x.onnx"};
    const std::string types = "token_type_ids=" + d / "train_types.npy";
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "attention_mask=" + d / "train_mask.npy"}, d),
                 {"input 'token_type_ids' (int64 [N, 8]) is not fed",
                  "--train-input token_type_ids=FILE.npy"});
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "attention_mask=" + d / "short_mask.npy",
                                                         "--train-input", types}, d),
                 {"input 'attention_mask' has 100 samples", "the data has 512"});
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "attention_mask=" + d / "float_mask.npy",
                                                         "--train-input", types}, d),
                 {"input 'attention_mask' is float32, the model's input is int64"});
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "attention_mask=" + d / "train_mask.npy",
                                                         "--train-input", "token_type_ids=" + d / "big_types.npy"}, d),
                 {"input 'token_type_ids': id 7 at sample 0 is outside [0, 2)"});
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "attention_mask=" + d / "train_mask.npy",
                                                         "--train-input", types, "--train-input",
                                                         "segment=" + d / "train_types.npy"}, d),
                 {"no other input named 'segment'", "'attention_mask', 'token_type_ids'"});
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "input_ids=" + d / "train_ids.npy"}, d),
                 {"'input_ids' is the model's data input: give it with --train-x"});
    expect_error(run_cli(base + std::vector<std::string>{"--train-input", "attention_mask"}, d),
                 {"--train-input attention_mask: expected NAME=FILE.npy"});
    expect_error(run_cli({"eval", model, "--val-x", d / "val_ids.npy", "--val-y", d / "val_labels.npy",
                          "--val-input", "attention_mask=" + d / "val_mask.npy"}, d),
                 {"input 'token_type_ids' (int64 [N, 8]) is not fed", "--val-input token_type_ids"});
    expect_error(run_cli({"check", model, "--device", "cpu", "--input",
                          "attention_mask=" + d / "float_mask.npy"}, d),
                 {"input 'attention_mask' is float32, the model's input is int64"});
  }

  TEST_CASE("a symbolic sequence axis (as Hugging Face exports): its size comes from the data") {
    TempDir d;
    make_bert_tiny(d);
    const std::string model = d / "bert_tiny_dynseq.onnx";
    const CliResult r = run_cli(std::vector<std::string>{"train", model, "--precision", "fp16",
                                                         "--batch", "32", "--lr", "3e-3",
                                                         "--epochs", "2", "-o", d / "t.onnx"} +
                                    data_args(d),
                                d);
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(last_value(r.out, "val accuracy ") > 0);
    const CliResult e = run_cli({"eval", d / "t.onnx", "--val-x", d / "val_ids.npy", "--val-y",
                                 d / "val_labels.npy", "--val-input",
                                 "attention_mask=" + d / "val_mask.npy", "--val-input",
                                 "token_type_ids=" + d / "val_types.npy"},
                                d);
    INFO(e.out, e.err);
    CHECK(e.status == 0);
    CHECK(last_value(e.out, "accuracy ") == doctest::Approx(last_value(r.out, "val accuracy ")).epsilon(1e-4));
    // check: a random batch cannot be sized; from --input it runs (mask and types defaulted to
    // the ids' sequence length).
    expect_error(run_cli({"check", model, "--device", "cpu"}, d),
                 {"input 'input_ids' has shape [batch, sequence]: dimension 1 is symbolic",
                  "--input input_ids=FILE.npy"});
    const CliResult c = run_cli({"check", model, "--device", "cpu", "--batch", "3", "--input",
                                 "input_ids=" + d / "val_ids.npy"},
                                d);
    INFO(c.out, c.err);
    CHECK(c.status == 0);
    CHECK(has(c.out, "input 'attention_mask' int64 [3, 8] (all ones: a mask by its name)"));
    CHECK(has(c.out, " 0 failing"));
  }

  TEST_CASE("check: a float input gets N(0,1); a float mask has no default and asks for --input") {
    // x float [N, 4] -> MatMul W; plus `scale` float [N, 4] multiplied in: random like x.
    TempDir d;
    ModelBuilder b(13);
    b.input("x", kFloat, {std::string("N"), int64_t{4}});
    b.input("scale", kFloat, {std::string("N"), int64_t{4}});
    b.init_f32("W", {4, 3}, std::vector<float>(12, 0.1f));
    b.node("Mul", {"x", "scale"}, {"xs"});
    b.node("MatMul", {"xs", "W"}, {"logits"});
    b.output("logits", kFloat, {std::string("N"), int64_t{3}});
    const std::string model = b.save(d.path / "two.onnx");
    const CliResult def = run_cli({"check", model, "--device", "cpu"}, d);
    INFO(def.out, def.err);
    CHECK(def.status == 0);
    CHECK(has(def.out, "input 'scale' float32 [4, 4] (random N(0,1), like the data input)"));
    {
      // The same model with the input named as a float mask: no default.
      ModelBuilder m(13);
      m.input("x", kFloat, {std::string("N"), int64_t{4}});
      m.input("float_mask", kFloat, {std::string("N"), int64_t{4}});
      m.init_f32("W", {4, 3}, std::vector<float>(12, 0.1f));
      m.node("Mul", {"x", "float_mask"}, {"xs"});
      m.node("MatMul", {"xs", "W"}, {"logits"});
      m.output("logits", kFloat, {std::string("N"), int64_t{3}});
      expect_error(run_cli({"check", m.save(d.path / "masked.onnx"), "--device", "cpu"}, d),
                   {"input 'float_mask' (float32 [N, 4]) has no default",
                    "--input float_mask=FILE.npy"});
    }
    Tensor s(DType::F32, {4, 4});
    for (int64_t i = 0; i < s.numel(); ++i) s.data<float>()[i] = 0.5f;
    onnx_loader::write_npy(s, d / "scale.npy");
    const CliResult r = run_cli({"check", model, "--device", "cpu", "--input", "scale=" + d / "scale.npy"}, d);
    INFO(r.out, r.err);
    CHECK(r.status == 0);
    CHECK(has(r.out, "input 'scale' float32 [4, 4] (--input)"));
  }
}

TEST_CASE("a scalar model input (shape []) is one value fed to every batch, in train and check") {
  // logits = MatMul(x, W) / temperature, temperature a float input of shape [].
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"N", 4});
  mb.input("temperature", kFloat, {});
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(static_cast<int>(i % 5) - 2);
  mb.init_f32("W", {4, 3}, w);
  mb.output("logits", kFloat, {"N", 3});
  mb.node("MatMul", {"x", "W"}, {"xw"}, "mm");
  mb.node("Div", {"xw", "temperature"}, {"logits"}, "scale");
  const std::string model = mb.save(dir.path / "tempered.onnx");
  // Class = argmax of the first three features: learnable by W.
  Tensor x(DType::F32, {64, 4});
  Tensor y(DType::I64, {64});
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 4; ++j) x.data<float>()[i * 4 + j] = static_cast<float>(((i * 7 + j * 3) % 11) - 5);
    int64_t best = 0;
    for (int64_t j = 1; j < 3; ++j)
      if (x.data<float>()[i * 4 + j] > x.data<float>()[i * 4 + best]) best = j;
    y.data<int64_t>()[i] = best;
  }
  onnx_loader::write_npy(x, dir / "x.npy");
  onnx_loader::write_npy(y, dir / "y.npy");
  onnx_loader::write_npy(Tensor::from_vector<float>({}, {2.0f}), dir / "t.npy");
  onnx_loader::write_npy(Tensor::from_vector<float>({3}, {1, 2, 3}), dir / "t3.npy");
  const std::vector<std::string> data = {"--train-x", dir / "x.npy", "--train-y", dir / "y.npy"};
  CliResult r = run_cli(std::vector<std::string>{"train", model, "--precision", "fp32", "--epochs", "3",
                         "--batch", "16", "--train-input", "temperature=" + dir / "t.npy", "-o",
                         dir / "trained.onnx"} + data,
                        dir);
  INFO(r.out, r.err);
  REQUIRE(r.status == 0);
  CHECK(fs::exists(dir.path / "trained.onnx"));
  // Three values for a scalar input: one error naming the input and what it takes.
  expect_error(run_cli(std::vector<std::string>{"train", model, "--steps", "1", "--train-input",
                        "temperature=" + dir / "t3.npy", "-o", dir / "t2.onnx"} + data,
                       dir),
               {"input 'temperature' is a scalar in the model (shape [])", "got [3]"});
  // check: given with --input, and by default (N(0,1): a float input that is not a mask).
  r = run_cli({"check", model, "--batch", "8", "--input", "temperature=" + dir / "t.npy"}, dir);
  INFO(r.out, r.err);
  CHECK(r.status == 0);
}
