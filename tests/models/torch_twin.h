// Comparing a zoo model with its PyTorch twin: a test writes the twin's weights and x.npy into a
// folder, then check_against_torch writes the Python script there, runs it (OAT_TORCH_PYTHON, else
// /usr/bin/python3), reads the twin's y.npy, and checks that our Executor's output 0 on x is
// within 1e-4·max(1, max |y|) of it. Without PyTorch the script fails and so does the test.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "test_tensors.h"

namespace oat_test {

inline void check_against_torch(const oat::Graph& g, const oat::Tensor& x,
                                const std::filesystem::path& dir, const std::string& script,
                                const std::string& script_args, const std::string& label) {
  namespace fs = std::filesystem;
  oat::onnx_loader::write_npy(x, (dir / "x.npy").string());
  std::ofstream(dir / "twin.py") << script;
  const char* env = std::getenv("OAT_TORCH_PYTHON");
  const std::string python = env ? env : "/usr/bin/python3";
  const std::string cmd = python + " " + (dir / "twin.py").string() + " " + script_args;
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "failed: ", cmd);
  const oat::Tensor ref = oat::onnx_loader::read_npy((dir / "y.npy").string());
  oat::Executor exec(g);
  const oat::Tensor y = exec.run({{"input", x}})[0];
  REQUIRE(y.shape() == ref.shape());
  const auto [max_err, max_ref] = max_abs_error(y, ref);
  MESSAGE(label << ": max |diff| " << max_err << ", max |y| " << max_ref);
  CHECK(max_ref > 0.1);
  CHECK(max_err <= 1e-4 * std::max(1.0, max_ref));
  fs::remove_all(dir);
}

}  // namespace oat_test
