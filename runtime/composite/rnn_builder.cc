// RNN, GRU and LSTM (runtime/composite/rnn.h): the Builder's helpers (nodes with their recorded
// types and shapes, clip, the activations) and the parsing of the activations attributes.
#include <cctype>

#include "runtime/composite/rnn.h"
#include "runtime/error.h"

namespace oat::composite::rnn {

namespace {

// The activations of the spec, with how many of activation_alpha / activation_beta each consumes
// and their defaults (those of the ONNX operator of the same name; Affine and ScaledTanh, which
// have none, default to the identity's 1 and 0 / to 1 and 1).
struct ActivationKind {
  const char* name;
  int n_alpha, n_beta;
  float alpha, beta;
};
constexpr ActivationKind kActivations[] = {
    {"Relu", 0, 0, 0, 0},
    {"Tanh", 0, 0, 0, 0},
    {"Sigmoid", 0, 0, 0, 0},
    {"Softsign", 0, 0, 0, 0},            // x / (1 + |x|)
    {"Softplus", 0, 0, 0, 0},            // log(1 + e^x)
    {"LeakyRelu", 1, 0, 0.01f, 0},       // x < 0 ? alpha·x : x
    {"ThresholdedRelu", 1, 0, 1.0f, 0},  // x > alpha ? x : 0
    {"Elu", 1, 0, 1.0f, 0},              // x < 0 ? alpha·(e^x - 1) : x
    {"HardSigmoid", 1, 1, 0.2f, 0.5f},   // max(0, min(1, alpha·x + beta))
    {"Affine", 1, 1, 1.0f, 0.0f},        // alpha·x + beta
    {"ScaledTanh", 1, 1, 1.0f, 1.0f},    // alpha·tanh(beta·x)
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> default_activations(Cell cell) {
  return cell == Cell::RNN   ? std::vector<std::string>{"Tanh"}
         : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                             : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
}

// The activations per direction. Names are matched case-insensitively (as ONNX Runtime does);
// activation_alpha / activation_beta are consumed in order by the activations that take them,
// the operator's default where the list has run out (ONNX Runtime's reading of the spec). A
// bidirectional node may list one direction's activations; the backward direction reuses them.
std::vector<std::vector<Activation>> parse_activations(Expansion& e, Cell cell, int64_t dirs) {
  const Node& n = e.node();
  const size_t per = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
  const std::vector<std::string> defaults = default_activations(cell);
  std::vector<std::string> names;
  if (const Attribute* a = n.attr("activations")) {
    if (a->kind != Attribute::Kind::Strings)
      e.fail("attribute 'activations' must be a list of strings");
    names = a->strings;
  }
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per * dirs && !(dirs == 2 && names.size() == per))
    e.fail(cat("'activations' has ", names.size(), " entries; ", n.op_type, " takes ", per,
               " per direction (", per * dirs, " for ", dirs, " direction", dirs > 1 ? "s" : "",
               ")"));
  const std::vector<float> alphas = n.attr_floats("activation_alpha");
  const std::vector<float> betas = n.attr_floats("activation_beta");
  size_t ia = 0, ib = 0;
  std::vector<Activation> flat;
  for (const auto& name : names) {
    const ActivationKind* k = nullptr;
    for (const auto& c : kActivations)
      if (lower(name) == lower(c.name)) k = &c;
    if (!k)
      e.fail(cat("unknown activation '", name,
                 "' (the spec's are Relu, Tanh, Sigmoid, Affine, "
                 "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)"));
    Activation a{k->name, k->alpha, k->beta};
    if (k->n_alpha && ia < alphas.size()) a.alpha = alphas[ia++];
    if (k->n_beta && ib < betas.size()) a.beta = betas[ib++];
    flat.push_back(a);
  }
  if (flat.size() == per && dirs == 2) flat.insert(flat.end(), flat.begin(), flat.end());
  std::vector<std::vector<Activation>> r(static_cast<size_t>(dirs));
  for (int64_t d = 0; d < dirs; ++d)
    r[static_cast<size_t>(d)].assign(flat.begin() + d * per, flat.begin() + (d + 1) * per);
  return r;
}

Builder::Builder(Expansion& ex, Cell c) : e(ex), cell(c) {}

std::string Builder::op(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::string& tag, std::optional<std::vector<Dim>> shape,
                        std::map<std::string, Attribute> attrs, const std::string& out,
                        DType type) {
  if (!out.empty()) {
    e.add_to(op_type, inputs, {out}, tag, std::move(attrs));
    return out;
  }
  std::string v = e.add1(op_type, inputs, tag, std::move(attrs));
  e.set_info(v, type == DType::Undefined ? dt : type, std::move(shape));
  return v;
}

std::vector<std::string> Builder::split(const std::string& x, int64_t axis,
                                        const std::vector<int64_t>& sizes, const std::string& tag,
                                        const std::vector<Dim>& shape) {
  std::string s = e.ints(sizes, tag + "_sizes");
  auto outs = e.add("Split", {x, s}, tag, sizes.size(), {{"axis", int_attribute(axis)}});
  for (size_t k = 0; k < outs.size(); ++k) {
    std::vector<Dim> sh = shape;
    sh[static_cast<size_t>(axis)] = Dim{sizes[k], ""};
    e.set_info(outs[k], dt, sh);
  }
  return outs;
}

std::string Builder::scalar(float v, const std::string& tag) {
  return e.constant_tensor(cast_tensor(Tensor::scalar<float>(v), dt), tag);
}

std::string Builder::clipped(const std::string& x, int64_t n, const std::string& tag) {
  if (!clip) return x;
  if (clip_lo_.empty()) {
    clip_lo_ = scalar(-*clip, "clip_min");
    clip_hi_ = scalar(*clip, "clip_max");
  }
  return op("Clip", {x, clip_lo_, clip_hi_}, tag, bn(n));
}

std::string Builder::activate(const Activation& a, const std::string& x, int64_t n,
                              const std::string& tag) {
  auto f = [](float v) { return float_attribute(v); };
  const std::string& k = a.name;
  if (k == "Relu" || k == "Tanh" || k == "Sigmoid" || k == "Softsign" || k == "Softplus")
    return op(k, {x}, tag, bn(n));
  if (k == "LeakyRelu" || k == "ThresholdedRelu" || k == "Elu")
    return op(k, {x}, tag, bn(n), {{"alpha", f(a.alpha)}});
  if (k == "HardSigmoid")
    return op(k, {x}, tag, bn(n), {{"alpha", f(a.alpha)}, {"beta", f(a.beta)}});
  if (k == "Affine") {  // alpha·x + beta
    std::string ax = op("Mul", {x, scalar(a.alpha, tag + "_alpha")}, tag + "_ax", bn(n));
    return op("Add", {ax, scalar(a.beta, tag + "_beta")}, tag, bn(n));
  }
  if (k == "ScaledTanh") {  // alpha·tanh(beta·x)
    std::string bx = op("Mul", {x, scalar(a.beta, tag + "_beta")}, tag + "_bx", bn(n));
    std::string t = op("Tanh", {bx}, tag + "_tanh", bn(n));
    return op("Mul", {t, scalar(a.alpha, tag + "_alpha")}, tag, bn(n));
  }
  e.fail(cat("internal: activation ", k, " has no expansion"));
}

}  // namespace oat::composite::rnn
