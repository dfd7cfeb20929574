// Bad input, generated: ONNX's conformance node models (libonnx-testdata) with one to three
// structured mutations each (tests/fuzz/model_mutator.h), and sometimes a mutated input tensor,
// run through the real binary's `infer`, `inspect --precision fp16` and `convert`, and the same
// models made trainable through `train` (fp32, fp16 or bf16, two steps). Whatever the
// mutation, the binary must either succeed or exit 1 with an `error: ...` line that is ours (not
// a bare standard-library message such as "vector::_M_range_check"), within the time limit and
// without leaving an output behind; a crash, an abort, a hang or another exit status fails.
//
// Deterministic: iteration i uses the generator seeded with (OAT_FUZZ_SEED, i), so a failure is
// reproduced with OAT_FUZZ_SEED=S OAT_FUZZ_FIRST=i OAT_FUZZ_ITERATIONS=1. OAT_FUZZ_ITERATIONS
// (default 100) sets how many; OAT_FUZZ_KEEP=DIR keeps each failing model and its inputs there;
// OAT_FUZZ_CLI=PATH runs another build of the binary (a sanitizer build, say; with
// OAT_FUZZ_VMEM_KB=0, as AddressSanitizer's shadow memory needs more address space than the
// default limit of 8,000,000 KB leaves).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "fuzz/model_mutator.h"
#include "onnx_loader/model_builder.h"
#include "onnx_loader/tensor_io.h"

using namespace oat_test;

namespace {

const fs::path kNodeCases = "/usr/share/libonnx-testdata/data/node";

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoll(v) : fallback;
}

std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

struct Outcome {
  int status = -1;  // the shell's status: 124 timed out, 128 + n killed by signal n
  std::string err;
};

// The binary under a time limit and an address-space limit (a mutated dim may ask for terabytes;
// that must end in "error: out of memory", not in the OOM killer).
Outcome run(const std::vector<std::string>& args, const TempDir& dir) {
  const char* cli = std::getenv("OAT_FUZZ_CLI");
  const int64_t vmem_kb = env_int("OAT_FUZZ_VMEM_KB", 8000000);
  std::string cmd = (vmem_kb > 0 ? "ulimit -v " + std::to_string(vmem_kb) + "; " : std::string()) +
                    "timeout -k 5 60 " + quote(cli && *cli ? cli : OAT_CLI_PATH);
  for (const auto& a : args) cmd += " " + quote(a);
  const std::string err = dir / "stderr.txt";
  cmd += " >/dev/null 2>" + quote(err);
  const int raw = std::system(("sh -c " + quote(cmd)).c_str());
  Outcome o;
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  o.err = read_bytes(err);
  return o;
}

// What is wrong with an outcome ("" when it is fine).
std::string judge(const Outcome& o, bool output_left) {
  if (o.status == 124) return "timed out (60 s)";
  if (o.status > 128) return "killed by signal " + std::to_string(o.status - 128);
  if (o.status != 0 && o.status != 1) return "exit status " + std::to_string(o.status);
  if (o.status == 0) return "";
  if (output_left) return "failed but left an output behind";
  std::istringstream lines(o.err);
  std::string line, error;
  while (std::getline(lines, line))
    if (line.rfind("error: ", 0) == 0) error = line;
  if (error.empty()) return "exit 1 without an 'error: ' line";
  // Messages of the standard library or protobuf that reached the user unexplained.
  for (const char* bare : {"vector::", "basic_string", "_M_", "std::", "bad_array_new_length",
                           "bad_variant_access", "bad_optional_access", "map::at", "stoi", "stol",
                           "bad_function_call", "bad_cast", "Assertion"})
    if (error.find(bare) != std::string::npos) return "unexplained error: " + error;
  return "";
}

struct Case {
  fs::path dir;
  std::vector<fs::path> inputs;
};

std::vector<Case> node_cases() {
  std::vector<Case> cases;
  if (!fs::exists(kNodeCases)) return cases;
  for (const auto& e : fs::directory_iterator(kNodeCases)) {
    Case c{e.path(), {}};
    const fs::path data = e.path() / "test_data_set_0";
    if (!fs::exists(e.path() / "model.onnx") || !fs::exists(data)) continue;
    for (int i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i)
      c.inputs.push_back(data / ("input_" + std::to_string(i) + ".pb"));
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.dir < b.dir; });
  return cases;
}

template <class Proto>
Proto parse(const fs::path& p) {
  Proto m;
  const std::string bytes = read_bytes(p.string());
  if (!m.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + p.string());
  return m;
}

// OAT_FUZZ_KEEP: the failing case's folder copied to KEEP/name, with its command and what failed.
void keep_case(const char* keep, const std::string& name, const TempDir& dir,
               const std::vector<std::string>& args, const std::string& what) {
  const fs::path k = fs::path(keep) / name;
  fs::create_directories(k);
  fs::copy(dir.path, k, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string cmd = "onnx-amp-train";
  for (const auto& a : args) cmd += " " + quote(a);
  write_bytes((k / "command.txt").string(), cmd + "\n" + what + "\n");
}

template <class Proto>
void save(const Proto& m, const std::string& path) {
  std::string bytes;
  m.SerializeToString(&bytes);
  write_bytes(path, bytes);
}

}  // namespace

TEST_CASE("mutated conformance models end in a result or in a named error, never in a crash") {
  const std::vector<Case> cases = node_cases();
  REQUIRE_MESSAGE(cases.size() > 100,
                  "libonnx-testdata's node cases are missing under " << kNodeCases.string());
  const uint64_t seed = static_cast<uint64_t>(env_int("OAT_FUZZ_SEED", 20261201));
  const int64_t first = env_int("OAT_FUZZ_FIRST", 0);
  const int64_t iterations = env_int("OAT_FUZZ_ITERATIONS", 100);
  const char* keep = std::getenv("OAT_FUZZ_KEEP");
  std::vector<std::string> failures;
  int64_t succeeded = 0, refused = 0;
  for (int64_t it = first; it < first + iterations; ++it) {
    oat_fuzz::Rng rng(seed * 1000003u + static_cast<uint64_t>(it));
    const Case& c = cases[static_cast<size_t>(oat_fuzz::detail::below(rng, cases.size()))];
    onnx::ModelProto m = parse<onnx::ModelProto>(c.dir / "model.onnx");
    std::vector<std::string> did;
    for (int64_t k = 1 + oat_fuzz::detail::below(rng, 3), tries = 0; k > 0 && tries < 20; ++tries) {
      const std::string d = oat_fuzz::mutate_model(m, rng);
      if (!d.empty()) did.push_back(d), --k;
    }
    TempDir dir;
    const std::string model = dir / "model.onnx";
    save(m, model);
    std::vector<std::string> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      std::string path = c.inputs[i].string();
      if (oat_fuzz::detail::below(rng, 8) == 0) {
        auto t = parse<onnx::TensorProto>(c.inputs[i]);
        const std::string d = oat_fuzz::mutate_tensor(t, rng);
        if (!d.empty()) {
          did.push_back("input " + std::to_string(i) + ": " + d);
          path = dir / ("input_" + std::to_string(i) + ".pb");
          save(t, path);
        }
      }
      inputs.push_back(path);
    }
    std::vector<std::vector<std::string>> commands;
    std::vector<std::string> infer = {"infer", model, "-o", dir / "out", "--threads", "1"};
    for (const auto& i : inputs) infer.insert(infer.end(), {"-i", i});
    commands.push_back(infer);
    if (oat_fuzz::detail::below(rng, 4) == 0) {
      commands.push_back({"inspect", model, "--precision", "fp16"});
      commands.push_back({"convert", model, "-o", dir / "converted.onnx"});
    }
    for (const auto& args : commands) {
      const Outcome o = run(args, dir);
      const bool left = args[0] == "infer"     ? fs::exists(dir / "out")
                        : args[0] == "convert" ? fs::exists(dir / "converted.onnx")
                                               : false;
      const std::string bad = judge(o, o.status != 0 && left);
      (o.status == 0 ? succeeded : refused) += 1;
      if (o.status == 0 && left)
        fs::remove_all(args[0] == "infer" ? dir / "out" : dir / "converted.onnx");
      if (bad.empty()) continue;
      std::string what = "iteration " + std::to_string(it) + ", " + c.dir.filename().string() +
                         ", `" + args[0] + "`: " + bad + "\n    mutations:";
      for (const auto& d : did) what += " [" + d + "]";
      failures.push_back(what);
      if (keep) keep_case(keep, "iteration_" + std::to_string(it), dir, args, what);
    }
  }
  MESSAGE("fuzz: seed " << seed << ", iterations " << first << ".." << first + iterations - 1
                        << ": " << succeeded << " runs succeeded, " << refused
                        << " ended in a named error, " << failures.size() << " failed");
  std::string all;
  for (const auto& f : failures) all += f + "\n";
  CHECK_MESSAGE(failures.empty(), all);
}

namespace {

// A conformance case made trainable: input 0 (float32, a batch along dim 0) is the data, scaled
// first by a parameter fuzz_w of its per-sample shape (ones), so every op's data input has a
// gradient; the other inputs become initializers with the test data's values (float ones are
// parameters too); output 0 (float32, the same batch) is the MSE target. False when the case does
// not fit (another input 0 or output 0 type, a scalar, an empty batch).
bool make_trainable(const Case& c, onnx::ModelProto& m, const TempDir& dir, int64_t& batch) {
  const fs::path out0 = c.dir / "test_data_set_0" / "output_0.pb";
  if (c.inputs.empty() || !fs::exists(out0)) return false;
  oat::Tensor x, y;
  try {
    x = oat::onnx_loader::read_tensor_pb(c.inputs[0].string()).tensor;
    y = oat::onnx_loader::read_tensor_pb(out0.string()).tensor;
  } catch (const oat::Error&) {
    return false;  // a sequence or optional
  }
  if (x.dtype() != oat::DType::F32 || y.dtype() != oat::DType::F32 || x.rank() == 0 ||
      y.rank() == 0 || x.dim(0) == 0 || x.dim(0) != y.dim(0))
    return false;
  m = parse<onnx::ModelProto>(c.dir / "model.onnx");
  onnx::GraphProto& g = *m.mutable_graph();
  if (g.input_size() != static_cast<int>(c.inputs.size())) return false;
  const std::string data = g.input(0).name();
  for (size_t k = 1; k < c.inputs.size(); ++k) {
    onnx::TensorProto t = parse<onnx::TensorProto>(c.inputs[k]);
    t.set_name(g.input(static_cast<int>(k)).name());
    *g.add_initializer() = t;
  }
  while (g.input_size() > 1) g.mutable_input()->RemoveLast();
  for (auto& n : *g.mutable_node())
    for (auto& in : *n.mutable_input())
      if (in == data) in = "fuzz_scaled";
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("fuzz_w");
  w.set_data_type(onnx::TensorProto::FLOAT);
  for (int d = 1; d < x.rank(); ++d) w.add_dims(x.dim(d));
  for (int64_t i = 0; i < x.numel() / x.dim(0); ++i) w.add_float_data(1.0f);
  onnx::NodeProto scale;
  scale.set_name("fuzz_scale");
  scale.set_op_type("Mul");
  scale.add_input(data);
  scale.add_input("fuzz_w");
  scale.add_output("fuzz_scaled");
  g.mutable_node()->Add(std::move(scale));
  std::rotate(g.mutable_node()->rbegin(), g.mutable_node()->rbegin() + 1, g.mutable_node()->rend());
  oat::onnx_loader::write_npy(x, dir / "x.npy");
  oat::onnx_loader::write_npy(y, dir / "y.npy");
  batch = x.dim(0);
  return true;
}

}  // namespace

TEST_CASE("conformance models made trainable train two steps or refuse by name, mutated or not") {
  // `train` (autodiff, mixed precision, the optimizer) on every kind of op: each case's data input
  // scaled by a parameter, its other inputs parameters or constants, an MSE loss against its
  // expected output; half of them also mutated. Success, or exit 1 with one of our errors and no
  // trained model left behind (an op without a gradient, a loss that became NaN: named errors).
  const std::vector<Case> cases = node_cases();
  REQUIRE(cases.size() > 100);
  const uint64_t seed = static_cast<uint64_t>(env_int("OAT_FUZZ_SEED", 20261201));
  const int64_t first = env_int("OAT_FUZZ_FIRST", 0);
  const int64_t iterations = env_int("OAT_FUZZ_ITERATIONS", 100) / 2;
  const char* keep = std::getenv("OAT_FUZZ_KEEP");
  std::vector<std::string> failures;
  int64_t trained = 0, refused = 0;
  for (int64_t it = first; it < first + iterations; ++it) {
    oat_fuzz::Rng rng(seed * 15485863u + static_cast<uint64_t>(it));
    TempDir dir;
    onnx::ModelProto m;
    int64_t batch = 0;
    const Case* c = nullptr;
    for (int tries = 0; tries < 50 && !c; ++tries) {
      const Case& k = cases[static_cast<size_t>(oat_fuzz::detail::below(rng, cases.size()))];
      if (make_trainable(k, m, dir, batch)) c = &k;
    }
    REQUIRE(c);
    std::vector<std::string> did;
    if (oat_fuzz::detail::below(rng, 2) == 0)
      for (int64_t k = 1 + oat_fuzz::detail::below(rng, 2), tries = 0; k > 0 && tries < 20;
           ++tries) {
        const std::string d = oat_fuzz::mutate_model(m, rng);
        if (!d.empty()) did.push_back(d), --k;
      }
    const std::string model = dir / "model.onnx", out = dir / "trained.onnx";
    save(m, model);
    const std::string precision =
        oat_fuzz::detail::pick(rng, std::vector<std::string>{"fp32", "fp16", "bf16"});
    const std::vector<std::string> args = {
        "train",       model,     "--train-x", dir / "x.npy", "--train-y", dir / "y.npy",
        "--loss",      "mse",     "--steps",   "2",           "--batch",   std::to_string(batch),
        "--precision", precision, "-o",        out,           "--threads", "1",
        "--log-every", "1000"};
    const Outcome o = run(args, dir);
    const bool left = fs::exists(out);
    const std::string bad = judge(o, o.status != 0 && left);
    (o.status == 0 ? trained : refused) += 1;
    if (o.status == 0 && !left) {
      failures.push_back("iteration " + std::to_string(it) + ": trained but wrote no model");
      continue;
    }
    if (bad.empty()) continue;
    std::string what = "iteration " + std::to_string(it) + ", " + c->dir.filename().string() +
                       ", `train --precision " + precision + "`: " + bad + "\n    mutations:";
    for (const auto& d : did) what += " [" + d + "]";
    failures.push_back(what);
    if (keep) keep_case(keep, "train_iteration_" + std::to_string(it), dir, args, what);
  }
  MESSAGE("fuzz (train): seed " << seed << ", iterations " << first << ".."
                                << first + iterations - 1 << ": " << trained << " trained, "
                                << refused << " ended in a named error, " << failures.size()
                                << " failed");
  std::string all;
  for (const auto& f : failures) all += f + "\n";
  CHECK_MESSAGE(failures.empty(), all);
}

TEST_CASE(
    "input files with corrupted bytes (.npy headers and data, .pb tensors) end in a named "
    "error or a result") {
  TempDir dir;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {"n", 3});
  mb.output("y", kFloat, {"n", 3});
  mb.node("Relu", {"x"}, {"y"}, "relu");
  const std::string model = mb.save(dir / "model.onnx");
  const std::string npy = dir / "x.npy", pb = dir / "x.pb";
  const oat::Tensor x = oat::Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  oat::onnx_loader::write_npy(x, npy);
  oat::onnx_loader::write_tensor_pb(x, "x", pb);
  const uint64_t seed = static_cast<uint64_t>(env_int("OAT_FUZZ_SEED", 20261201));
  const int64_t iterations = env_int("OAT_FUZZ_ITERATIONS", 100) / 2;
  std::vector<std::string> failures;
  for (int64_t it = 0; it < iterations; ++it) {
    oat_fuzz::Rng rng(seed * 7919u + static_cast<uint64_t>(it));
    const bool is_npy = it % 2 == 0;
    std::string bytes = read_bytes(is_npy ? npy : pb);
    std::string did;
    for (int64_t k = 1 + oat_fuzz::detail::below(rng, 4); k > 0; --k) {
      // Mostly the header (the first 80 bytes of a .npy; all of a small .pb).
      const int64_t span = is_npy && oat_fuzz::detail::below(rng, 4) != 0
                               ? std::min<int64_t>(80, bytes.size())
                               : static_cast<int64_t>(bytes.size());
      const int64_t at = oat_fuzz::detail::below(rng, span);
      switch (oat_fuzz::detail::below(rng, 4)) {
        case 0:
          bytes.resize(static_cast<size_t>(at));
          did += " truncated at " + std::to_string(at);
          break;
        case 1:
          if (at < static_cast<int64_t>(bytes.size()))
            bytes[static_cast<size_t>(at)] = static_cast<char>(oat_fuzz::detail::pick(
                rng, std::vector<int>{0, '9', ',', '(', ')', '\'', 0x7f, 0xff, ' ', '<', '>', 'f',
                                      'i', 'u', '8'}));
          did += " byte " + std::to_string(at) + " changed";
          break;
        case 2:
          bytes.insert(static_cast<size_t>(at),
                       std::string(1 + oat_fuzz::detail::below(rng, 3), '9'));
          did += " digits inserted at " + std::to_string(at);
          break;
        default:
          if (at < static_cast<int64_t>(bytes.size()))
            bytes.erase(static_cast<size_t>(at), 1 + oat_fuzz::detail::below(rng, 3));
          did += " bytes erased at " + std::to_string(at);
          break;
      }
    }
    const std::string input = dir / (is_npy ? "bad.npy" : "bad.pb");
    write_bytes(input, bytes);
    const Outcome o = run({"infer", model, "-i", input, "-o", dir / "out"}, dir);
    const bool left = fs::exists(dir / "out");
    const std::string bad = judge(o, o.status != 0 && left);
    if (o.status == 0 && left) fs::remove_all(dir / "out");
    if (!bad.empty())
      failures.push_back("iteration " + std::to_string(it) + (is_npy ? " (.npy)" : " (.pb)") +
                         ": " + bad + "\n    mutations:" + did);
  }
  std::string all;
  for (const auto& f : failures) all += f + "\n";
  CHECK_MESSAGE(failures.empty(), all);
}
