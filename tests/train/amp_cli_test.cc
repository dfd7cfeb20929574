// The mixed-precision options of `onnx-amp-train MODEL` through the real binary: an fp16 run
// writes the original FP32 graph with trained FP32 weights and logs the loss scale; bad values
// of every option are refused with the option's name, a non-zero exit and no output file.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"

using namespace oat;
namespace fs = std::filesystem;

namespace {

struct Run {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("oat_amp_cli_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  std::string operator/(const std::string& name) const { return (dir_ / name).string(); }

  Run cli(const std::vector<std::string>& args) const {
    std::string cmd = quote(OAT_CLI_PATH);
    for (const auto& a : args) cmd += " " + quote(a);
    cmd += " >" + quote(*this / "out.txt") + " 2>" + quote(*this / "err.txt");
    const int raw = std::system(cmd.c_str());
    Run r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = slurp(*this / "out.txt");
    r.err = slurp(*this / "err.txt");
    return r;
  }

 private:
  fs::path dir_;
};

// The zoo MLP and 128 random images with labels, as files in `s`.
void write_inputs(const Scratch& s) {
  onnx_loader::save_graph(models::mlp(1), s / "mlp.onnx");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor x(DType::F32, {128, 1, 28, 28}), y(DType::I64, {128});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  for (int64_t i = 0; i < 128; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  onnx_loader::write_npy(x, s / "x.npy");
  onnx_loader::write_npy(y, s / "y.npy");
}

std::vector<std::string> train_args(const Scratch& s, std::vector<std::string> extra,
                                    const std::string& output = "trained.onnx") {
  std::vector<std::string> a = {s / "mlp.onnx", "--train-x", s / "x.npy", "--train-y", s / "y.npy",
                                "--steps", "3", "--batch", "32", "--threads", "1",
                                "-o", s / output};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("cli --precision fp16: trains, logs the loss scale, exports the FP32 graph with FP32 masters") {
  Scratch s;
  write_inputs(s);
  Run r = s.cli(train_args(s, {"--precision", "fp16", "--log", s / "log.jsonl", "--log-every", "1",
                               "--growth-interval", "2", "--fp32-nodes", "fc3"}));
  INFO(r.out, r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("fp16, dynamic loss scale from 65536") != std::string::npos);
  const std::string log = slurp(s / "log.jsonl");
  CHECK(log.find("\"loss_scale\":65536.0") != std::string::npos);
  CHECK(log.find("\"loss_scale\":131072.0") != std::string::npos);  // grew after 2 clean steps
  CHECK(log.find("\"skipped_steps\":0") != std::string::npos);

  onnx_loader::Model in = onnx_loader::load_model(s / "mlp.onnx");
  onnx_loader::Model out = onnx_loader::load_model(s / "trained.onnx");
  CHECK(out.graph.nodes.size() == in.graph.nodes.size());  // no Casts, no training nodes
  for (const Node& n : out.graph.nodes) CHECK(n.op != OpId::Cast);
  for (const auto& [name, t] : in.graph.initializers) {
    CAPTURE(name);
    const Tensor& u = out.graph.initializers.at(name);
    CHECK(u.dtype() == DType::F32);
    CHECK(u.shape() == t.shape());
  }
  const Tensor& w0 = in.graph.initializers.at("fc1.weight");
  const Tensor& w1 = out.graph.initializers.at("fc1.weight");
  CHECK_FALSE(std::equal(w0.data<float>(), w0.data<float>() + w0.numel(), w1.data<float>()));

  Run b = s.cli(train_args(s, {"--precision", "bf16"}, "bf16.onnx"));
  INFO(b.out, b.err);
  CHECK(b.status == 0);
  CHECK(b.out.find("bf16") != std::string::npos);
  CHECK(b.out.find("loss scale") == std::string::npos);  // bf16 defaults to no scaling
}

TEST_CASE("cli: bad mixed-precision options are refused with the option's name and no output") {
  Scratch s;
  write_inputs(s);
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"--precision", "fp8"}, "--precision"},
      {{"--precision", "fp16", "--loss-scale", "lots"}, "--loss-scale 'lots'"},
      {{"--precision", "fp16", "--loss-scale", "-2"}, "--loss-scale '-2'"},
      {{"--precision", "fp16", "--growth-factor", "0.5"}, "--growth-factor"},
      {{"--precision", "fp16", "--backoff-factor", "2"}, "--backoff-factor"},
      {{"--precision", "fp16", "--growth-interval", "0"}, "--growth-interval"},
      {{"--precision", "fp16", "--hysteresis", "0"}, "--hysteresis"},
      {{"--precision", "fp16", "--min-scale", "8", "--max-scale", "4"}, "--max-scale"},
      {{"--precision", "fp16", "--init-scale", "0"}, "--init-scale"},
      {{"--precision", "bf16", "--init-scale", "1024"}, "need dynamic loss scaling"},
      {{"--fp32-nodes", "fc1"}, "need --precision fp16 or bf16"},
      {{"--no-out-of-range-fp32"}, "need --precision fp16 or bf16"},
      {{"--precision", "fp16", "--fp32-nodes", "nosuch"}, "--fp32-nodes: no node named 'nosuch'"},
      {{"--precision", "fp16", "--fp16-nodes", "fc1", "--fp32-nodes", "fc1"}, "pinned both"},
      {{"--precision", "fp16", "--op-lists", s / "missing.json"}, "missing.json"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    CAPTURE(joined);
    Run r = s.cli(train_args(s, c.args));
    INFO(r.err);  // logged with any failing check below
    CHECK(r.status != 0);
    CHECK(r.status != -1);  // no crash
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.find("error") != std::string::npos);
    CHECK_FALSE(fs::exists(s / "trained.onnx"));
  }
}
