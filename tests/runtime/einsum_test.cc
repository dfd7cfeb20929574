// Einsum as a composite op (runtime/composite/einsum.cc): the Executor runs the expansion, compared
// with a naive einsum written here (loops over every value of every label, in double) on random
// inputs, for each equation with the inputs' shapes declared statically, declared with symbolic
// dims, and not declared at all (the expansion then computes its Reshape targets at run time), in
// float64 and float16. Also: the expansion's ops and names, and the errors, which name the node
// and the equation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <random>

#include "runtime/composite.h"
#include "runtime/executor.h"

using namespace oat;

namespace {

// ---- the reference -------------------------------------------------------------------------------

// numpy's einsum, plus torch's rule that an explicit output without "..." sums the ellipsis dims.
// Labels are chars: the letters, and '0' + j for ellipsis dim j (right-aligned). A dim of size 1
// broadcasts against the label's size.
Tensor reference_einsum(const std::string& equation, const std::vector<Tensor>& xs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  REQUIRE(terms.size() == xs.size());
  int E = 0;
  std::vector<std::string> labels(xs.size());
  std::vector<int> ell(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    std::string letters = terms[k];
    const size_t dots = letters.find("...");
    if (dots != std::string::npos) letters.erase(dots, 3);
    ell[k] = dots == std::string::npos ? 0 : static_cast<int>(xs[k].rank()) - static_cast<int>(letters.size());
    E = std::max(E, ell[k]);
  }
  std::map<char, int> count;
  for (size_t k = 0; k < xs.size(); ++k) {
    const std::string& t = terms[k];
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.') {
        for (int j = 0; j < ell[k]; ++j) labels[k] += static_cast<char>('0' + E - ell[k] + j);
        i += 2;
      } else {
        labels[k] += t[i];
        ++count[t[i]];
      }
    }
    REQUIRE(labels[k].size() == static_cast<size_t>(xs[k].rank()));
  }
  std::string out;
  if (arrow != std::string::npos) {
    const std::string o = eq.substr(arrow + 2);
    for (size_t i = 0; i < o.size(); ++i) {
      if (o[i] == '.') {
        for (int j = 0; j < E; ++j) out += static_cast<char>('0' + j);
        i += 2;
      } else {
        out += o[i];
      }
    }
  } else {
    for (int j = 0; j < E; ++j) out += static_cast<char>('0' + j);
    for (const auto& [c, n] : count)
      if (n == 1) out += c;
  }
  std::map<char, int64_t> size;
  for (size_t k = 0; k < xs.size(); ++k)
    for (size_t a = 0; a < labels[k].size(); ++a) {
      int64_t& s = size[labels[k][a]];
      s = std::max(s, xs[k].shape()[a]);
    }
  std::vector<char> all;
  for (const auto& [c, s] : size) all.push_back(c);
  Shape out_shape;
  for (char c : out) out_shape.push_back(size.at(c));
  Tensor y = Tensor::zeros(DType::F64, out_shape);
  std::map<char, int64_t> at;
  for (char c : all) at[c] = 0;
  bool empty = false;
  for (char c : all) empty |= size[c] == 0;
  while (!empty) {
    double p = 1;
    for (size_t k = 0; k < xs.size(); ++k) {
      int64_t off = 0;
      for (size_t a = 0; a < labels[k].size(); ++a) {
        const int64_t d = xs[k].shape()[a];
        off = off * d + (d == 1 ? 0 : at[labels[k][a]]);
      }
      p *= xs[k].item_as_double(off);
    }
    int64_t o = 0;
    for (size_t a = 0; a < out.size(); ++a) o = o * out_shape[a] + at[out[a]];
    y.data<double>()[o] += p;
    // Next assignment (odometer over every label).
    size_t i = 0;
    for (; i < all.size(); ++i) {
      if (++at[all[i]] < size[all[i]]) break;
      at[all[i]] = 0;
    }
    if (i == all.size()) break;
  }
  return y;
}

// ---- the graph -----------------------------------------------------------------------------------

enum class Declared { Static, Symbolic, None };

const char* declared_name(Declared d) {
  return d == Declared::Static ? "static" : d == Declared::Symbolic ? "symbolic" : "none";
}

// One Einsum node "es" with inputs x0.. and output y. Symbolic: each input's first dim, when it is
// a letter's, is the symbol "n_<letter>"; None: no shapes at all.
Graph einsum_graph(const std::string& equation, const std::vector<Shape>& shapes, DType dt,
                   Declared declared) {
  Graph g;
  g.name = "einsum";
  g.opsets[""] = 12;
  Node n;
  n.name = "es";
  n.op_type = "Einsum";
  n.op = op_from_name("Einsum");
  n.opset = 12;
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = equation;
  n.attrs["equation"] = a;
  std::vector<std::string> terms;
  {
    std::string lhs = equation.substr(0, equation.find("->"));
    size_t start = 0;
    for (;;) {
      size_t comma = lhs.find(',', start);
      terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (size_t k = 0; k < shapes.size(); ++k) {
    ValueInfo vi;
    vi.name = "x" + std::to_string(k);
    vi.dtype = dt;
    if (declared != Declared::None) {
      std::vector<Dim> dims;
      for (int64_t s : shapes[k]) dims.push_back(Dim{s, ""});
      std::string t;
      for (char c : k < terms.size() ? terms[k] : "")
        if (c != ' ') t += c;
      if (declared == Declared::Symbolic && !dims.empty() && !t.empty() &&
          std::isalpha(static_cast<unsigned char>(t[0])))
        dims[0] = Dim{-1, std::string("n_") + t[0]};
      vi.shape = dims;
    }
    g.inputs.push_back(vi);
    n.inputs.push_back(vi.name);
  }
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.outputs.push_back(ValueInfo{"y", dt, std::nullopt});
  return g;
}

std::vector<Tensor> random_inputs(const std::vector<Shape>& shapes, DType dt, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Tensor> r;
  for (const Shape& s : shapes) {
    Tensor t(DType::F64, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(rng);
    r.push_back(dt == DType::F64 ? t : cast_tensor(t, dt));
  }
  return r;
}

Tensor run_einsum(const std::string& equation, const std::vector<Tensor>& xs, Declared declared) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  Graph g = einsum_graph(equation, shapes, xs[0].dtype(), declared);
  Executor ex(g);
  std::map<std::string, Tensor> feeds;
  for (size_t k = 0; k < xs.size(); ++k) feeds["x" + std::to_string(k)] = xs[k];
  return ex.run(feeds).at(0);
}

struct Case {
  std::string equation;
  std::vector<Shape> shapes;
  // A contracted letter of size 1 on one side broadcasts only when that size is declared.
  bool needs_sizes = false;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},                       // matmul
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},              // batch matmul
      {"bij,bkj->bik", {{2, 3, 4}, {2, 5, 4}}},              // B transposed
      {"bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}},     // attention scores
      {"ij->ji", {{3, 4}}},                                  // transpose
      {"ij->", {{3, 4}}},                                    // sum
      {"ij->i", {{3, 4}}},                                   // row sums
      {"ij->ij", {{3, 4}}},                                  // identity
      {"i,i", {{5}, {5}}},                                   // inner product (implicit)
      {"i,j->ij", {{3}, {4}}},                               // outer product
      {"a,b,c->abc", {{2}, {3}, {4}}},                       // outer product of three
      {"i,i,i->", {{5}, {5}, {5}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},            // three operands
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},        // bilinear
      {"ij,jk", {{3, 4}, {4, 5}}},                           // implicit: "ik"
      {"ji", {{3, 4}}},                                      // implicit: "ij", a transpose
      {"ba,ab", {{2, 3}, {3, 2}}},                           // implicit: scalar
      {"Ab,bC->AC", {{2, 3}, {3, 4}}},                       // upper case
      {"bA,Cb", {{2, 3}, {4, 2}}},                           // implicit: "AC" (ASCII order)
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                       // elementwise
      {"ij,ij->", {{3, 4}, {3, 4}}},                         // Frobenius
      {"ij,jk->ki", {{3, 4}, {4, 5}}},
      {"bi,oi->bo", {{4, 3}, {5, 3}}},                       // a linear layer
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},        // ellipsis
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},     // ellipsis broadcasting
      {"...ij,...jk", {{2, 3, 4}, {4, 5}}},                  // implicit with ellipsis
      {"i...->...", {{3, 2, 4}}},
      {"...i->i", {{2, 3, 4}}},                              // ellipsis dims summed
      {"...ij,...ij->i", {{2, 3, 4}, {3, 4}}},               // summed, broadcast
      {"ij,ij->ij", {{1, 4}, {3, 4}}},                       // size-1 broadcasting
      {"ij,jk->ik", {{3, 1}, {4, 5}}, true},                 // a contracted dim of size 1
      {"bij,bjk->bik", {{1, 3, 4}, {2, 4, 5}}},              // a batch dim of size 1
      {"ii->i", {{4, 4}}},                                   // diagonal
      {"ii", {{4, 4}}},                                      // trace (implicit)
      {"bii->bi", {{2, 3, 3}}},                              // batch diagonal
      {"iji->ij", {{3, 4, 3}}},                              // repeated, not adjacent
      {"iii->i", {{3, 3, 3}}},                               // three times
      {"...ii->...i", {{2, 3, 3}}},
      {"ij,jj->i", {{3, 4}, {4, 4}}},                        // a diagonal then a product
      {",i->i", {{}, {4}}},                                  // a scalar operand
      {"i->", {{0}}},                                        // empty
      {"ij,jk->ik", {{3, 0}, {0, 5}}},                       // empty contraction
  };
  return c;
}

bool has_ellipsis(const std::string& eq) { return eq.find("...") != std::string::npos; }

void compare(const Tensor& got, const Tensor& want, double atol, double rtol) {
  REQUIRE(got.shape() == want.shape());
  double worst = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.item_as_double(i), b = want.item_as_double(i);
    const double d = std::fabs(a - b);
    worst = std::max(worst, d);
    if (!(d <= atol + rtol * std::fabs(b))) ++bad;
  }
  CAPTURE(worst);
  CHECK(bad == 0);
}

std::string what(const Graph& g) {
  try {
    Executor ex(g);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> r;
  for (const Node& n : g.nodes) r.push_back(n.op_type);
  return r;
}

}  // namespace

TEST_CASE("einsum: every equation matches the naive reference in float64") {
  unsigned seed = 1;
  for (const Case& c : cases())
    for (Declared d : {Declared::Static, Declared::Symbolic, Declared::None}) {
      if (d == Declared::None && (has_ellipsis(c.equation) || c.needs_sizes)) continue;
      CAPTURE(c.equation);
      const std::string declared = declared_name(d);
      CAPTURE(declared);
      const auto xs = random_inputs(c.shapes, DType::F64, seed++);
      const Tensor got = run_einsum(c.equation, xs, d);
      CHECK(got.dtype() == DType::F64);
      compare(got, reference_einsum(c.equation, xs), 1e-12, 1e-12);
    }
}

TEST_CASE("einsum: float16 inputs match the reference on their values, within float16 rounding") {
  unsigned seed = 100;
  for (const Case& c : cases())
    for (Declared d : {Declared::Static, Declared::None}) {
      if (d == Declared::None && (has_ellipsis(c.equation) || c.needs_sizes)) continue;
      CAPTURE(c.equation);
      const std::string declared = declared_name(d);
      CAPTURE(declared);
      const auto xs = random_inputs(c.shapes, DType::F16, seed++);
      const Tensor got = run_einsum(c.equation, xs, d);
      CHECK(got.dtype() == DType::F16);
      // Intermediates are rounded to float16 (products accumulate in float32): a few ulps.
      compare(got, reference_einsum(c.equation, xs), 1e-2, 1e-2);
    }
}

TEST_CASE("einsum: spaces are ignored and float32 and int64 run too") {
  const auto xs = random_inputs({{3, 4}, {4, 5}}, DType::F32, 7);
  compare(run_einsum(" ij , jk -> ik ", xs, Declared::Static), reference_einsum("ij,jk->ik", xs),
          1e-5, 1e-5);
  const Tensor a = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector<int64_t>({2}, {5, 6});
  const Tensor y = run_einsum("ij,j->i", {a, b}, Declared::None);
  CHECK(y.dtype() == DType::I64);
  CHECK(y.to_int_vector() == std::vector<int64_t>{17, 39});
}

TEST_CASE("einsum: the expansion is MatMul between transposes and reshapes, writing the output") {
  {
    Graph g = einsum_graph("bi,oi->bo", {{4, 3}, {5, 3}}, DType::F32, Declared::Static);
    std::map<std::string, CompositeOrigin> parts;
    lower_composites(g, &parts);
    CHECK(op_types(g) == std::vector<std::string>{"Transpose", "MatMul"});
    CHECK(g.nodes[0].name == "es/transpose1");
    CHECK(g.nodes[0].inputs[0] == "x1");
    CHECK(g.nodes.back().outputs == std::vector<std::string>{"y"});
    CHECK(g.value_info.at(g.nodes[0].outputs[0]).dtype == DType::F32);
    CHECK(g.value_info.at(g.nodes[0].outputs[0]).shape_string() == "[3, 5]");
    CHECK(parts.at("es/matmul1").op_type == "Einsum");
  }
  {
    // Merged dims: static int64 constants when the shapes are known ...
    Graph g = einsum_graph("bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}, DType::F32,
                           Declared::Static);
    lower_composites(g);
    CHECK(op_types(g) == std::vector<std::string>{"Transpose", "MatMul"});
  }
  {
    Graph g = einsum_graph("abc,cd->abd", {{2, 3, 4}, {4, 5}}, DType::F32, Declared::Static);
    lower_composites(g);
    CHECK(op_types(g) == std::vector<std::string>{"Reshape", "MatMul", "Reshape"});
    const Node& merge = g.nodes[0];
    REQUIRE(g.initializers.count(merge.inputs[1]));
    CHECK(g.initializers.at(merge.inputs[1]).to_int_vector() == std::vector<int64_t>{6, 4});
  }
  {
    // ... computed from Shape at run time when a merged dim is symbolic.
    Graph g = einsum_graph("abc,cd->abd", {{2, 3, 4}, {4, 5}}, DType::F32, Declared::Symbolic);
    lower_composites(g);
    const auto ops = op_types(g);
    CHECK(std::count(ops.begin(), ops.end(), "Shape") >= 1);
    CHECK(std::count(ops.begin(), ops.end(), "Concat") >= 1);
    CHECK(std::count(ops.begin(), ops.end(), "MatMul") == 1);
    CHECK(g.value_info.at(g.nodes[std::find(ops.begin(), ops.end(), "MatMul") - ops.begin()]
                              .outputs[0])
              .shape_string() == "[?, 5]");
  }
  {
    Graph g = einsum_graph("ij->ij", {{3, 4}}, DType::F32, Declared::Static);
    lower_composites(g);
    CHECK(op_types(g) == std::vector<std::string>{"Identity"});
  }
  {
    Graph g = einsum_graph("ii->i", {{4, 4}}, DType::F32, Declared::Static);
    lower_composites(g);
    CHECK(op_types(g) == std::vector<std::string>{"Reshape", "Slice"});
  }
  {
    Graph g = einsum_graph("i,j->ij", {{3}, {4}}, DType::F32, Declared::Static);
    lower_composites(g);
    CHECK(op_types(g) == std::vector<std::string>{"Unsqueeze", "Unsqueeze", "Mul"});
  }
}

TEST_CASE("einsum: errors name the node and the equation") {
  auto err = [](const std::string& eq, std::vector<Shape> shapes,
                Declared d = Declared::Static) {
    return what(einsum_graph(eq, shapes, DType::F32, d));
  };
  const std::string head = "node 'es' (Einsum, opset 12): equation '";
  CHECK(err("ij,jk->ik", {{3, 4}, {5, 6}}) == head + "ij,jk->ik': 'j' has size 4 in input 0 and 5 in input 1");
  CHECK(err("ij,jk->ik", {{3, 4}}) == head + "ij,jk->ik': 2 terms for 1 input");
  CHECK(err("ijk->i", {{3, 4}}) == head + "ijk->i': term 0 'ijk' names 3 dims but input 0 has rank 2");
  CHECK(err("...ijk->i", {{3, 4}}) ==
        head + "...ijk->i': term 0 '...ijk' names 3 dims but input 0 has rank 2");
  CHECK(err("ij->k", {{3, 4}}) == head + "ij->k': the output's 'k' is in no input term");
  CHECK(err("ij->ii", {{3, 4}}) == head + "ij->ii': the output repeats 'i'");
  CHECK(err("i1->i", {{3, 4}}) ==
        head + "i1->i': term 0 'i1' has the character '1' (terms hold letters a-z, A-Z and '...')");
  CHECK(err("i..j->i", {{3, 4}}) == head + "i..j->i': term 0 'i..j' has a '.' that is not part of '...'");
  CHECK(err("...i...->i", {{3, 4}}) == head + "...i...->i': term 0 '...i...' has more than one '...'");
  CHECK(err("ij->i->j", {{3, 4}}) == head + "ij->i->j': more than one '->'");
  CHECK(err("ii->i", {{3, 4}}) ==
        head + "ii->i': 'i' is repeated in term 0 with sizes 3 and 4 (input 0 is [3, 4])");
  {
    Graph g = einsum_graph("ij->i", {{3, 4}}, DType::F32, Declared::Static);
    g.nodes[0].attrs.clear();
    CHECK(what(g) == "node 'es' (Einsum, opset 12): missing the 'equation' attribute");
  }
  {
    Graph g = einsum_graph("ij,jk->ik", {{3, 4}, {4, 5}}, DType::F32, Declared::Static);
    g.inputs[1].dtype = DType::F64;
    CHECK(what(g) == head + "ij,jk->ik': inputs of different types (float32 and float64)");
  }
  // Unsupported, not wrong: "..." needs the operand's rank.
  Graph g = einsum_graph("...ij->...ji", {{2, 3, 4}}, DType::F32, Declared::None);
  CHECK_THROWS_AS(lower_composites(g), Unsupported);
  try {
    lower_composites(g);
  } catch (const Unsupported& u) {
    CHECK(u.key() == "Einsum(ellipsis with unknown rank)");
    CHECK(std::string(u.what()).find("node 'es' (Einsum, opset 12): equation '...ij->...ji'") == 0);
  }
  // A size mismatch only known at run time fails in the kernel that meets it.
  Graph h = einsum_graph("ij,jk->ik", {{3, 4}, {5, 6}}, DType::F32, Declared::None);
  Executor ex(h);
  CHECK_THROWS_AS(ex.run({{"x0", Tensor::zeros(DType::F32, {3, 4})},
                          {"x1", Tensor::zeros(DType::F32, {5, 6})}}),
                  Error);
}
