// Binding "[NAME=]FILE" tensor files (.npy or TensorProto .pb) to a graph's inputs, shared by
// `infer -i` and `convert --calib`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::cli {

// NAME=FILE binds by name (a spec that is itself an existing file is a plain FILE); a plain
// FILE whose stored name (a .npy's stem, a .pb's name) is an unbound input binds to it; the rest
// fill the unbound inputs in graph order. `what` starts every error ("input", "--calib").
// `allow_initializers`: NAME may also be an initializer (a feed that overrides it).
std::map<std::string, Tensor> bind_input_files(const std::vector<std::string>& specs,
                                               const Graph& g, const std::string& what,
                                               bool allow_initializers);

}  // namespace oat::cli
