// Export: the original ModelProto with chosen initializers replaced, everything else preserved,
// written atomically, with external data on request or past protobuf's size limit.
#include <doctest/doctest.h>

#include "onnx_loader/model.h"
#include "onnx_loader/model_builder.h"
#include "onnx_loader/proto_convert.h"

using namespace oat;
using namespace oat_test;

namespace {

// A model with something in every field export must preserve.
ModelBuilder rich_model() {
  ModelBuilder mb(13);
  mb.m.set_producer_name("pytorch");
  mb.m.set_producer_version("1.13.1");
  mb.m.set_domain("org.example");
  mb.m.set_model_version(7);
  mb.m.set_doc_string("a model doc string");
  for (auto [k, v] : {std::pair{"author", "me"}, std::pair{"license", "MIT"}}) {
    auto* p = mb.m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  auto* ml = mb.m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(2);
  mb.g()->set_doc_string("graph doc");
  mb.input("x", kFloat, {"batch", 4})->set_doc_string("input doc");
  auto* w = mb.g()->add_initializer();  // float_data form
  w->set_name("fc.weight");
  w->set_data_type(kFloat);
  w->add_dims(4);
  w->add_dims(3);
  for (int i = 0; i < 12; ++i) w->add_float_data(static_cast<float>(i));
  w->set_doc_string("weight doc");
  mb.init_f32("fc.bias", {3}, {0.5f, -0.5f, 1.0f});
  mb.init_i64("shape", {2}, {-1, 3});
  auto* n = mb.node("Gemm", {"x", "fc.weight", "fc.bias"}, {"h"}, "fc");
  n->set_doc_string("node doc");
  add_attr(n, "alpha", onnx::AttributeProto::FLOAT)->set_f(1.0f);
  mb.node("Reshape", {"h", "shape"}, {"y"}, "reshape");
  auto* vi = mb.g()->add_value_info();
  vi->set_name("h");
  Dims hd = {"batch", 3};
  set_type(vi, kFloat, &hd);
  mb.output("y", kFloat, {"batch", 3});
  return mb;
}

onnx::ModelProto read_proto(const std::string& path) {
  onnx::ModelProto p;
  REQUIRE(p.ParseFromString(read_bytes(path)));
  return p;
}

const onnx::TensorProto& init_of(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return t;
  throw std::runtime_error("no initializer " + name);
}

}  // namespace

TEST_CASE("save_model replaces the chosen initializers and preserves everything else") {
  TempDir dir;
  ModelBuilder mb = rich_model();
  const std::string in_path = mb.save(dir.path / "in.onnx");
  auto model = onnx_loader::load_model(in_path);
  Tensor new_w = Tensor::from_vector<float>({4, 3}, std::vector<float>(12, 2.5f));
  onnx_loader::save_model(model, {{"fc.weight", new_w}}, dir / "out.onnx");

  // Byte for byte: the original with one initializer rewritten (as raw_data, doc string kept).
  onnx::ModelProto expected = mb.m;
  for (auto& t : *expected.mutable_graph()->mutable_initializer())
    if (t.name() == "fc.weight") {
      onnx_loader::tensor_to_proto(new_w, "fc.weight", &t);
      t.set_doc_string("weight doc");
    }
  onnx::ModelProto saved = read_proto(dir / "out.onnx");
  CHECK(saved.SerializeAsString() == expected.SerializeAsString());

  // And field by field, for a readable failure.
  CHECK(saved.producer_name() == "pytorch");
  CHECK(saved.producer_version() == "1.13.1");
  CHECK(saved.model_version() == 7);
  CHECK(saved.doc_string() == "a model doc string");
  REQUIRE(saved.metadata_props_size() == 2);
  CHECK(saved.metadata_props(1).key() == "license");
  REQUIRE(saved.opset_import_size() == 2);
  CHECK(saved.opset_import(1).domain() == "ai.onnx.ml");
  CHECK(saved.graph().doc_string() == "graph doc");
  CHECK(saved.graph().node(0).name() == "fc");
  CHECK(saved.graph().node(0).doc_string() == "node doc");
  CHECK(saved.graph().input(0).type().tensor_type().shape().dim(0).dim_param() == "batch");
  REQUIRE(saved.graph().value_info_size() == 1);
  CHECK(saved.graph().value_info(0).name() == "h");
  CHECK(init_of(saved, "fc.weight").doc_string() == "weight doc");
  // The untouched float_data initializer keeps its original storage form.
  CHECK(init_of(saved, "shape").int64_data_size() == 2);

  // Loading it back gives the new values and the same graph.
  auto back = onnx_loader::load_model(dir / "out.onnx");
  CHECK(back.graph.initializers.at("fc.weight").to_float_vector() == new_w.to_float_vector());
  CHECK(back.graph.initializers.at("fc.bias").to_float_vector() ==
        std::vector<float>{0.5f, -0.5f, 1.0f});
  CHECK(back.metadata == model.metadata);
  CHECK(back.graph.opsets == model.graph.opsets);
  CHECK(back.graph.nodes.size() == 2);
  // No temporary files left beside it.
  CHECK(dir.list() == std::vector<std::string>{"in.onnx", "out.onnx"});
}

TEST_CASE("save_model: dtype and shape may change; old-IR input types follow") {
  TempDir dir;
  ModelBuilder mb(7, 3);
  mb.input("x", kFloat, {1, 2});
  mb.input("W", kFloat, {2, 2});
  mb.init_f32("W", {2, 2}, {1, 0, 0, 1});
  mb.output("y", kFloat, {1, 2});
  mb.node("MatMul", {"x", "W"}, {"y"}, "mm");
  auto model = onnx_loader::load_model_from_bytes(mb.bytes(), "");
  Tensor w64 = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  onnx_loader::save_model(model, {{"W", w64}}, dir / "out.onnx");
  onnx::ModelProto saved = read_proto(dir / "out.onnx");
  const auto& tt = saved.graph().input(1).type().tensor_type();
  CHECK(tt.elem_type() == onnx::TensorProto_DataType_DOUBLE);
  CHECK(tt.shape().dim(1).dim_value() == 3);
  CHECK(onnx_loader::load_model(dir / "out.onnx").graph.initializers.at("W").dtype() == DType::F64);
}

TEST_CASE("save_model refuses unknown names and leaves nothing behind when the write fails") {
  TempDir dir;
  auto model = onnx_loader::load_model(rich_model().save(dir.path / "in.onnx"));
  CHECK_THROWS_WITH_AS(
      onnx_loader::save_model(model, {{"nope", Tensor::scalar(1.0f)}}, dir / "out.onnx"),
      doctest::Contains("no initializer named 'nope'"), Error);
  CHECK_FALSE(fs::exists(dir.path / "out.onnx"));

  // The target is an existing folder: the temporary file is written, the rename fails, and the
  // temporary file is removed.
  fs::create_directories(dir.path / "taken.onnx");
  CHECK_THROWS_AS(onnx_loader::save_model(model, {}, dir / "taken.onnx"), Error);
  // The target's folder is a regular file.
  CHECK_THROWS_WITH_AS(onnx_loader::save_model(model, {}, dir / "in.onnx/out.onnx"),
                       doctest::Contains("is not an existing folder"), Error);
  CHECK(dir.list() == std::vector<std::string>{"in.onnx", "taken.onnx"});
  CHECK(fs::is_empty(dir.path / "taken.onnx"));
}

TEST_CASE("save_model with external data: on request, or past the protobuf limit") {
  TempDir dir;
  ModelBuilder mb = rich_model();
  mb.init_f32("big", {64, 64}, std::vector<float>(64 * 64, 0.25f));
  mb.output("big", kFloat, {64, 64});
  auto model = onnx_loader::load_model(mb.save(dir.path / "in.onnx"));
  Tensor w = Tensor::from_vector<float>({4, 3}, std::vector<float>(12, -1.0f));

  auto check_external = [&](const std::string& name) {
    onnx::ModelProto saved = read_proto(dir / name);
    const auto& big = init_of(saved, "big");
    CHECK(big.data_location() == onnx::TensorProto_DataLocation_EXTERNAL);
    CHECK_FALSE(big.has_raw_data());
    std::map<std::string, std::string> kv;
    for (const auto& e : big.external_data()) kv[e.key()] = e.value();
    CHECK(kv["location"] == name + ".data");
    CHECK(std::stoll(kv["offset"]) % 4096 == 0);
    CHECK(kv["length"] == "16384");
    // Below the threshold: inline.
    CHECK(init_of(saved, "fc.bias").data_location() == onnx::TensorProto_DataLocation_DEFAULT);
    CHECK(fs::exists(dir.path / (name + ".data")));
    // It loads back, from the data file, with the replaced and the kept values.
    auto back = onnx_loader::load_model(dir / name);
    CHECK(back.graph.initializers.at("big").to_float_vector() ==
          std::vector<float>(64 * 64, 0.25f));
    CHECK(back.graph.initializers.at("fc.weight").to_float_vector() == w.to_float_vector());
    return back;
  };

  SUBCASE("SaveOptions.external_data with a threshold") {
    onnx_loader::SaveOptions opts;
    opts.external_data = true;
    opts.external_threshold_bytes = 1024;
    onnx_loader::save_model(model, {{"fc.weight", w}}, dir / "ext.onnx", opts);
    auto back = check_external("ext.onnx");

    // A model loaded from external data saves again, inline by default, into another folder.
    fs::create_directories(dir.path / "copy");
    onnx_loader::save_model(back, {}, dir / "copy/inline.onnx");
    CHECK(init_of(read_proto(dir / "copy/inline.onnx"), "big").raw_data().size() == 16384);
    CHECK(onnx_loader::load_model(dir / "copy/inline.onnx").graph.initializers.at("big").numel() ==
          4096);
    // ...but not when its external data was never loaded.
    onnx_loader::LoadOptions lazy;
    lazy.load_external_data = false;
    auto unloaded = onnx_loader::load_model(dir / "ext.onnx", lazy);
    CHECK_THROWS_WITH_AS(onnx_loader::save_model(unloaded, {}, dir / "copy/bad.onnx"),
                         doctest::Contains("external initializer 'big' was not loaded"), Error);
    CHECK_FALSE(fs::exists(dir.path / "copy/bad.onnx"));
  }
  SUBCASE("automatically past the (lowered) protobuf limit") {
    onnx_loader::SaveOptions opts;
    opts.protobuf_limit_bytes = 8192;  // the model is ~17 KB inline
    onnx_loader::save_model(model, {{"fc.weight", w}}, dir / "auto.onnx", opts);
    check_external("auto.onnx");
    CHECK(fs::file_size(dir.path / "auto.onnx") < 8192);
  }
  SUBCASE("no data file when nothing reaches the threshold") {
    onnx_loader::SaveOptions opts;
    opts.external_data = true;
    opts.external_threshold_bytes = size_t{1} << 30;
    onnx_loader::save_model(model, {}, dir / "small.onnx", opts);
    CHECK_FALSE(fs::exists(dir.path / "small.onnx.data"));
  }
}
