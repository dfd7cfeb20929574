// Runs the real onnx-amp-train binary with captured stdout and stderr: the one this build made
// (OAT_CLI_PATH), or $OAT_CLI when set (binaries carried to another machine, where the build's
// absolute path does not exist: scripts/make_device_bundle.sh).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "onnx_loader/model_builder.h"

namespace oat_test {

struct CliResult {
  int status = -1;  // exit status, or -1 when killed by a signal (a crash)
  std::string out;
  std::string err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < err.size()) {
      size_t end = err.find('\n', start);
      if (end == std::string::npos) end = err.size();
      lines.push_back(err.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  }
};

inline std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

inline std::string cli_path() {
  const char* cli = std::getenv("OAT_CLI");
  return cli && *cli ? std::string(cli) : std::string(OAT_CLI_PATH);
}

// `args` are passed as separate, quoted words.
inline CliResult run_cli(const std::vector<std::string>& args, const TempDir& scratch) {
  std::string cmd = shell_quote(cli_path());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  const std::string out = scratch / "cli_stdout.txt", err = scratch / "cli_stderr.txt";
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err);
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_bytes(out);
  r.err = read_bytes(err);
  return r;
}

}  // namespace oat_test
