#include "onnx_loader/model.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <fstream>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <set>
#include <sstream>

#include "onnx_loader/proto_convert.h"
#include "onnx_loader/tensor_io.h"

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

// Adds what ONNX shape inference (libonnx) derives to graph.value_info. Skipped, with a warning,
// when the model imports an opset newer than libonnx knows: its schemas would describe the
// older operator (e.g. ReduceMean with axes as an attribute) and give wrong shapes.
void infer_shapes(const onnx::ModelProto& proto, Model& model) {
  int64_t opset = model.graph.opsets.count("") ? model.graph.opsets.at("") : 0;
  if (opset > libonnx_max_opset()) {
    model.warnings.push_back(cat("opset ", opset, " is newer than libonnx knows (",
                                 libonnx_max_opset(),
                                 "); shapes come from the input tensors at run time only"));
    return;
  }
  onnx::ModelProto copy = proto;
  try {
    onnx::ShapeInferenceOptions opts{/*check_type=*/false, /*error_mode=*/0,
                                     /*enable_data_propagation=*/true};
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    model.warnings.push_back(cat("shape inference failed: ", e.what()));
    return;
  }
  for (const auto& vi : copy.graph().value_info())
    if (!model.graph.value_info.count(vi.name()))
      model.graph.value_info[vi.name()] = value_info_from_proto(vi);
  // Fill graph outputs whose declared type was missing.
  for (int i = 0; i < copy.graph().output_size(); ++i) {
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
  const onnx::ModelProto& p = handle->proto;
  Model m;
  m.path = name;
  m.ir_version = p.ir_version();
  m.producer_name = p.producer_name();
  m.producer_version = p.producer_version();
  for (const auto& kv : p.metadata_props()) m.metadata[kv.key()] = kv.value();
  if (!p.has_graph())
    throw Error(cat(name, ": not an ONNX model (no graph; is this a .onnx file?)"));
  std::map<std::string, int64_t> opsets;
  for (const auto& op : p.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    opsets[domain] = op.version();
  }
  // IR version 3 and older models may omit opset_import for the default domain: ONNX says 1.
  if (opsets.empty()) opsets[""] = 1;
  std::set<std::string> local_functions;
  for (const auto& f : p.functions()) local_functions.insert(f.domain() + "." + f.name());
  for (const auto& n : p.graph().node())
    if (local_functions.count(n.domain() + "." + n.op_type()))
      throw Error(cat(name, ": node '", n.name(), "' calls model-local function ", n.domain(), ".",
                      n.op_type(), ", which is not supported"));
  try {
    m.graph = graph_from_proto(p.graph(), opsets, options.load_external_data ? base_dir : base_dir,
                               {}, false);
  } catch (const Unsupported& e) {
    throw Unsupported(cat(name, ": ", e.what()), e.key());
  } catch (const Error& e) {
    throw Error(cat(name, ": ", e.what()));
  }
  m.proto = std::move(handle);
  if (options.run_shape_inference) infer_shapes(p, m);
  return m;
}

void check_magic(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) throw Error(cat(name, ": file is empty, not an ONNX model"));
}

}  // namespace

Model load_model_from_bytes(const std::string& bytes, const std::string& base_dir,
                            const LoadOptions& options, const std::string& name) {
  check_magic(bytes, name);
  auto handle = std::make_shared<ModelProtoHandle>();
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);
  if (!handle->proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw Error(cat(name, ": not an ONNX model (protobuf parse failed; truncated or another format)"));
  return convert(std::move(handle), name, base_dir, options);
}

Model load_model(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(cat(path, ": no such file"));
  if (fs::is_directory(path, ec)) throw Error(cat(path, ": is a directory, not an ONNX model"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot be opened for reading"));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string base_dir = fs::path(path).parent_path().string();
  return load_model_from_bytes(ss.str(), base_dir, options, path);
}

namespace {

constexpr size_t kProtobufLimit = (size_t{1} << 31) - (size_t{64} << 20);  // 2 GB less headroom

}  // namespace

void save_model(const Model& model, const std::map<std::string, Tensor>& initializers,
                const std::string& out_path, const SaveOptions& options) {
  if (!model.proto) throw Error("save_model: model has no original ModelProto");
  onnx::ModelProto proto = model.proto->proto;
  auto* g = proto.mutable_graph();
  std::set<std::string> replaced;
  size_t total = 0;
  for (auto& init : *g->mutable_initializer()) {
    auto it = initializers.find(init.name());
    const bool was_external = init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
    if (it != initializers.end()) {
      tensor_to_proto(it->second, init.name(), &init);
      replaced.insert(init.name());
    } else if (was_external) {
      // Re-materialise: the original external file is relative to the input model.
      auto git = model.graph.initializers.find(init.name());
      if (git == model.graph.initializers.end() || !git->second.defined())
        throw Error(cat("save_model: external initializer '", init.name(), "' was not loaded"));
      tensor_to_proto(git->second, init.name(), &init);
    }
    total += init.raw_data().size();
  }
  for (const auto& [name, t] : initializers)
    if (!replaced.count(name))
      throw Error(cat("save_model: the model has no initializer named '", name, "'"));

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

  const bool external = options.external_data || total > kProtobufLimit;
  std::string data_bytes;
  const std::string data_name = fs::path(out_path).filename().string() + ".data";
  if (external) {
    for (auto& init : *g->mutable_initializer()) {
      if (init.raw_data().size() < options.external_threshold_bytes) continue;
      // Align each tensor to 4 KiB so it can be mapped (what onnx.save_model does).
      size_t offset = (data_bytes.size() + 4095) / 4096 * 4096;
      data_bytes.resize(offset, '\0');
      data_bytes += init.raw_data();
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
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw Error(cat(out_path, ": the model could not be serialised (over protobuf's 2 GB limit?)"));
  if (external) {
    const std::string data_path = (fs::path(out_path).parent_path() / data_name).string();
    write_file_atomic(data_path, data_bytes);
  }
  write_file_atomic(out_path, bytes);
}

}  // namespace oat::onnx_loader
