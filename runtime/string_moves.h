// String tensors in the executor: which ops take them, and how the movement ops move them.
//
// A string element is a std::string object, not bytes, so a kernel that copies elements as bytes
// (every movement kernel: runtime/cpu/kernels/movement.h) must never see one. The executor
// therefore gives a string input only to
//   - the ops that read strings themselves (takes_strings): Cast, CastLike, StringNormalizer,
//     TfIdfVectorizer, ai.onnx.ml's LabelEncoder, CategoryMapper, OneHotEncoder and
//     ArrayFeatureExtractor, the views Identity / Reshape / Flatten / Squeeze / Unsqueeze, Shape and
//     Size (metadata), and If / Loop / Scan (their subgraphs' nodes are checked in turn);
//   - the movement ops (moves_strings): Transpose, Concat, Split, Slice, Gather, GatherElements,
//     Expand, Tile, Compress, Where. Each string input is swapped for
//     an int64 tensor of its element numbers (input k's numbered after input k-1's), the op's
//     int64 kernel moves the numbers, and every output is turned back into the strings its
//     numbers name. The result is exactly the strings the op would have moved; the cost is one
//     int64 tensor per string input and one string copy per output element.
//   - Equal (opset 19's string form) and Unique (compares_strings): every distinct string of the
//     inputs gets an id in sorted (byte, hence code point) order, the op's int64 kernel compares
//     the ids, and Unique's first output is turned back into strings (its index and count
//     outputs stay int64; sorted order of the ids is the strings' order, as numpy's unique).
// Any other op given a string tensor fails by name ("Add takes no string tensors").
#pragma once

#include <string>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace oat {

bool takes_strings(OpId op);
bool moves_strings(OpId op);
bool compares_strings(OpId op);

// Whether any input (a tensor, or a sequence / optional of them) has element type string.
bool has_string_input(const std::vector<const Tensor*>& in);

// One node's run of a movement op on the element numbers of its string inputs.
class StringMove {
 public:
  // Replaces each string tensor input of `node` in `in` by its element numbers (in[k] then
  // points into this object, which must outlive the kernel's run).
  void number_inputs(const Node& node, std::vector<const Tensor*>& in);
  // For compares_strings ops: replaces each string input by the ids of its strings (equal
  // strings, equal ids; ids ordered as the strings). Every input must then be a string.
  void intern_inputs(const Node& node, std::vector<const Tensor*>& in);
  // Replaces each int64 output that holds moved data (every output of a movement op, Unique's
  // first; none of Equal's) by the strings its numbers name. Throws naming the node when such an
  // output is not int64 or a number is out of range (neither can happen for the ops above).
  void name_outputs(const Node& node, std::vector<Tensor>& outs) const;

 private:
  std::vector<const std::string*> strings_;  // every string input's elements, in number order
  std::vector<Tensor> numbers_;
};

}  // namespace oat
