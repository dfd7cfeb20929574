// The default op lists (DESIGN.md's table), JSON overrides and their error messages, block().
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "convert/precision.h"

using namespace oat;
using namespace oat::convert;

namespace {

namespace fs = std::filesystem;

// A temporary folder removed with its contents.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "oat_convert_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string write_json(const ScratchDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir / name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(OpLists& l, const std::string& path) {
  try {
    l.apply_json_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("default op lists are DESIGN.md's table") {
  const OpLists l = OpLists::defaults();
  CHECK(l.allow == std::set<std::string>{"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum",
                                         "LSTM", "GRU", "RNN"});
  for (const char* op : {"Exp",
                         "Log",
                         "Pow",
                         "Reciprocal",
                         "Softplus",
                         "Softmax",
                         "LogSoftmax",
                         "SoftmaxCrossEntropyLoss",
                         "NegativeLogLikelihoodLoss",
                         "ReduceSum",
                         "ReduceMean",
                         "ReduceMax",
                         "ReduceMin",
                         "ReduceProd",
                         "ReduceL1",
                         "ReduceL2",
                         "ReduceLogSum",
                         "ReduceLogSumExp",
                         "ReduceSumSquare",
                         "CumSum",
                         "LayerNormalization",
                         "GroupNormalization",
                         "InstanceNormalization",
                         "LpNormalization",
                         "Range",
                         "TopK",
                         "Tan",
                         "Sinh",
                         "Cosh",
                         "Atanh",
                         "Resize",
                         "Upsample",
                         "GridSample",
                         "LRN",
                         "MeanVarianceNormalization",
                         "DFT",
                         "STFT"})
    CHECK_MESSAGE(l.list_of(op) == OpList::Deny, op);
  CHECK(l.infer == std::set<std::string>{"Add",
                                         "Sub",
                                         "Mul",
                                         "Div",
                                         "Sum",
                                         "Max",
                                         "Min",
                                         "Sigmoid",
                                         "Tanh",
                                         "LeakyRelu",
                                         "Elu",
                                         "Gelu",
                                         "Erf",
                                         "Sqrt",
                                         "Clip",
                                         "Where",
                                         "Neg",
                                         "Abs",
                                         "AveragePool",
                                         "GlobalAveragePool",
                                         "BatchNormalization",
                                         "Dropout",
                                         "Mean",
                                         "Shrink",
                                         "Asin",
                                         "Acos",
                                         "Atan",
                                         "Asinh",
                                         "Acosh"});
  CHECK(l.clear == std::set<std::string>{"Relu", "MaxPool", "Reshape", "Flatten", "Transpose",
                                         "Concat", "Split", "Slice", "Gather", "Squeeze",
                                         "Unsqueeze", "Identity", "Pad", "Expand", "Tile",
                                         "Shape", "Trilu", "GatherND", "ScatterElements",
                                         "Scatter", "ScatterND", "ReverseSequence", "OneHot"});
  // EyeLike makes its output from X's shape alone, as ConstantOfShape: in no list.
  CHECK(l.list_of("EyeLike") == OpList::None);
  CHECK(l.list_of("ConstantOfShape") == OpList::None);
  CHECK(l.list_of("Floor") == OpList::None);
  CHECK(std::string(op_list_name(OpList::Infer)) == "infer");
  // The lists are disjoint.
  for (const auto& op : l.allow) CHECK(!l.deny.count(op));
  for (const auto& op : l.infer) CHECK((!l.deny.count(op) && !l.clear.count(op)));
}

TEST_CASE("a JSON file adds and removes ops per list; an added op leaves its old list") {
  ScratchDir dir;
  OpLists l = OpLists::defaults();
  l.apply_json_file(write_json(dir, "lists.json", R"({
      "deny": {"add": ["MatMul", "Floor"]},
      "infer": {"remove": ["Dropout"]},
      "allow": {"add": ["Softmax"], "remove": []}})"));
  CHECK(l.list_of("MatMul") == OpList::Deny);
  CHECK(!l.allow.count("MatMul"));
  CHECK(l.list_of("Floor") == OpList::Deny);
  CHECK(l.list_of("Dropout") == OpList::None);
  CHECK(l.list_of("Softmax") == OpList::Allow);
  CHECK(!l.deny.count("Softmax"));

  l.block({"Conv", "Relu"});
  CHECK(l.list_of("Conv") == OpList::Deny);
  CHECK(l.list_of("Relu") == OpList::Deny);
}

TEST_CASE("malformed op-list files are errors naming the file and the key") {
  ScratchDir dir;
  OpLists l = OpLists::defaults();
  const std::string missing = dir / "nope.json";
  CHECK(error_of(l, missing) == "op lists file '" + missing + "': cannot open it");

  const std::string bad = write_json(dir, "bad.json", "{\"allow\": [");
  CHECK(error_of(l, bad).find("op lists file '" + bad + "': not valid JSON") == 0);

  const std::string arr = write_json(dir, "arr.json", "[1, 2]");
  CHECK(error_of(l, arr).find("expected a JSON object") != std::string::npos);

  const std::string unknown = write_json(dir, "unknown.json", R"({"allowed": {"add": ["X"]}})");
  CHECK(error_of(l, unknown) ==
        "op lists file '" + unknown +
            "': unknown list 'allowed' (expected allow, deny, infer or clear)");

  const std::string key = write_json(dir, "key.json", R"({"deny": {"insert": ["X"]}})");
  CHECK(error_of(l, key).find("'deny.insert' is not \"add\" or \"remove\"") != std::string::npos);

  const std::string notarr = write_json(dir, "notarr.json", R"({"deny": {"add": "Exp"}})");
  CHECK(error_of(l, notarr).find("'deny.add' must be an array") != std::string::npos);

  const std::string notstr = write_json(dir, "notstr.json", R"({"clear": {"add": [3]}})");
  CHECK(error_of(l, notstr).find("'clear.add' holds a non-string entry") != std::string::npos);

  const std::string notobj = write_json(dir, "notobj.json", R"({"infer": ["Add"]})");
  CHECK(error_of(l, notobj).find("'infer' must be an object") != std::string::npos);
}
