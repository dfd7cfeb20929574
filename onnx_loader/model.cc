#include "onnx_loader/model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "onnx_loader/isolated_inference.h"
#include "onnx_loader/proto_convert.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/ops.h"
#include "runtime/shape_fold.h"

namespace oat::onnx_loader {

struct ModelProtoHandle {
  onnx::ModelProto proto;
};

namespace fs = std::filesystem;

bool is_known_domain(const std::string& domain) {
  static const std::set<std::string> known = {"", "ai.onnx", "ai.onnx.ml",
                                              "ai.onnx.preview.training", "ai.onnx.training"};
  return known.count(domain) != 0;
}

int64_t libonnx_max_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

namespace {

// A copy of the model for shape inference without the bulk of the weights: large initializers
// keep their name, type and dims (all inference needs) but not their data. Small ones (shape
// constants, Resize scales) keep their data for data propagation.
onnx::ModelProto inference_copy(onnx::ModelProto& proto) {
  constexpr size_t kKeepBytes = size_t{1} << 20;
  auto* inits = proto.mutable_graph()->mutable_initializer();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> moved;
  moved.Swap(inits);
  onnx::ModelProto copy = proto;
  moved.Swap(inits);
  for (const auto& t : *inits) {
    auto* c = copy.mutable_graph()->add_initializer();
    if (t.ByteSizeLong() <= kKeepBytes) {
      *c = t;
      continue;
    }
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
  }
  return copy;
}

bool has_map(const onnx::TypeProto& t) {
  if (t.has_map_type()) return true;
  if (t.has_sequence_type()) return has_map(t.sequence_type().elem_type());
  if (t.has_optional_type()) return has_map(t.optional_type().elem_type());
  return false;
}

bool is_zipmap(const std::string& domain, const std::string& op) {
  return domain == kMlDomain && op == "ZipMap";
}

// libonnx 1.12's shape inference has no case for maps: ZipMap's inferred sequence(map) output
// fails the whole graph's inference ("type case unsupported for symbolic shape inference.
// inferred=5"). The inference copy leaves ZipMap out (it is the one op that makes maps; what it
// makes is typed by its declaration and by convert/value_types.cc), and map-typed outputs and
// value_info untyped or dropped.
void hide_maps(onnx::GraphProto* g) {
  auto* nodes = g->mutable_node();
  for (int i = nodes->size() - 1; i >= 0; --i)
    if (is_zipmap(nodes->Get(i).domain(), nodes->Get(i).op_type())) nodes->DeleteSubrange(i, 1);
  for (auto& o : *g->mutable_output())
    if (has_map(o.type())) o.clear_type();
  auto* vi = g->mutable_value_info();
  for (int i = vi->size() - 1; i >= 0; --i)
    if (has_map(vi->Get(i).type())) vi->DeleteSubrange(i, 1);
}

// libonnx's shape inference divides by strides and uses kernel sizes and dilations as counts
// without checking them (a Conv or MaxPool with strides [0, 0] dies of SIGFPE inside
// convPoolShapeInference). Returns what is wrong with the first such node, in the words of
// Node::describe(), or "" when libonnx may look at the graph; subgraphs are searched too.
std::string libonnx_unsafe(const onnx::GraphProto& g, int64_t opset) {
  static const std::set<std::string> windowed = {
      "Conv",    "ConvInteger", "QLinearConv", "ConvTranspose", "MaxPool", "AveragePool",
      "LpPool",  "MaxUnpool",   "Col2Im",      "DeformConv"};
  for (const auto& n : g.node()) {
    const bool onnx_domain = n.domain().empty() || n.domain() == "ai.onnx";
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) {
        std::string why = libonnx_unsafe(a.g(), opset);
        if (!why.empty()) return why;
      }
      for (const auto& sub : a.graphs()) {
        std::string why = libonnx_unsafe(sub, opset);
        if (!why.empty()) return why;
      }
      if (!onnx_domain || !windowed.count(n.op_type())) continue;
      if (a.name() != "strides" && a.name() != "dilations" && a.name() != "kernel_shape")
        continue;
      for (int64_t v : a.ints())
        if (v < 1) {
          std::string vals;
          for (int k = 0; k < a.ints_size(); ++k) vals += (k ? ", " : "") + std::to_string(a.ints(k));
          return cat("node '", n.name(), "' (", n.op_type(), ", opset ", opset, "): ", a.name(),
                     " [", vals, "] must all be >= 1");
        }
    }
  }
  return "";
}

// libonnx's inference functions read a required input's type without checking that the input
// is there: a Shape node whose input is "" dies of SIGSEGV. Names the first node of `g` (not its
// subgraphs, which the loader checks as it imports them) with a required input left out.
std::string missing_required_input(const onnx::GraphProto& g, int64_t opset) {
  for (const auto& n : g.node()) {
    if (!(n.domain().empty() || n.domain() == "ai.onnx")) continue;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "");
    if (!schema) continue;
    const auto& formals = schema->inputs();
    for (size_t i = 0; i < formals.size(); ++i) {
      if (formals[i].GetOption() != onnx::OpSchema::Single) {
        if (formals[i].GetOption() == onnx::OpSchema::Variadic) break;
        continue;
      }
      if (static_cast<int>(i) >= n.input_size() || n.input(static_cast<int>(i)).empty())
        return cat("node '", n.name(), "' (", n.op_type(), ", opset ", opset,
                   "): required input ", i, " ('", formals[i].GetName(), "') is missing");
    }
  }
  return "";
}

// The nodes of `g` in an order where each value is produced before it is read (stable Kahn on
// the top level; the loader has already rejected cycles and undefined inputs). libonnx infers
// nodes in file order and dereferences the type of a value not seen yet (SIGSEGV on a Slice that
// reads a later node's output).
void sort_nodes(onnx::GraphProto* g) {
  std::set<std::string> known;
  for (const auto& i : g->input()) known.insert(i.name());
  for (const auto& i : g->initializer()) known.insert(i.name());
  known.insert("");
  const int n = g->node_size();
  std::vector<bool> done(static_cast<size_t>(n), false);
  std::vector<int> order;
  bool progress = true;
  while (progress && static_cast<int>(order.size()) < n) {
    progress = false;
    for (int k = 0; k < n; ++k) {
      if (done[static_cast<size_t>(k)]) continue;
      const auto& node = g->node(k);
      bool ready = true;
      for (const auto& in : node.input()) ready = ready && known.count(in);
      if (!ready) continue;
      done[static_cast<size_t>(k)] = true;
      order.push_back(k);
      for (const auto& o : node.output()) known.insert(o);
      progress = true;
    }
  }
  for (int k = 0; k < n; ++k)
    if (!done[static_cast<size_t>(k)]) order.push_back(k);  // outer-scope reads: keep as they were
  bool sorted = true;
  for (int k = 0; k < n; ++k) sorted = sorted && order[static_cast<size_t>(k)] == k;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int k : order) *nodes.Add() = g->node(k);
  g->mutable_node()->Swap(&nodes);
}

int64_t default_opset(const onnx::ModelProto& proto) {
  for (const auto& op : proto.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  return 0;
}

// Adds what ONNX shape inference (libonnx) derives to graph.value_info. Skipped, with a warning,
// when the model imports an opset newer than libonnx knows: its schemas would describe the
// older operator (e.g. ReduceMean with axes as an attribute) and give wrong shapes. Shapes are
// then known only at run time, from the actual tensors, which is all the executor needs.
void infer_shapes(onnx::ModelProto& proto, Model& model) {
  int64_t opset = model.graph.opsets.count("") ? model.graph.opsets.at("") : 0;
  if (opset > libonnx_max_opset()) {
    model.warnings.push_back(cat("opset ", opset, " is newer than libonnx knows (",
                                 libonnx_max_opset(),
                                 "); shape inference skipped, shapes come from the input "
                                 "tensors at run time"));
    return;
  }
  if (std::string why = libonnx_unsafe(proto.graph(), opset); !why.empty())
    throw Error(cat(model.path, ": ", why));
  if (std::string why = missing_required_input(proto.graph(), opset); !why.empty())
    throw Error(cat(model.path, ": ", why));
  // libonnx reads the type of every graph input it meets without checking it is set (a Shape of
  // a typeless input is SIGSEGV): without one, shapes come from the tensors at run time.
  for (const auto& in : proto.graph().input())
    if (in.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      model.warnings.push_back(cat("graph input '", in.name(),
                                   "' has no type; shape inference skipped, shapes come from the "
                                   "input tensors at run time"));
      return;
    }
  onnx::ModelProto copy = inference_copy(proto);
  sort_nodes(copy.mutable_graph());
  hide_maps(copy.mutable_graph());
  // Before IR 4 libonnx types initializers only through graph inputs; a model that declares an
  // older IR but leaves them out (as we accept) would reach it with untyped values (SIGSEGV).
  if (copy.ir_version() < 4) copy.set_ir_version(4);
  try {
    onnx::ShapeInferenceOptions opts{/*check_type=*/false, /*error_mode=*/0,
                                     /*enable_data_propagation=*/true};
    infer_shapes_isolated(copy, opts);
  } catch (const std::exception& e) {
    model.warnings.push_back(cat("shape inference failed: ", e.what()));
    return;
  }
  for (const auto& vi : copy.graph().value_info())
    if (!model.graph.value_info.count(vi.name()))
      model.graph.value_info[vi.name()] = value_info_from_proto(vi);
  // Fill graph outputs whose declared type was missing.
  for (int i = 0;
       i < copy.graph().output_size() && i < static_cast<int>(model.graph.outputs.size()); ++i) {
    auto& out = model.graph.outputs[static_cast<size_t>(i)];
    if (out.dtype == DType::Undefined || !out.shape) {
      ValueInfo inferred = value_info_from_proto(copy.graph().output(i));
      if (out.dtype == DType::Undefined) out.dtype = inferred.dtype;
      if (!out.shape) out.shape = inferred.shape;
    }
  }
}

Model convert(std::shared_ptr<ModelProtoHandle> handle, const std::string& name,
              const std::string& base_dir, const LoadOptions& options) {
  onnx::ModelProto& p = handle->proto;
  Model m;
  m.path = name;
  m.ir_version = p.ir_version();
  m.producer_name = p.producer_name();
  m.producer_version = p.producer_version();
  for (const auto& kv : p.metadata_props()) m.metadata[kv.key()] = kv.value();
  if (!p.has_graph())
    throw Error(cat(name, ": not an ONNX model (no graph; is this a .onnx file?)"));
  if (p.ir_version() <= 0)
    m.warnings.push_back("the model declares no ir_version (not a valid ONNX model)");
  std::map<std::string, int64_t> opsets;
  for (const auto& op : p.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    if (op.version() <= 0)
      throw Error(cat(name, ": opset import for domain '", domain.empty() ? "ai.onnx" : domain,
                      "' has version ", op.version()));
    if (opsets.count(domain) && opsets[domain] != op.version())
      throw Error(cat(name, ": domain '", domain.empty() ? "ai.onnx" : domain,
                      "' is imported twice, with opsets ", opsets[domain], " and ", op.version()));
    opsets[domain] = op.version();
  }
  // Models before IR version 3 have no opset_import: ONNX says opset 1. From IR 3 on it is
  // required; a file cut right after its graph parses without it, so this also catches that.
  if (opsets.empty()) {
    if (p.ir_version() >= 3)
      throw Error(cat(name, ": the model (IR version ", p.ir_version(),
                      ") imports no opset; is the file truncated?"));
    opsets[""] = 1;
  }
  std::set<std::string> local_functions;
  for (const auto& f : p.functions()) local_functions.insert(f.domain() + "." + f.name());
  for (const auto& n : p.graph().node())
    if (local_functions.count(n.domain() + "." + n.op_type()))
      throw Unsupported(cat(name, ": node '", n.name(), "' calls model-local function ", n.domain(),
                            ".", n.op_type(), ", which is not supported"),
                        cat("function ", n.op_type()));
  try {
    m.graph = graph_from_proto(p.graph(), opsets,
                               TensorSource{base_dir, options.load_external_data}, {}, false);
    m.graph.producer = p.producer_name();
  } catch (const Unsupported& e) {
    throw Unsupported(cat(name, ": ", e.what()), e.key());
  } catch (const Error& e) {
    throw Error(cat(name, ": ", e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(cat(name, ": out of memory while loading the initializers"));
  }
  for (const auto& in : p.graph().input()) {
    if (!in.has_type()) continue;
    const auto& type = in.type();
    std::string what;
    // Sequences of tensors or maps, maps and optionals of tensors or sequences run (the
    // sequence, optional and map ops); their element types must be ones the runtime stores.
    auto stored = [](const onnx::TypeProto& t) {
      if (!t.has_tensor_type()) return false;
      try {
        dtype_from_onnx(t.tensor_type().elem_type(), "");
        return true;
      } catch (const Error&) {
        return false;
      }
    };
    // map(integer | string, tensor of a stored type): what DictVectorizer and CastMap read.
    auto map_ok = [&](const onnx::TypeProto& t) {
      if (!t.has_map_type() || !stored(t.map_type().value_type())) return false;
      const int32_t k = t.map_type().key_type();
      try {
        const DType key = dtype_from_onnx(k, "");
        return key == DType::String || is_integer(key);
      } catch (const Error&) {
        return false;
      }
    };
    auto sequence_ok = [&](const onnx::TypeProto& t) {
      return t.has_sequence_type() && (stored(t.sequence_type().elem_type()) ||
                                       map_ok(t.sequence_type().elem_type()));
    };
    if (type.has_map_type()) {
      if (!map_ok(type)) what = "a map of an unsupported key or value type";
    } else if (type.has_sequence_type() || type.has_optional_type()) {
      const bool ok = type.has_sequence_type() ? sequence_ok(type)
                                               : stored(type.optional_type().elem_type()) ||
                                                     sequence_ok(type.optional_type().elem_type());
      if (!ok)
        what = type.has_sequence_type() ? "a sequence of sequences or of an unsupported type"
                                        : "an optional of an unsupported type";
    } else if (!type.has_tensor_type())
      what = "not a tensor";
    else if (type.tensor_type().elem_type() != 0 && in.name().size() &&
             !m.graph.initializers.count(in.name())) {
      try {
        dtype_from_onnx(type.tensor_type().elem_type(), in.name());
      } catch (const Error&) {
        what = onnx_type_name(type.tensor_type().elem_type());
      }
    }
    if (!what.empty()) m.unsupported_inputs[in.name()] = what;
  }
  // ONNX IR: a graph declares at least one output. Without one there is nothing to infer, train
  // or evaluate (train, eval and check would have no loss to attach).
  if (m.graph.outputs.empty())
    throw Error(cat(name, ": graph '", m.graph.name,
                    "' declares no outputs (an ONNX graph needs at least one)"));
  if (options.run_shape_inference) infer_shapes(p, m);
  // Shape folding before composite lowering re-infers shapes with libonnx (runtime/shape_fold.h).
  set_shape_inferer(&refine_shapes);
  m.proto = std::move(handle);
  return m;
}

}  // namespace

void refine_shapes(Graph& g) {
  int64_t opset = g.opsets.count("") ? g.opsets.at("") : 0;
  if (opset <= 0 || opset > libonnx_max_opset()) return;
  // Large initializers go in as graph inputs of their type and shape: inference needs no data
  // from them, and the copy stays small.
  constexpr size_t kKeepBytes = size_t{1} << 20;
  Graph light;
  light.name = g.name;
  for (const Node& n : g.nodes)  // ZipMap stays out, as in the loader's copy (hide_maps)
    if (!is_zipmap(n.domain, n.op_type)) light.nodes.push_back(n);
  light.inputs = g.inputs;
  light.value_info = g.value_info;  // what is known: inference starts from it and refines it
  // Maps (ZipMap's output) stay out: libonnx 1.12 cannot infer their types (hide_maps).
  auto map_typed = [](const ValueInfo& v) {
    return v.kind == ValueKind::Map || (v.kind == ValueKind::Sequence && v.inner == ValueKind::Map);
  };
  for (const ValueInfo& v : g.outputs)
    if (!map_typed(v)) light.outputs.push_back(v);
  for (auto it = light.value_info.begin(); it != light.value_info.end();)
    it = map_typed(it->second) ? light.value_info.erase(it) : std::next(it);
  for (const auto& [name, t] : g.initializers) {
    if (t.defined() && t.nbytes() <= kKeepBytes) {
      light.initializers[name] = t;
      continue;
    }
    ValueInfo vi;
    vi.name = name;
    vi.dtype = t.dtype();
    if (t.defined()) {
      std::vector<Dim> d;
      for (int64_t s : t.shape()) d.push_back(Dim{s, ""});
      vi.shape = d;
    }
    light.inputs.push_back(vi);
    light.value_info.erase(name);
  }
  for (const auto& [name, t] : light.initializers) light.value_info.erase(name);
  onnx::ModelProto m;
  m.set_ir_version(8);
  for (const auto& [domain, version] : g.opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  try {
    graph_to_proto(light, m.mutable_graph());
    if (!libonnx_unsafe(m.graph(), opset).empty() ||
        !missing_required_input(m.graph(), opset).empty())
      return;  // the kernel names the node at run time
    onnx::ShapeInferenceOptions opts{/*check_type=*/false, /*error_mode=*/0,
                                     /*enable_data_propagation=*/true};
    infer_shapes_isolated(m, opts);
  } catch (const std::exception&) {
    return;  // what was known stays
  }
  for (const auto& vp : m.graph().value_info()) {
    ValueInfo now = value_info_from_proto(vp);
    auto it = g.value_info.find(vp.name());
    if (it == g.value_info.end()) {
      g.value_info[vp.name()] = now;
      continue;
    }
    ValueInfo& old = it->second;
    if (old.dtype == DType::Undefined) old.dtype = now.dtype;
    if (!old.shape) {
      old.shape = now.shape;
    } else if (now.shape && now.shape->size() == old.shape->size()) {
      for (size_t k = 0; k < old.shape->size(); ++k)
        if (!(*old.shape)[k].fixed() && (*now.shape)[k].fixed()) (*old.shape)[k] = (*now.shape)[k];
    }
  }
}

Model load_model_from_bytes(const std::string& bytes, const std::string& base_dir,
                            const LoadOptions& options, const std::string& name) {
  if (bytes.empty()) throw Error(cat(name, ": file is empty, not an ONNX model"));
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw Error(cat(name, ": ", bytes.size(),
                    " bytes is over protobuf's 2 GB limit (large weights must be external data)"));
  auto handle = std::make_shared<ModelProtoHandle>();
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);
  if (!handle->proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw Error(
        cat(name, ": not an ONNX model (protobuf parse failed; truncated or another format)"));
  return convert(std::move(handle), name, base_dir, options);
}

void require_supported_inputs(const Model& model, bool allow_sequences) {
  if (!allow_sequences)
    for (const auto& v : model.graph.inputs) {
      if (v.kind != ValueKind::Tensor)
        throw Unsupported(cat(model.path.empty() ? std::string("model") : model.path, ": input '",
                              v.name, "' is a ", value_kind_name(v.kind),
                              "; train, eval and check feed tensors (infer runs such models)"),
                          cat("input type ", value_kind_name(v.kind)));
      if (v.dtype == DType::String)
        throw Unsupported(cat(model.path.empty() ? std::string("model") : model.path, ": input '",
                              v.name, "' is a string tensor; train, eval and check feed numeric "
                              "batches (infer runs such models)"),
                          "input type string");
    }
  if (model.unsupported_inputs.empty()) return;
  const auto& [name, type] = *model.unsupported_inputs.begin();
  throw Unsupported(cat(model.path.empty() ? std::string("model") : model.path, ": input '", name,
                        "' is of type ", type, ", which onnx-amp-train does not support (tensors of "
                        "float32, float16, bfloat16, float64, the integer types, bool or string)"),
                    cat("input type ", type));
}

Model load_model(const std::string& path, const LoadOptions& options) {
  const std::string bytes = read_file_bytes(path, "an ONNX model");
  std::string base_dir = fs::path(path).parent_path().string();
  return load_model_from_bytes(bytes, base_dir, options, path);
}

namespace {

constexpr size_t kProtobufLimit = (size_t{1} << 31) - (size_t{64} << 20);  // 2 GB less headroom

}  // namespace

namespace {

// Replaces `init` by `t`, keeping its name and doc string.
void replace_initializer(onnx::TensorProto& init, const Tensor& t) {
  const std::string doc = init.doc_string();
  const std::string name = init.name();
  tensor_to_proto(t, name, &init);
  if (!doc.empty()) init.set_doc_string(doc);
}

// Moves every initializer of at least `threshold` bytes into `data` (one file, each tensor
// aligned to 4 KiB as onnx.save_model does) and points the proto at it.
void externalise(onnx::GraphProto* g, size_t threshold, const std::string& data_name,
                 std::string& data) {
  for (auto& init : *g->mutable_initializer()) {
    if (init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) continue;
    if (!init.has_raw_data()) {
      // float_data / int64_data / ...: re-encode as raw bytes first.
      if (init.ByteSizeLong() < threshold) continue;
      replace_initializer(init, tensor_from_proto(init, std::string()));
    }
    if (init.raw_data().size() < threshold) continue;
    const size_t offset = (data.size() + 4095) / 4096 * 4096;
    data.resize(offset, '\0');
    data += init.raw_data();
    const size_t length = init.raw_data().size();
    init.clear_raw_data();
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* e = init.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", data_name);
    add("offset", std::to_string(offset));
    add("length", std::to_string(length));
  }
}

// Writes `proto` to `out_path` (and its initializers over the threshold to OUT.data when
// `external`, or when the model would pass protobuf's limit), each file atomically; a failure
// writing the model removes the data file it wrote.
struct WrittenFiles {
  std::string data_path;  // "" when no data file was written
  size_t bytes = 0;       // model + data bytes
};

WrittenFiles write_model_files(onnx::ModelProto& proto, bool external, const SaveOptions& options,
                               const std::string& out_path) {
  const size_t limit = std::min(options.protobuf_limit_bytes, kProtobufLimit);
  std::string data_bytes;
  const std::string data_name = fs::path(out_path).filename().string() + ".data";
  if (external || proto.ByteSizeLong() > limit)
    externalise(proto.mutable_graph(), options.external_threshold_bytes, data_name, data_bytes);
  if (proto.ByteSizeLong() > limit)
    throw Error(cat(out_path,
                    ": the model is over protobuf's 2 GB limit even with its "
                    "initializers in external data (large Constant nodes?)"));
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw Error(cat(out_path, ": the model could not be serialised"));
  WrittenFiles w;
  w.bytes = bytes.size() + data_bytes.size();
  if (!data_bytes.empty()) {
    w.data_path = (fs::path(out_path).parent_path() / data_name).string();
    write_file_atomic(w.data_path, data_bytes);
  }
  try {
    write_file_atomic(out_path, bytes);
  } catch (...) {
    if (!w.data_path.empty()) std::remove(w.data_path.c_str());
    throw;
  }
  return w;
}

}  // namespace

std::string untied_read_name(const std::string& initializer, const std::string& node, size_t k) {
  return cat(initializer, "@", node, "#", k);
}

void save_model(const Model& model, const std::map<std::string, Tensor>& initializers,
                const std::string& out_path, const SaveOptions& options) {
  if (!model.proto) throw Error("save_model: model has no original ModelProto");
  onnx::ModelProto proto = model.proto->proto;
  auto* g = proto.mutable_graph();
  std::set<std::string> replaced;
  for (auto& init : *g->mutable_initializer()) {
    auto it = initializers.find(init.name());
    if (it != initializers.end()) {
      if (!it->second.defined())
        throw Error(
            cat("save_model: the tensor given for initializer '", init.name(), "' is undefined"));
      replace_initializer(init, it->second);
      replaced.insert(init.name());
    } else if (init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
      // Re-materialise: the original external file is relative to the input model.
      auto git = model.graph.initializers.find(init.name());
      if (git == model.graph.initializers.end() || !git->second.defined())
        throw Error(cat("save_model: external initializer '", init.name(), "' was not loaded"));
      replace_initializer(init, git->second);
    }
  }
  // An untied alias (train/initializer_aliases.h): `name = Identity(initializer)` in the file
  // becomes an initializer `name` holding the trained value; the Identity node goes.
  std::set<std::string> proto_inits;
  for (const auto& init : g->initializer()) proto_inits.insert(init.name());
  for (const auto& [name, t] : initializers) {
    if (replaced.count(name)) continue;
    auto* nodes = g->mutable_node();
    auto alias = std::find_if(nodes->begin(), nodes->end(), [&](const onnx::NodeProto& n) {
      return n.op_type() == "Identity" && (n.domain().empty() || n.domain() == "ai.onnx") &&
             n.input_size() == 1 && n.output_size() == 1 && n.output(0) == name;
    });
    if (!t.defined())
      throw Error(cat("save_model: the tensor given for initializer '", name, "' is undefined"));
    if (alias != nodes->end() &&
        (proto_inits.count(alias->input(0)) || initializers.count(alias->input(0)))) {
      nodes->erase(alias);
      tensor_to_proto(t, name, g->add_initializer());
      replaced.insert(name);
      continue;
    }
    // A read of a merged initializer that training gave its own copy: the node reads the copy.
    bool rebound = false;
    for (auto& n : *nodes)
      for (int k = 0; k < n.input_size() && !rebound; ++k)
        if (proto_inits.count(n.input(k)) &&
            untied_read_name(n.input(k), n.name(), static_cast<size_t>(k)) == name) {
          n.set_input(k, name);
          rebound = true;
        }
    if (!rebound) throw Error(cat("save_model: the model has no initializer named '", name, "'"));
    tensor_to_proto(t, name, g->add_initializer());
    replaced.insert(name);
  }

  // Old-IR models list initializers as inputs too: keep their declared types in step.
  for (auto& in : *g->mutable_input()) {
    auto it = initializers.find(in.name());
    if (it == initializers.end() || !in.type().has_tensor_type()) continue;
    auto* tt = in.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(dtype_to_onnx(it->second.dtype()));
    auto* shape = tt->mutable_shape();
    shape->Clear();
    for (int64_t d : it->second.shape()) shape->add_dim()->set_dim_value(d);
  }

  write_model_files(proto, options.external_data, options, out_path);
}

namespace {

// Why libonnx cannot judge `proto`, or "" when it can.
std::string beyond_libonnx(const onnx::ModelProto& proto) {
  if (proto.ir_version() > onnx::Version::IR_VERSION)
    return cat("IR version ", proto.ir_version(), " is newer than libonnx knows (",
               static_cast<int>(onnx::Version::IR_VERSION), ")");
  for (const auto& op : proto.opset_import())
    if ((op.domain().empty() || op.domain() == "ai.onnx") && op.version() > libonnx_max_opset())
      return cat("opset ", op.version(), " is newer than libonnx knows (", libonnx_max_opset(),
                 ")");
  return "";
}

// The ONNX checker, then shape inference in strict mode with type checking: it catches what the
// checker does not, such as an Add of a float16 and a float32 tensor or a declared type that no
// longer matches its producer.
void check_strictly(onnx::ModelProto& proto, const std::string& out_path) {
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    throw Error(cat(out_path, ": not written, the ONNX checker rejects the model: ", e.what()));
  }
  if (std::string why = libonnx_unsafe(proto.graph(), default_opset(proto)); !why.empty())
    throw Error(cat(out_path, ": not written, ", why));
  onnx::ModelProto copy = inference_copy(proto);
  hide_maps(copy.mutable_graph());
  try {
    onnx::ShapeInferenceOptions opts{/*check_type=*/true, /*error_mode=*/1,
                                     /*enable_data_propagation=*/false};
    infer_shapes_isolated(copy, opts);
  } catch (const std::exception& e) {
    throw Error(cat(out_path, ": not written, ONNX type inference rejects the model: ", e.what()));
  }
}

bool has_external_initializers(const onnx::GraphProto& g) {
  for (const auto& init : g.initializer())
    if (init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return true;
  return false;
}

}  // namespace

std::optional<TypeConstraint> input_type_constraint(const std::string& op_type,
                                                    const std::string& domain, int64_t opset,
                                                    size_t index) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(
      op_type, static_cast<int>(opset), domain == "ai.onnx" ? "" : domain);
  if (!schema || schema->inputs().empty()) return std::nullopt;
  const auto& formals = schema->inputs();
  size_t k = index;
  if (k >= formals.size()) {
    if (formals.back().GetOption() != onnx::OpSchema::Variadic) return std::nullopt;
    k = formals.size() - 1;
  }
  static const std::map<std::string, DType> kTypes = {
      {"tensor(float)", DType::F32},     {"tensor(float16)", DType::F16},
      {"tensor(bfloat16)", DType::BF16}, {"tensor(double)", DType::F64},
      {"tensor(int64)", DType::I64},     {"tensor(int32)", DType::I32},
      {"tensor(int8)", DType::I8},       {"tensor(uint8)", DType::U8},
      {"tensor(bool)", DType::Bool},     {"tensor(int16)", DType::I16},
      {"tensor(uint16)", DType::U16},    {"tensor(uint32)", DType::U32},
      {"tensor(uint64)", DType::U64}};
  TypeConstraint c;
  c.name = formals[k].GetTypeStr();
  for (const auto* t : formals[k].GetTypes()) {
    auto it = kTypes.find(*t);
    if (it != kTypes.end()) c.allowed.push_back(it->second);
  }
  return c;
}

std::vector<std::string> model_files(const Model& model) {
  std::vector<std::string> files;
  if (!model.path.empty()) files.push_back(model.path);
  if (!model.proto) return files;
  const fs::path dir = fs::path(model.path).parent_path();
  std::set<std::string> seen;
  for (const auto& init : model.proto->proto.graph().initializer()) {
    if (init.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
    for (const auto& e : init.external_data())
      if (e.key() == "location" && seen.insert(e.value()).second)
        files.push_back((dir / e.value()).string());
  }
  return files;
}

SavedModel save_rewritten_model(const Model& model, const Graph& graph, const std::string& out_path,
                                const SaveOptions& options) {
  if (!model.proto) throw Error("save_rewritten_model: model has no original ModelProto");
  const onnx::ModelProto& orig = model.proto->proto;
  onnx::ModelProto proto;
  proto.set_ir_version(orig.ir_version());
  proto.set_producer_name(orig.producer_name());
  proto.set_producer_version(orig.producer_version());
  proto.set_domain(orig.domain());
  proto.set_model_version(orig.model_version());
  proto.set_doc_string(orig.doc_string());
  *proto.mutable_metadata_props() = orig.metadata_props();
  for (const auto& [domain, version] : graph.opsets) {
    auto* op = proto.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  auto* g = proto.mutable_graph();
  graph_to_proto(graph, g);
  g->set_name(orig.graph().name());
  g->set_doc_string(orig.graph().doc_string());
  // value_info: what the original declared, with the rewritten types.
  g->clear_value_info();
  for (const auto& vi : orig.graph().value_info()) {
    auto it = graph.value_info.find(vi.name());
    if (it != graph.value_info.end()) value_info_to_proto(it->second, g->add_value_info());
  }
  // Old IR (< 4) lists initializers among the inputs: keep doing so, with their new types.
  std::set<std::string> inputs;
  for (const auto& in : g->input()) inputs.insert(in.name());
  for (const auto& in : orig.graph().input()) {
    auto it = graph.initializers.find(in.name());
    if (it == graph.initializers.end() || inputs.count(in.name())) continue;
    ValueInfo v;
    v.name = in.name();
    v.dtype = it->second.dtype();
    v.shape = std::vector<Dim>();
    for (int64_t d : it->second.shape()) v.shape->push_back(Dim{d, ""});
    value_info_to_proto(v, g->add_input());
  }

  SavedModel saved;
  saved.not_checked_why = beyond_libonnx(proto);
  if (saved.not_checked_why.empty()) {
    check_strictly(proto, out_path);
    saved.checked = true;
  }

  const WrittenFiles w = write_model_files(
      proto, options.external_data || has_external_initializers(orig.graph()), options, out_path);
  saved.files.push_back(out_path);
  saved.bytes = w.bytes;
  if (!w.data_path.empty()) saved.files.push_back(w.data_path);
  return saved;
}

}  // namespace oat::onnx_loader
