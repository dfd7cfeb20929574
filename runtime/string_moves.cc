#include "runtime/string_moves.h"

#include <map>
#include <numeric>
#include <string_view>

namespace oat {

bool takes_strings(OpId op) {
  switch (op) {
    case OpId::Cast:
    case OpId::CastLike:
    case OpId::StringNormalizer:
    case OpId::TfIdfVectorizer:
    // ai.onnx.ml: string categories in (kernels/ml_encoders.cc), string columns picked
    // (kernels/ml_features.cc), maps of strings read (kernels/ml_maps.cc)
    case OpId::DictVectorizer:
    case OpId::CastMap:
    case OpId::LabelEncoder:
    case OpId::CategoryMapper:
    case OpId::OneHotEncoder:
    case OpId::ArrayFeatureExtractor:
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

bool compares_strings(OpId op) { return op == OpId::Equal || op == OpId::Unique; }

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

void StringMove::intern_inputs(const Node& node, std::vector<const Tensor*>& in) {
  numbers_.reserve(in.size());  // no reallocation: in[] points into it
  // Each distinct string (a view into an input) -> its id and one element holding it.
  std::map<std::string_view, std::pair<int64_t, const std::string*>> ids;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!in[k]) continue;
    if (in[k]->dtype() != DType::String || !in[k]->is_tensor())
      throw Error(cat(node.describe(), ": input ", k, " '", node.inputs[k], "' is a ",
                      in[k]->describe(), ", but the op's other inputs are strings"));
    const std::string* s = in[k]->data<std::string>();
    for (int64_t i = 0; i < in[k]->numel(); ++i) ids.emplace(s[i], std::make_pair(0, s + i));
  }
  for (auto& [text, entry] : ids) {  // sorted: the ids keep the strings' order
    entry.first = static_cast<int64_t>(strings_.size());
    strings_.push_back(entry.second);
  }
  for (const Tensor*& t : in) {
    if (!t) continue;
    Tensor& num = numbers_.emplace_back(DType::I64, t->shape());
    const std::string* s = t->data<std::string>();
    for (int64_t i = 0; i < t->numel(); ++i) num.data<int64_t>()[i] = ids.at(s[i]).first;
    t = &num;
  }
}

void StringMove::name_outputs(const Node& node, std::vector<Tensor>& outs) const {
  const int64_t n = static_cast<int64_t>(strings_.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    Tensor& o = outs[k];
    if (!o.defined()) continue;
    if (node.op == OpId::Equal || (node.op == OpId::Unique && k > 0)) continue;
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
