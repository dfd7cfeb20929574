// The torchvision models the model, convert and check tests compare against:
// scripts/make_reference_models.py exports them with torch.onnx and records ONNX Runtime's
// outputs into <build>/model_refs, once per process (the script skips the work when the folder is
// up to date). OAT_PYTHON picks the interpreter that runs the driver (default python3 on PATH);
// the driver finds the torch and onnxruntime interpreters itself.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "runtime/error.h"

namespace oat_test {

// The folder of the reference models; fails the test, with what is missing, when the script
// failed (CI installs its packages through scripts/setup.sh, so that is a failure, not a skip).
inline std::filesystem::path reference_models() {
  static const std::string failure = [] {
    const char* py = std::getenv("OAT_PYTHON");
    const std::string cmd = oat::cat(py ? py : "python3", " '", OAT_SOURCE_DIR,
                                     "/scripts/make_reference_models.py' '", OAT_BINARY_DIR,
                                     "/model_refs'");
    std::cout << "$ " << cmd << std::endl;
    const int status = std::system(cmd.c_str());
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc == 0) return std::string();
    return oat::cat(
        "scripts/make_reference_models.py failed (exit ", rc, "; its output is above). ",
        "These tests need Python with torch + torchvision (Debian: python3-torch "
        "python3-torchvision) and with onnxruntime + onnx>=1.13 + numpy (pip install onnxruntime "
        "onnx numpy). CI installs both through scripts/setup.sh, so a missing package is a "
        "failure here, not a skip.");
  }();
  REQUIRE_MESSAGE(failure.empty(), failure);
  return std::filesystem::path(OAT_BINARY_DIR) / "model_refs";
}

}  // namespace oat_test
