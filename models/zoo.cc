#include "models/zoo.h"

#include <algorithm>
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
  // What shape inference would say of an intermediate value (an in-memory graph has not been
  // through it; composite ops such as LSTM read their input's type and sequence length there).
  void value_info(const std::string& name, std::vector<Dim> dims) {
    ValueInfo v;
    v.name = name;
    v.dtype = DType::F32;
    v.shape = std::move(dims);
    g_.value_info[name] = v;
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
    return node_n(op, name, inputs, {out.empty() ? name + "_out" : out}, std::move(attrs))[0];
  }

  // A node with several outputs (Split).
  std::vector<std::string> node_n(const std::string& op, const std::string& name,
                                  const std::vector<std::string>& inputs,
                                  std::vector<std::string> outputs,
                                  std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.name = name;
    n.op_type = op;
    n.op = op_from_name(op);
    n.opset = 17;
    n.inputs = inputs;
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    g_.nodes.push_back(n);
    return n.outputs;
  }

  // An int64 initializer (Reshape's shape): not a parameter, the trainer trains only floats.
  std::string int64s(const std::string& name, const std::vector<int64_t>& values) {
    Tensor t(DType::I64, {static_cast<int64_t>(values.size())});
    std::copy(values.begin(), values.end(), t.data<int64_t>());
    g_.initializers[name] = t;
    return name;
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

  // torchvision's ResNet init for convolutions: kaiming_normal_(mode="fan_out",
  // nonlinearity="relu"), i.e. W ~ N(0, 2 / (cout·k·k)); no bias (a BatchNorm follows).
  std::string conv_nobias(const std::string& name, const std::string& x, int64_t cin,
                          int64_t cout, int64_t k, int64_t stride, int64_t pad) {
    std::normal_distribution<float> n(0.0f, std::sqrt(2.0f / static_cast<float>(cout * k * k)));
    Tensor w(DType::F32, {cout, cin, k, k});
    float* p = w.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i) p[i] = n(rng_);
    g_.initializers[name + ".weight"] = w;
    return node("Conv", name, {x, name + ".weight"},
                {{"kernel_shape", ints({k, k})},
                 {"strides", ints({stride, stride})},
                 {"pads", ints({pad, pad, pad, pad})}});
  }

  // nn.BatchNorm2d(c): weight 1, bias 0, running mean 0, running var 1, eps 1e-5; PyTorch's
  // momentum 0.1 is ONNX's 0.9 (running = running·0.9 + batch·0.1).
  std::string batchnorm(const std::string& name, const std::string& x, int64_t c) {
    g_.initializers[name + ".weight"] = filled({c}, 1.0f);
    g_.initializers[name + ".bias"] = filled({c}, 0.0f);
    g_.initializers[name + ".running_mean"] = filled({c}, 0.0f);
    g_.initializers[name + ".running_var"] = filled({c}, 1.0f);
    return node("BatchNormalization", name,
                {x, name + ".weight", name + ".bias", name + ".running_mean", name + ".running_var"},
                {{"epsilon", float_attr(1e-5f)}, {"momentum", float_attr(0.9f)}});
  }

  // xavier_uniform_: U(-a, a), a = √(6 / (fan_in + fan_out)); fan_in = shape[1], fan_out = shape[0].
  std::string xavier_param(const std::string& name, Shape shape) {
    const float a = std::sqrt(6.0f / static_cast<float>(shape[0] + shape[1]));
    std::uniform_real_distribution<float> u(-a, a);
    Tensor t(DType::F32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng_);
    g_.initializers[name] = t;
    return name;
  }

  // N(0, std²) (the positional embedding: BERT's / ViT's truncation-free 0.02).
  std::string normal_param(const std::string& name, Shape shape, float std) {
    std::normal_distribution<float> n(0.0f, std);
    Tensor t(DType::F32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng_);
    g_.initializers[name] = t;
    return name;
  }

  // nn.LayerNorm(d) over the last axis: weight 1, bias 0, eps 1e-5.
  std::string layernorm(const std::string& name, const std::string& x, int64_t d) {
    filled_param(name + ".weight", {d}, 1.0f);
    filled_param(name + ".bias", {d}, 0.0f);
    return node("LayerNormalization", name, {x, name + ".weight", name + ".bias"},
                {{"axis", ints_attr(-1)}, {"epsilon", float_attr(1e-5f)}});
  }

  std::string filled_param(const std::string& name, Shape shape, float v) {
    g_.initializers[name] = filled(std::move(shape), v);
    return name;
  }

  static Tensor filled(Shape shape, float v) {
    Tensor t(DType::F32, shape);
    std::fill(t.data<float>(), t.data<float>() + t.numel(), v);
    return t;
  }

  std::string maxpool2(const std::string& name, const std::string& x) {
    return node("MaxPool", name, {x}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  }

  static Attribute ints(std::vector<int64_t> v) { return ints_attribute(std::move(v)); }
  static Attribute float_attr(float v) { return float_attribute(v); }
  static Attribute ints_attr(int64_t v) { return int_attribute(v); }

  Graph take() { return std::move(g_); }

 private:
  Graph g_;
  std::mt19937_64 rng_;
};

std::vector<Dim> image_dims(int64_t c = 1, int64_t h = 28, int64_t w = 28) {
  Dim batch;
  batch.param = "batch";
  return {batch, Dim{c, ""}, Dim{h, ""}, Dim{w, ""}};
}
std::vector<Dim> logits_dims(int64_t classes = 10) {
  Dim batch;
  batch.param = "batch";
  return {batch, Dim{classes, ""}};
}

// torchvision's BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut), conv1 3×3 with
// the block's stride, conv2 3×3 stride 1; the shortcut is x, or downsample = conv 1×1/stride +
// BN when the shape changes.
std::string basic_block(ZooBuilder& b, const std::string& p, const std::string& x, int64_t cin,
                        int64_t cout, int64_t stride) {
  std::string y = b.conv_nobias(p + ".conv1", x, cin, cout, 3, stride, 1);
  y = b.node("Relu", p + ".relu1", {b.batchnorm(p + ".bn1", y, cout)});
  y = b.batchnorm(p + ".bn2", b.conv_nobias(p + ".conv2", y, cout, cout, 3, 1, 1), cout);
  std::string shortcut = x;
  if (stride != 1 || cin != cout)
    shortcut = b.batchnorm(p + ".downsample.1",
                           b.conv_nobias(p + ".downsample.0", x, cin, cout, 1, stride, 0), cout);
  return b.node("Relu", p + ".relu2", {b.node("Add", p + ".add", {y, shortcut})});
}

// nn.TransformerEncoderLayer(d, heads, ff, dropout=0, activation="relu", batch_first=True),
// post-norm (norm_first=False), on the token rows h [N·S, d]:
//   [q | k | v] = h·in_proj_weightᵀ + in_proj_bias
//   per head (dh = d / heads): A = softmax((q/√dh)·kᵀ) over keys, ctx = A·v
//   h = norm1(h + ctx·out_projᵀ + b);  h = norm2(h + linear2(relu(linear1(h))))
// The packed in_proj_weight [3d, d] and in_proj_bias [3d] are Split into their q, k, v thirds,
// one Gemm each; q's carries the 1/√dh as Gemm's alpha = beta (q/√dh = (h·Wqᵀ + bq)/√dh), so no
// float constant feeds the graph (a Constant would run on the host, and a float initializer
// would be trained).
// Heads are [N, H, S, dh] = Transpose(Reshape(q, [-1, S, H, dh]), [0, 2, 1, 3]); k goes straight
// to [N, H, dh, S] (perm [0, 2, 3, 1]), so both attention products are plain batched MatMuls.
std::string encoder_layer(ZooBuilder& b, const std::string& p, const std::string& h,
                          const TransformerOptions& o) {
  const int64_t d = o.d_model, H = o.heads, dh = o.d_model / o.heads, S = o.seq_len;
  const std::string a = p + ".self_attn";
  // PyTorch's MultiheadAttention init: in_proj xavier_uniform_, both biases 0, out_proj.weight
  // nn.Linear's default.
  b.xavier_param(a + ".in_proj_weight", {3 * d, d});
  b.filled_param(a + ".in_proj_bias", {3 * d}, 0.0f);
  b.uniform_param(a + ".out_proj.weight", {d, d}, d);
  b.filled_param(a + ".out_proj.bias", {d}, 0.0f);

  const auto w = b.node_n("Split", a + ".in_proj_weight_split", {a + ".in_proj_weight"},
                          {a + ".q_weight", a + ".k_weight", a + ".v_weight"},
                          {{"axis", ZooBuilder::ints_attr(0)}});
  const auto bias = b.node_n("Split", a + ".in_proj_bias_split", {a + ".in_proj_bias"},
                             {a + ".q_bias", a + ".k_bias", a + ".v_bias"},
                             {{"axis", ZooBuilder::ints_attr(0)}});
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  std::vector<std::string> qkv;
  for (int i = 0; i < 3; ++i) {
    std::map<std::string, Attribute> attrs = {{"transB", ZooBuilder::ints_attr(1)}};
    if (i == 0) attrs["alpha"] = attrs["beta"] = ZooBuilder::float_attr(scale);
    qkv.push_back(b.node("Gemm", a + "." + "qkv"[i] + "_proj", {h, w[i], bias[i]}, attrs));
  }
  const std::string heads_shape = b.int64s("heads_shape", {-1, S, H, dh});
  auto to_heads = [&](const std::string& x, const std::string& tag, std::vector<int64_t> perm) {
    return b.node("Transpose", a + "." + tag + "_heads",
                  {b.node("Reshape", a + "." + tag + "_reshape", {x, heads_shape})},
                  {{"perm", ZooBuilder::ints(std::move(perm))}});
  };
  const std::string q = to_heads(qkv[0], "q", {0, 2, 1, 3});   // [N, H, S, dh], scaled
  const std::string kt = to_heads(qkv[1], "k", {0, 2, 3, 1});  // [N, H, dh, S]
  const std::string v = to_heads(qkv[2], "v", {0, 2, 1, 3});   // [N, H, S, dh]
  const std::string scores = b.node("MatMul", a + ".scores", {q, kt});  // [N, H, S, S]
  const std::string attn = b.node("Softmax", a + ".softmax", {scores}, {{"axis", ZooBuilder::ints_attr(-1)}});
  std::string ctx = b.node("MatMul", a + ".context", {attn, v});  // [N, H, S, dh]
  ctx = b.node("Transpose", a + ".context_merge", {ctx}, {{"perm", ZooBuilder::ints({0, 2, 1, 3})}});
  ctx = b.node("Reshape", a + ".context_rows", {ctx, b.int64s("rows_shape", {-1, d})});
  const std::string attn_out = b.node("Gemm", a + ".out_proj", {ctx, a + ".out_proj.weight", a + ".out_proj.bias"},
                                      {{"transB", ZooBuilder::ints_attr(1)}});
  std::string x = b.layernorm(p + ".norm1", b.node("Add", p + ".residual1", {h, attn_out}), d);
  std::string f = b.node("Relu", p + ".relu", {b.linear(p + ".linear1", x, d, o.ff)});
  f = b.linear(p + ".linear2", f, o.ff, d);
  return b.layernorm(p + ".norm2", b.node("Add", p + ".residual2", {x, f}), d);
}

}  // namespace

Graph mlp(uint64_t seed, const MlpOptions& o) {
  for (int64_t h : o.hidden)
    if (h < 1) throw Error(cat("mlp: hidden width ", h, " must be positive"));
  ZooBuilder b(seed);
  b.input("input", image_dims());
  std::string x = b.node("Flatten", "flatten", {"input"}, {{"axis", ZooBuilder::ints_attr(1)}});
  int64_t width = 784;
  for (size_t i = 0; i < o.hidden.size(); ++i) {
    const std::string k = std::to_string(i + 1);
    x = b.node("Relu", "relu" + k, {b.linear("fc" + k, x, width, o.hidden[i])});
    width = o.hidden[i];
  }
  b.linear("fc" + std::to_string(o.hidden.size() + 1), x, width, 10, "logits");
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

Graph resnet18(uint64_t seed, const ResNetOptions& o) {
  if (o.image_size < 1 || o.in_channels < 1 || o.num_classes < 1)
    throw Error(cat("resnet18: image_size, in_channels and num_classes must be positive (got ",
                    o.image_size, ", ", o.in_channels, ", ", o.num_classes, ")"));
  ZooBuilder b(seed);
  b.input("input", image_dims(o.in_channels, o.image_size, o.image_size));
  // Stem: conv 7×7/2 pad 3 → BN → ReLU → max-pool 3×3/2 pad 1.
  std::string x = b.conv_nobias("conv1", "input", o.in_channels, 64, 7, 2, 3);
  x = b.node("Relu", "relu", {b.batchnorm("bn1", x, 64)});
  x = b.node("MaxPool", "maxpool", {x},
             {{"kernel_shape", ZooBuilder::ints({3, 3})},
              {"strides", ZooBuilder::ints({2, 2})},
              {"pads", ZooBuilder::ints({1, 1, 1, 1})}});
  // layer1..layer4: two BasicBlocks each, 64/128/256/512 channels, layers 2-4 halve H and W.
  int64_t c = 64;
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int l = 0; l < 4; ++l) {
    const std::string p = cat("layer", l + 1);
    x = basic_block(b, p + ".0", x, c, widths[l], l == 0 ? 1 : 2);
    x = basic_block(b, p + ".1", x, widths[l], widths[l], 1);
    c = widths[l];
  }
  // AdaptiveAvgPool2d(1) → flatten → fc (nn.Linear's default init).
  x = b.node("GlobalAveragePool", "avgpool", {x});
  x = b.node("Flatten", "flatten", {x}, {{"axis", ZooBuilder::ints_attr(1)}});
  b.linear("fc", x, 512, o.num_classes, "logits");
  b.output("logits", logits_dims(o.num_classes));
  Graph g = b.take();
  g.name = "resnet18";
  return g;
}

Graph transformer(uint64_t seed, const TransformerOptions& o) {
  if (o.seq_len < 1 || o.d_in < 1 || o.d_model < 1 || o.heads < 1 || o.layers < 1 || o.ff < 1 ||
      o.num_classes < 1)
    throw Error(cat("transformer: every size must be positive (seq_len ", o.seq_len, ", d_in ", o.d_in,
                    ", d_model ", o.d_model, ", heads ", o.heads, ", layers ", o.layers, ", ff ", o.ff,
                    ", num_classes ", o.num_classes, ")"));
  if (o.d_model % o.heads != 0)
    throw Error(cat("transformer: d_model ", o.d_model, " is not a multiple of heads ", o.heads));
  ZooBuilder b(seed);
  Dim batch;
  batch.param = "batch";
  b.input("input", {batch, Dim{o.seq_len, ""}, Dim{o.d_in, ""}});
  // Tokens as rows [N·S, d_in] → input_proj → [N, S, d] + pos_embedding [S, d] → rows [N·S, d].
  std::string h = b.node("Reshape", "tokens", {"input", b.int64s("tokens_shape", {-1, o.d_in})});
  h = b.linear("input_proj", h, o.d_in, o.d_model);
  const std::string seq_shape = b.int64s("seq_shape", {-1, o.seq_len, o.d_model});
  h = b.node("Reshape", "input_proj_seq", {h, seq_shape});
  h = b.node("Add", "add_pos", {h, b.normal_param("pos_embedding", {o.seq_len, o.d_model}, 0.02f)});
  h = b.node("Reshape", "rows", {h, b.int64s("rows_shape", {-1, o.d_model})});
  for (int64_t l = 0; l < o.layers; ++l) h = encoder_layer(b, cat("encoder.layers.", l), h, o);
  // Mean over the sequence → classifier.
  h = b.node("ReduceMean", "pool", {b.node("Reshape", "pool_seq", {h, seq_shape})},
             {{"axes", ZooBuilder::ints({1})}, {"keepdims", ZooBuilder::ints_attr(0)}});
  b.linear("fc", h, o.d_model, o.num_classes, "logits");
  b.output("logits", logits_dims(o.num_classes));
  Graph g = b.take();
  g.name = "transformer";
  return g;
}

// PyTorch's LSTM parameter (gates i, f, g, o stacked on axis 0) in ONNX's gate order i, o, f, c.
std::string onnx_gate_order(ZooBuilder& b, const std::string& name, const std::string& p) {
  const auto g = b.node_n("Split", name + "_gates", {p},
                          {name + "_i", name + "_f", name + "_g", name + "_o"},
                          {{"axis", ZooBuilder::ints_attr(0)}});
  return b.node("Concat", name + "_iofc", {g[0], g[3], g[1], g[2]},
                {{"axis", ZooBuilder::ints_attr(0)}});
}

Graph lstm(uint64_t seed, const LstmOptions& o) {
  if (o.seq_len < 1 || o.d_in < 1 || o.hidden < 1 || o.layers < 1 || o.num_classes < 1)
    throw Error(cat("lstm: every size must be positive (seq_len ", o.seq_len, ", d_in ", o.d_in,
                    ", hidden ", o.hidden, ", layers ", o.layers, ", num_classes ", o.num_classes,
                    ")"));
  ZooBuilder b(seed);
  Dim batch;
  batch.param = "batch";
  b.input("input", {batch, Dim{o.seq_len, ""}, Dim{o.d_in, ""}});
  // [N, S, d_in] -> ONNX's time-major [S, N, d_in].
  std::string x = b.node("Transpose", "time_major", {"input"}, {{"perm", ZooBuilder::ints({1, 0, 2})}});
  b.value_info(x, {Dim{o.seq_len, ""}, batch, Dim{o.d_in, ""}});
  const std::string axis0 = b.int64s("axis0", {0}), axis1 = b.int64s("axis1", {1});
  std::string h_last;
  for (int64_t l = 0; l < o.layers; ++l) {
    const std::string p = "lstm.";
    const std::string k = cat("_l", l);
    const int64_t in = l == 0 ? o.d_in : o.hidden;
    const std::string w_ih = b.uniform_param(p + "weight_ih" + k, {4 * o.hidden, in}, o.hidden);
    const std::string w_hh = b.uniform_param(p + "weight_hh" + k, {4 * o.hidden, o.hidden}, o.hidden);
    const std::string b_ih = b.uniform_param(p + "bias_ih" + k, {4 * o.hidden}, o.hidden);
    const std::string b_hh = b.uniform_param(p + "bias_hh" + k, {4 * o.hidden}, o.hidden);
    const std::string n = cat("lstm", k);
    const std::string W = b.node("Unsqueeze", n + "_W", {onnx_gate_order(b, n + "_w_ih", w_ih), axis0});
    const std::string R = b.node("Unsqueeze", n + "_R", {onnx_gate_order(b, n + "_w_hh", w_hh), axis0});
    const std::string bias = b.node("Concat", n + "_b",
                                    {onnx_gate_order(b, n + "_b_ih", b_ih),
                                     onnx_gate_order(b, n + "_b_hh", b_hh)},
                                    {{"axis", ZooBuilder::ints_attr(0)}});
    const std::string B = b.node("Unsqueeze", n + "_B", {bias, axis0});
    const auto out = b.node_n("LSTM", n, {x, W, R, B}, {n + "_Y", n + "_Y_h"},
                              {{"hidden_size", ZooBuilder::ints_attr(o.hidden)}});
    x = b.node("Squeeze", n + "_steps", {out[0], axis1});  // [S, 1, N, H] -> [S, N, H]
    b.value_info(x, {Dim{o.seq_len, ""}, batch, Dim{o.hidden, ""}});
    h_last = out[1];                                       // [1, N, H]: the last step's state
  }
  const std::string h = b.node("Squeeze", "last_step", {h_last, axis0});
  b.linear("fc", h, o.hidden, o.num_classes, "logits");
  b.output("logits", logits_dims(o.num_classes));
  Graph g = b.take();
  g.name = "lstm";
  return g;
}

std::vector<std::string> zoo_names() {
  return {"mlp",  "lenet5", "resnet18",         "resnet18-cifar",
          "transformer", "lstm",   "mlp-wide", "transformer-base"};
}

Graph zoo_model(const std::string& name, uint64_t seed) {
  if (name == "mlp") return mlp(seed);
  if (name == "lenet5" || name == "lenet-5") return lenet5(seed);
  if (name == "resnet18") return resnet18(seed, ResNetOptions{});
  if (name == "resnet18-cifar") {
    ResNetOptions o;
    o.image_size = 32;
    o.num_classes = 10;
    return resnet18(seed, o);
  }
  if (name == "transformer") return transformer(seed, TransformerOptions{});
  if (name == "mlp-wide") {
    MlpOptions o;
    o.hidden = {4096, 4096};
    return mlp(seed, o);
  }
  if (name == "transformer-base") {
    TransformerOptions o;
    o.seq_len = 128;
    o.d_in = 768;
    o.d_model = 768;
    o.heads = 12;
    o.ff = 3072;
    o.layers = 2;
    return transformer(seed, o);
  }
  if (name == "lstm") return lstm(seed, LstmOptions{});
  std::string all;
  for (const auto& n : zoo_names()) all += (all.empty() ? "" : ", ") + n;
  throw Error(cat("unknown zoo model '", name, "' (known: ", all, ")"));
}

}  // namespace oat::models
