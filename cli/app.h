// The onnx-amp-train command line: subcommands and their option parsing.
#pragma once

namespace oat::cli {

// Parses argv, runs the subcommand, prints `error: ...` on failure; returns the exit status.
int run_main(int argc, char** argv);

}  // namespace oat::cli
