#include "models/zoo.h"

#include <cmath>
#include <random>

namespace oat::models {

namespace {

// Appends nodes and initializers to a Graph with generated, readable names.
class ZooBuilder {
 public:
  explicit ZooBuilder(uint64_t seed) : rng_(seed) {
    g_.name = "zoo";
    g_.opsets[""] = 17;
  }

  void input(const std::string& name, std::vector<Dim> dims) {
    ValueInfo v;
    v.name = name;
    v.dtype = DType::F32;
    v.shape = std::move(dims);
    g_.inputs.push_back(v);
  }
  void output(const std::string& name, std::vector<Dim> dims) {
    ValueInfo v;
    v.name = name;
    v.dtype = DType::F32;
    v.shape = std::move(dims);
    g_.outputs.push_back(v);
  }

  std::string node(const std::string& op, const std::string& name,
                   const std::vector<std::string>& inputs, std::map<std::string, Attribute> attrs = {},
                   std::string out = "") {
    Node n;
    n.name = name;
    n.op_type = op;
    n.op = op_from_name(op);
    n.opset = 17;
    n.inputs = inputs;
    n.outputs = {out.empty() ? name + "_out" : out};
    n.attrs = std::move(attrs);
    g_.nodes.push_back(n);
    return n.outputs[0];
  }

  // U(-bound, bound) with bound = 1/√fan_in: PyTorch's default for both weight and bias.
  std::string uniform_param(const std::string& name, Shape shape, int64_t fan_in) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
    std::uniform_real_distribution<float> u(-bound, bound);
    Tensor t(DType::F32, shape);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng_);
    g_.initializers[name] = t;
    return name;
  }

  // nn.Linear(in, out): Y = X·Wᵀ + b, as Gemm(transB=1) with W [out, in].
  std::string linear(const std::string& name, const std::string& x, int64_t in, int64_t out,
                     const std::string& y = "") {
    std::string w = uniform_param(name + ".weight", {out, in}, in);
    std::string b = uniform_param(name + ".bias", {out}, in);
    return node("Gemm", name, {x, w, b}, {{"transB", ints_attr(1)}}, y);
  }

  std::string conv(const std::string& name, const std::string& x, int64_t cin, int64_t cout,
                   int64_t k, int64_t pad) {
    const int64_t fan_in = cin * k * k;
    std::string w = uniform_param(name + ".weight", {cout, cin, k, k}, fan_in);
    std::string b = uniform_param(name + ".bias", {cout}, fan_in);
    return node("Conv", name, {x, w, b},
                {{"kernel_shape", ints({k, k})}, {"pads", ints({pad, pad, pad, pad})}});
  }

  std::string maxpool2(const std::string& name, const std::string& x) {
    return node("MaxPool", name, {x}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  }

  static Attribute ints(std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::Ints;
    a.ints = std::move(v);
    return a;
  }
  static Attribute ints_attr(int64_t v) {
    Attribute a;
    a.kind = Attribute::Kind::Int;
    a.i = v;
    return a;
  }

  Graph take() { return std::move(g_); }

 private:
  Graph g_;
  std::mt19937_64 rng_;
};

std::vector<Dim> image_dims() {
  Dim batch;
  batch.param = "batch";
  return {batch, Dim{1, ""}, Dim{28, ""}, Dim{28, ""}};
}
std::vector<Dim> logits_dims() {
  Dim batch;
  batch.param = "batch";
  return {batch, Dim{10, ""}};
}

}  // namespace

Graph mlp(uint64_t seed) {
  ZooBuilder b(seed);
  b.input("input", image_dims());
  std::string x = b.node("Flatten", "flatten", {"input"}, {{"axis", ZooBuilder::ints_attr(1)}});
  x = b.node("Relu", "relu1", {b.linear("fc1", x, 784, 256)});
  x = b.node("Relu", "relu2", {b.linear("fc2", x, 256, 128)});
  b.linear("fc3", x, 128, 10, "logits");
  b.output("logits", logits_dims());
  Graph g = b.take();
  g.name = "mlp";
  return g;
}

Graph lenet5(uint64_t seed) {
  ZooBuilder b(seed);
  b.input("input", image_dims());
  std::string x = b.maxpool2("pool1", b.node("Relu", "relu1", {b.conv("conv1", "input", 1, 6, 5, 2)}));
  x = b.maxpool2("pool2", b.node("Relu", "relu2", {b.conv("conv2", x, 6, 16, 5, 0)}));
  x = b.node("Flatten", "flatten", {x}, {{"axis", ZooBuilder::ints_attr(1)}});
  x = b.node("Relu", "relu3", {b.linear("fc1", x, 400, 120)});
  x = b.node("Relu", "relu4", {b.linear("fc2", x, 120, 84)});
  b.linear("fc3", x, 84, 10, "logits");
  b.output("logits", logits_dims());
  Graph g = b.take();
  g.name = "lenet5";
  return g;
}

std::vector<std::string> zoo_names() { return {"mlp", "lenet5"}; }

Graph zoo_model(const std::string& name, uint64_t seed) {
  if (name == "mlp") return mlp(seed);
  if (name == "lenet5" || name == "lenet-5") return lenet5(seed);
  std::string all;
  for (const auto& n : zoo_names()) all += (all.empty() ? "" : ", ") + n;
  throw Error(cat("unknown zoo model '", name, "' (known: ", all, ")"));
}

}  // namespace oat::models
