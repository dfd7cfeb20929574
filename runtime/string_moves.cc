#include "runtime/string_moves.h"

#include <numeric>

namespace oat {

bool takes_strings(OpId op) {
  switch (op) {
    case OpId::Cast:
    case OpId::CastLike:
    case OpId::StringNormalizer:
    case OpId::TfIdfVectorizer:
    case OpId::Identity:
    case OpId::Reshape:
    case OpId::Flatten:
    case OpId::Squeeze:
    case OpId::Unsqueeze:
    case OpId::Shape:
    case OpId::Size:
    case OpId::If:
    case OpId::Loop:
    case OpId::Scan:
      return true;
    default:
      return false;
  }
}

bool moves_strings(OpId op) {
  switch (op) {
    case OpId::Transpose:
    case OpId::Concat:
    case OpId::Split:
    case OpId::Slice:
    case OpId::Gather:
    case OpId::GatherElements:
    case OpId::Expand:
    case OpId::Tile:
    case OpId::Compress:
    case OpId::Where:
      return true;
    default:
      return false;
  }
}

bool has_string_input(const std::vector<const Tensor*>& in) {
  for (const Tensor* t : in)
    if (t && t->dtype() == DType::String) return true;
  return false;
}

namespace {

// Whether input k of a movement op is data (moved) rather than indices, shapes or a condition:
// every input of Concat, Where's X and Y, input 0 of the others.
bool is_data_input(OpId op, size_t k) {
  if (op == OpId::Concat) return true;
  if (op == OpId::Where) return k == 1 || k == 2;
  return k == 0;
}

}  // namespace

void StringMove::number_inputs(const Node& node, std::vector<const Tensor*>& in) {
  numbers_.reserve(in.size());  // no reallocation: in[] points into it
  // A string index, shape or condition first (the likelier mistake), then numbers beside strings.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t k = 0; k < in.size(); ++k) {
      const bool data = is_data_input(node.op, k);
      if (!in[k] || data != (pass == 1) || data == (in[k]->dtype() == DType::String)) continue;
      throw Error(cat(
          node.describe(), ": input ", k, " '", node.inputs[k], "' is a ", in[k]->describe(),
          data ? ", but the op's other data are strings" : "; only the data moved may be strings"));
    }
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor*& t = in[k];
    if (!t || !is_data_input(node.op, k)) continue;
    if (!t->is_tensor())
      throw Error(
          cat(node.describe(), ": ", node.op_type, " takes tensors, not a ", t->describe()));
    Tensor& num = numbers_.emplace_back(DType::I64, t->shape());
    const int64_t first = static_cast<int64_t>(strings_.size());
    std::iota(num.data<int64_t>(), num.data<int64_t>() + num.numel(), first);
    const std::string* s = t->data<std::string>();
    for (int64_t i = 0; i < t->numel(); ++i) strings_.push_back(s + i);
    t = &num;
  }
}

void StringMove::name_outputs(const Node& node, std::vector<Tensor>& outs) const {
  const int64_t n = static_cast<int64_t>(strings_.size());
  for (Tensor& o : outs) {
    if (!o.defined()) continue;
    if (o.dtype() != DType::I64)
      throw Error(cat(node.describe(), ": moving strings gave a ", o.describe(),
                      " output (expected the int64 element numbers)"));
    Tensor s(DType::String, o.shape());
    const int64_t* idx = o.data<int64_t>();
    std::string* dst = s.data<std::string>();
    for (int64_t i = 0; i < o.numel(); ++i) {
      if (idx[i] < 0 || idx[i] >= n)
        throw Error(
            cat(node.describe(), ": moving strings gave element number ", idx[i], " of ", n));
      dst[i] = *strings_[static_cast<size_t>(idx[i])];
    }
    o = std::move(s);
  }
}

}  // namespace oat
