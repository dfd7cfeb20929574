// Structured mutations of ONNX models and tensors for the bad-input fuzz test (fuzz_cli_test.cc).
// Each mutation edits one thing a broken exporter or a hand-edited file could get wrong (an
// attribute's value or type, a node's inputs, outputs, op or domain, an initializer's dims, type or
// data, a graph input's declared type, the opset) and returns a one-line description of what it
// did, so that a failing case can be named and reproduced from its seed. Some keep a tensor
// self-consistent (new dims with data of the matching size) to reach the kernels' shape checks
// rather than the loader's size checks.
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace oat_fuzz {

using Rng = std::mt19937_64;

namespace detail {

inline int64_t below(Rng& rng, int64_t n) {
  return n <= 1 ? 0 : static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
}
template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(below(rng, static_cast<int64_t>(v.size())))];
}

inline int64_t interesting_int(Rng& rng) {
  static const std::vector<int64_t> v = {-1,
                                         0,
                                         1,
                                         2,
                                         3,
                                         -2,
                                         7,
                                         64,
                                         -1000,
                                         1 << 20,
                                         std::numeric_limits<int32_t>::max(),
                                         std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min()};
  return pick(rng, v);
}

inline float interesting_float(Rng& rng) {
  static const std::vector<float> v = {0.0f,
                                       -1.0f,
                                       1.0f,
                                       0.5f,
                                       2.0f,
                                       1e30f,
                                       -1e-30f,
                                       std::numeric_limits<float>::quiet_NaN(),
                                       std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity()};
  return pick(rng, v);
}

// Bytes per element of an ONNX data type (0: strings, unknown types).
inline int elem_size(int t) {
  switch (t) {
    case 1:
    case 6:
    case 12:
      return 4;  // float, int32, uint32
    case 2:
    case 3:
    case 9:
      return 1;  // uint8, int8, bool
    case 4:
    case 5:
    case 10:
    case 16:
      return 2;  // uint16, int16, float16, bfloat16
    case 7:
    case 11:
    case 13:
      return 8;  // int64, double, uint64
    default:
      return 0;
  }
}

// Element v (an integer in [-1, 3]) of type t as bytes.
inline std::string encode(int t, int v) {
  std::string b(static_cast<size_t>(elem_size(t)), '\0');
  auto put = [&](auto x) { std::memcpy(b.data(), &x, sizeof x); };
  switch (t) {
    case 1:
      put(static_cast<float>(v));
      break;
    case 11:
      put(static_cast<double>(v));
      break;
    case 10: {  // float16 of a small integer
      static const uint16_t h[] = {0xBC00, 0x0000, 0x3C00, 0x4000, 0x4200};  // -1..3
      put(h[v + 1]);
      break;
    }
    case 16: {                                                               // bfloat16
      static const uint16_t h[] = {0xBF80, 0x0000, 0x3F80, 0x4000, 0x4040};  // -1..3
      put(h[v + 1]);
      break;
    }
    case 9:
      put(static_cast<uint8_t>(v & 1));
      break;
    case 2:
      put(static_cast<uint8_t>(v));
      break;
    case 3:
      put(static_cast<int8_t>(v));
      break;
    case 4:
      put(static_cast<uint16_t>(v));
      break;
    case 5:
      put(static_cast<int16_t>(v));
      break;
    case 6:
      put(static_cast<int32_t>(v));
      break;
    case 12:
      put(static_cast<uint32_t>(v));
      break;
    case 7:
      put(static_cast<int64_t>(v));
      break;
    case 13:
      put(static_cast<uint64_t>(v));
      break;
    default:
      break;
  }
  return b;
}

// Replaces t's data with `n` elements of small values (-1..3), as raw_data. False for strings or
// when n is too large to write.
inline bool refill(onnx::TensorProto& t, int64_t n, Rng& rng) {
  const int es = elem_size(t.data_type());
  if (es == 0 || n < 0 || n > (1 << 22)) return false;
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
  t.clear_string_data();
  std::string raw;
  raw.reserve(static_cast<size_t>(n * es));
  for (int64_t i = 0; i < n; ++i) raw += encode(t.data_type(), static_cast<int>(below(rng, 5)) - 1);
  t.set_raw_data(raw);
  return true;
}

// The element count of t's dims, or -1 when a dim is negative or the product is beyond 2^40.
inline int64_t numel(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 40) / d)) return -1;
    n *= d;
  }
  return n;
}

// Every node of the graph and of its subgraphs (If/Loop/Scan bodies).
inline void all_nodes(onnx::GraphProto* g, std::vector<onnx::NodeProto*>& out) {
  for (auto& n : *g->mutable_node()) {
    out.push_back(&n);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) all_nodes(a.mutable_g(), out);
      for (auto& sg : *a.mutable_graphs()) all_nodes(&sg, out);
    }
  }
}

// Names a node could read: graph inputs, initializers and node outputs of the main graph.
inline std::vector<std::string> value_names(const onnx::GraphProto& g) {
  std::vector<std::string> v;
  for (const auto& i : g.input()) v.push_back(i.name());
  for (const auto& i : g.initializer()) v.push_back(i.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) v.push_back(o);
  return v;
}

inline std::string node_name(const onnx::NodeProto& n) {
  return n.op_type() + (n.name().empty() ? "" : "(" + n.name() + ")");
}

// Changes a tensor's dims (and, when `consistent`, its data to the new size).
inline std::string mutate_dims(onnx::TensorProto& t, Rng& rng, bool consistent) {
  auto* dims = t.mutable_dims();
  const int64_t what = below(rng, 4);
  std::string d;
  if (what == 0 || dims->empty()) {  // add a dim
    const int64_t v = consistent ? pick(rng, std::vector<int64_t>{1, 2, 0}) : interesting_int(rng);
    dims->Add(v);
    d = "added dim " + std::to_string(v);
  } else if (what == 1) {  // drop a dim
    const int64_t k = below(rng, dims->size());
    dims->erase(dims->begin() + k);
    d = "dropped dim " + std::to_string(k);
  } else {  // change a dim
    const int64_t k = below(rng, dims->size());
    const int64_t old = dims->Get(static_cast<int>(k));
    const int64_t v = consistent ? pick(rng, std::vector<int64_t>{0, 1, old + 1, old * 2, 3})
                                 : interesting_int(rng);
    dims->Set(static_cast<int>(k), v);
    d = "dim " + std::to_string(k) + " " + std::to_string(old) + " -> " + std::to_string(v);
  }
  if (consistent && !refill(t, numel(t), rng)) return "";
  return d + (consistent ? " (data resized)" : "");
}

inline std::string mutate_tensor_proto(onnx::TensorProto& t, Rng& rng) {
  switch (below(rng, 6)) {
    case 0:
    case 1:
      return mutate_dims(t, rng, true);
    case 2:
      return mutate_dims(t, rng, false);
    case 3: {  // another type, data rewritten to match (or not)
      static const std::vector<int> types = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16, 8, 0, 99};
      const int old = t.data_type();
      t.set_data_type(pick(rng, types));
      const bool consistent = below(rng, 2) == 0 && refill(t, numel(t), rng);
      return "type " + std::to_string(old) + " -> " + std::to_string(t.data_type()) +
             (consistent ? " (data rewritten)" : "");
    }
    case 4: {  // truncated or extended raw data
      if (!t.has_raw_data() || t.raw_data().empty()) return "";
      std::string raw = t.raw_data();
      if (below(rng, 2) == 0) {
        raw.resize(raw.size() - 1 -
                   static_cast<size_t>(below(rng, static_cast<int64_t>(raw.size()))));
        t.set_raw_data(raw);
        return "raw data truncated";
      }
      t.set_raw_data(raw + std::string(3, '\x7f'));
      return "raw data extended";
    }
    default: {  // values replaced by extreme ones (indices out of range, NaN, ...)
      const int es = elem_size(t.data_type());
      if (es == 0 || !t.has_raw_data() || t.raw_data().size() < static_cast<size_t>(es)) return "";
      std::string raw = t.raw_data();
      const size_t k = static_cast<size_t>(below(rng, static_cast<int64_t>(raw.size()) / es));
      const int64_t v = interesting_int(rng);
      if (t.data_type() == 1) {
        const float f = interesting_float(rng);
        std::memcpy(&raw[k * 4], &f, 4);
      } else {
        std::memcpy(&raw[k * es], &v, static_cast<size_t>(es));  // little-endian low bytes
      }
      t.set_raw_data(raw);
      return "element " + std::to_string(k) + " set to an extreme value";
    }
  }
}

inline std::string mutate_attribute(onnx::NodeProto& n, Rng& rng) {
  const std::string where = node_name(n) + ": ";
  if (n.attribute_size() == 0 || below(rng, 6) == 0) {  // add a plausible attribute
    static const std::vector<std::string> names = {
        "axis",    "axes",      "perm",        "kernel_shape", "pads",      "strides", "dilations",
        "group",   "keepdims",  "to",          "mode",         "alpha",     "transA",  "transB",
        "epsilon", "direction", "hidden_size", "blocksize",    "reduction", "auto_pad"};
    auto* a = n.add_attribute();
    a->set_name(pick(rng, names));
    if (below(rng, 2) == 0) {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(interesting_int(rng));
    } else {
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t k = below(rng, 5); k > 0; --k)
        a->add_ints(pick(rng, std::vector<int64_t>{-1, 0, 1, 2, 3}));
    }
    return where + "added attribute " + a->name();
  }
  const int k = static_cast<int>(below(rng, n.attribute_size()));
  onnx::AttributeProto& a = *n.mutable_attribute(k);
  const std::string an = where + "attribute " + a.name() + ": ";
  switch (below(rng, 5)) {
    case 0:
      n.mutable_attribute()->erase(n.mutable_attribute()->begin() + k);
      return where + "dropped attribute";
    case 1: {  // declared type changed, payload kept
      static const std::vector<int> types = {1, 2, 3, 4, 5, 6, 7, 8, 0, 42};
      const int t = pick(rng, types);
      a.set_type(static_cast<onnx::AttributeProto::AttributeType>(t));
      return an + "type -> " + std::to_string(t);
    }
    default:
      break;
  }
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      a.set_i(interesting_int(rng));
      return an + "int -> " + std::to_string(a.i());
    case onnx::AttributeProto::FLOAT:
      a.set_f(interesting_float(rng));
      return an + "float -> " + std::to_string(a.f());
    case onnx::AttributeProto::STRING: {
      static const std::vector<std::string> s = {"",           "garbage", "NOTSET", "add", "mul",
                                                 "SAME_LOWER", "reverse", "linear", "DCR"};
      a.set_s(pick(rng, s));
      return an + "string -> '" + a.s() + "'";
    }
    case onnx::AttributeProto::INTS: {
      auto* v = a.mutable_ints();
      const int64_t what = below(rng, 4);
      if (what == 0 || v->empty()) {
        v->Add(interesting_int(rng));
        return an + "ints: element added";
      }
      if (what == 1) {
        v->erase(v->begin() + below(rng, v->size()));
        return an + "ints: element dropped";
      }
      if (what == 2) {
        v->Clear();
        return an + "ints: cleared";
      }
      v->Set(static_cast<int>(below(rng, v->size())), interesting_int(rng));
      return an + "ints: element changed";
    }
    case onnx::AttributeProto::FLOATS:
      if (a.floats_size() == 0) return "";
      a.set_floats(static_cast<int>(below(rng, a.floats_size())), interesting_float(rng));
      return an + "floats: element changed";
    case onnx::AttributeProto::TENSOR:
      return an + "tensor: " + mutate_tensor_proto(*a.mutable_t(), rng);
    case onnx::AttributeProto::GRAPH: {  // drop a body node or a body output
      auto* g = a.mutable_g();
      if (below(rng, 2) == 0 && g->node_size() > 0) {
        g->mutable_node()->erase(g->mutable_node()->begin() + below(rng, g->node_size()));
        return an + "body node dropped";
      }
      if (g->output_size() > 0) {
        g->mutable_output()->erase(g->mutable_output()->begin() + below(rng, g->output_size()));
        return an + "body output dropped";
      }
      return "";
    }
    default:
      return "";
  }
}

inline std::string mutate_node(onnx::ModelProto& m, onnx::NodeProto& n, Rng& rng) {
  const std::string where = node_name(n) + ": ";
  auto* in = n.mutable_input();
  switch (below(rng, 9)) {
    case 0:
      if (in->empty()) return "";
      in->RemoveLast();
      return where + "last input dropped";
    case 1:
      if (in->empty()) return "";
      in->Mutable(static_cast<int>(below(rng, in->size())))->clear();
      return where + "an input set to ''";
    case 2: {
      const auto names = value_names(m.graph());
      if (names.empty()) return "";
      n.add_input(pick(rng, names));
      return where + "extra input " + n.input(n.input_size() - 1);
    }
    case 3: {
      if (in->size() < 2) return "";
      const int a = static_cast<int>(below(rng, in->size())),
                b = static_cast<int>(below(rng, in->size()));
      std::swap(*in->Mutable(a), *in->Mutable(b));
      return where + "inputs " + std::to_string(a) + " and " + std::to_string(b) + " swapped";
    }
    case 4: {
      const auto names = value_names(m.graph());
      if (in->empty() || names.empty()) return "";
      const int k = static_cast<int>(below(rng, in->size()));
      *in->Mutable(k) = below(rng, 3) == 0 ? std::string("fuzz_undefined") : pick(rng, names);
      return where + "input " + std::to_string(k) + " -> '" + n.input(k) + "'";
    }
    case 5: {
      if (below(rng, 2) == 0 && n.output_size() > 1) {
        n.mutable_output()->RemoveLast();
        return where + "last output dropped";
      }
      n.add_output("fuzz_extra_output");
      return where + "extra output";
    }
    case 6: {
      static const std::vector<std::string> ops = {"Add",
                                                   "MatMul",
                                                   "Conv",
                                                   "Relu",
                                                   "Reshape",
                                                   "Gather",
                                                   "Concat",
                                                   "Slice",
                                                   "Transpose",
                                                   "Softmax",
                                                   "ReduceSum",
                                                   "Cast",
                                                   "Where",
                                                   "Expand",
                                                   "Gemm",
                                                   "MaxPool",
                                                   "Pad",
                                                   "Resize",
                                                   "Split",
                                                   "Squeeze",
                                                   "Unsqueeze",
                                                   "TopK",
                                                   "LSTM",
                                                   "Einsum",
                                                   "CumSum",
                                                   "Tile",
                                                   "NonZero",
                                                   "ScatterND",
                                                   "ConvTranspose",
                                                   "BatchNormalization",
                                                   "LayerNormalization",
                                                   "Loop",
                                                   "If",
                                                   "Identity",
                                                   "FuzzOp"};
      const std::string old = n.op_type();
      n.set_op_type(pick(rng, ops));
      return where + "op " + old + " -> " + n.op_type();
    }
    case 7:
      n.set_domain(pick(rng, std::vector<std::string>{"com.fuzz", "ai.onnx.ml", "com.microsoft",
                                                      "ai.onnx.preview.training"}));
      return where + "domain -> " + n.domain();
    default:
      return mutate_attribute(n, rng);
  }
}

inline std::string mutate_graph_value(onnx::ValueInfoProto& v, Rng& rng) {
  const std::string where = "graph value " + v.name() + ": ";
  if (!v.type().has_tensor_type()) return "";
  auto* tt = v.mutable_type()->mutable_tensor_type();
  switch (below(rng, 3)) {
    case 0: {
      static const std::vector<int> types = {1, 6, 7, 9, 10, 11, 16, 8, 0, 4, 5, 12, 13};
      tt->set_elem_type(pick(rng, types));
      return where + "elem_type -> " + std::to_string(tt->elem_type());
    }
    case 1:
      tt->clear_shape();
      return where + "shape removed";
    default: {
      auto* s = tt->mutable_shape();
      if (s->dim_size() == 0) {
        s->add_dim()->set_dim_value(2);
        return where + "dim added";
      }
      auto* d = s->mutable_dim(static_cast<int>(below(rng, s->dim_size())));
      if (below(rng, 3) == 0)
        d->set_dim_param("fuzz_n");
      else
        d->set_dim_value(pick(rng, std::vector<int64_t>{0, 1, 3, 1000003, -5}));
      return where + "a dim changed";
    }
  }
}

}  // namespace detail

inline std::string mutate_tensor(onnx::TensorProto& t, Rng& rng) {
  return detail::mutate_tensor_proto(t, rng);
}

inline std::string mutate_model(onnx::ModelProto& m, Rng& rng) {
  using namespace detail;
  onnx::GraphProto& g = *m.mutable_graph();
  switch (below(rng, 12)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4: {
      std::vector<onnx::NodeProto*> nodes;
      all_nodes(&g, nodes);
      if (nodes.empty()) return "";
      return mutate_node(m, *pick(rng, nodes), rng);
    }
    case 5:
    case 6: {
      std::vector<onnx::NodeProto*> nodes;
      all_nodes(&g, nodes);
      if (nodes.empty()) return "";
      return mutate_attribute(*pick(rng, nodes), rng);
    }
    case 7: {
      if (g.initializer_size() == 0) return "";
      auto& t = *g.mutable_initializer(static_cast<int>(below(rng, g.initializer_size())));
      const std::string d = mutate_tensor_proto(t, rng);
      return d.empty() ? "" : "initializer " + t.name() + ": " + d;
    }
    case 8: {
      if (g.input_size() == 0) return "";
      return mutate_graph_value(*g.mutable_input(static_cast<int>(below(rng, g.input_size()))),
                                rng);
    }
    case 9: {
      if (g.output_size() == 0) return "";
      if (below(rng, 3) == 0) {
        g.mutable_output()->RemoveLast();
        return "last graph output dropped";
      }
      return mutate_graph_value(*g.mutable_output(static_cast<int>(below(rng, g.output_size()))),
                                rng);
    }
    case 10: {
      if (g.node_size() == 0) return "";
      const int k = static_cast<int>(below(rng, g.node_size()));
      const int64_t what = below(rng, 3);
      if (what == 0) {
        const std::string d = "node " + node_name(g.node(k)) + " deleted";
        g.mutable_node()->erase(g.mutable_node()->begin() + k);
        return d;
      }
      if (what == 1) {
        *g.add_node() = g.node(k);
        return "node " + node_name(g.node(k)) + " duplicated";
      }
      if (g.node_size() < 2) return "";
      const int j = static_cast<int>(below(rng, g.node_size()));
      g.mutable_node()->SwapElements(j, k);
      return "nodes " + std::to_string(j) + " and " + std::to_string(k) + " swapped";
    }
    default: {
      if (below(rng, 3) == 0) {
        m.set_ir_version(pick(rng, std::vector<int64_t>{0, 1, 3, 99}));
        return "ir_version -> " + std::to_string(m.ir_version());
      }
      for (auto& o : *m.mutable_opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") {
          o.set_version(pick(rng, std::vector<int64_t>{1, 6, 9, 11, 13, 17, 18, 21, 99}));
          return "opset -> " + std::to_string(o.version());
        }
      return "";
    }
  }
}

}  // namespace oat_fuzz
