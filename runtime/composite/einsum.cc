// Einsum (opset 12) as a composite op (runtime/composite.h): Transpose, Reshape, MatMul, Mul,
// Unsqueeze, ReduceSum and Slice, each with CPU and CUDA kernels and a gradient, so Einsum trains
// and runs in mixed precision (its contractions on tensor cores) without a kernel of its own.
//
// Equation: "term,term,...->out" (explicit) or "term,term,..." (implicit). A term is letters
// [a-zA-Z] with at most one "..." standing for the operand's leading/middle dims not named by a
// letter. Implicit output: the ellipsis dims, then the letters that occur exactly once in the whole
// equation, in ASCII order (upper case first), as numpy. Spaces are ignored.
//
//   Y[out] = Σ_{letters not in out} Π_k X_k[term_k]
//
// Labels: each letter is a label; the ellipsis dims are labels too, right-aligned across operands
// (numpy broadcasting: an operand with fewer ellipsis dims has them at the right), so all E
// ellipsis dims of the equation are labels "…0".."…E-1". An explicit output without "..." sums
// the ellipsis dims (as torch.einsum).
//
// Algorithm (each step emits ordinary ops):
//  1. Each operand alone:
//     a. Diagonals. A label that occurs c ≥ 2 times in one term ("ii", "bii") is moved to the last
//        c axes (Transpose), those are flattened to n^c (Reshape), and the diagonal is the strided
//        Slice of the flat axis with step s = 1 + n + … + n^(c-1) = (n^c − 1)/(n − 1): element
//        j·s is index (j, j, …, j), and ceil(n^c / s) = n elements are taken.
//     b. Labels in no other operand and not in the output are summed (ReduceSum, keepdims 0).
//  2. Operands are contracted pairwise left to right: R ← R ⊗ X_k. With L = the labels of the
//     output and of X_{k+1}.. (still needed):
//       batch  = in R and X_k and in L               (kept, MatMul broadcasts them)
//       K      = in R and X_k, not in L               (contracted)
//       M / N  = in R only / in X_k only (both in L)
//     Labels of R or X_k in neither the other nor L are summed first. A contracted label of size
//     1 on one side (statically) and not on the other is broadcasting: Σ_l a·b[l] = a·Σ_l b[l],
//     so it is summed on both sides first. An ellipsis label whose size is not known statically
//     on both sides may be broadcasting, so it is kept as a batch label and summed afterwards.
//     With K empty:  Y = Unsqueeze(Rᵀ[batch, M]) · Unsqueeze(Xᵀ[batch, N])   (Mul, broadcasting)
//     else:          Y = Reshape(Rᵀ[batch, M, K] → [batch, ΠM, ΠK])
//                      @ Reshape(Xᵀ[batch, K, N] → [batch, ΠK, ΠN])          (MatMul)
//                    then Reshape [batch, ΠM, ΠN] → [batch, M…, N…].
//     The result's labels are batch, M, N in that order.
//  3. Labels still not in the output are summed, and a Transpose gives the output's order. The
//     last op writes the composite's output (Identity when nothing was needed, "ij->ij").
//
// Shapes: a Reshape target is an int64 constant when the dims it needs are known statically
// (value_info); otherwise the unknown parts come from Shape(x, start, end) (and ReduceProd for a
// merged group), concatenated at run time (host-side int64 arithmetic on the CUDA executor).
// Reshapes use allowzero = 1 (so an empty dimension stays 0).
//
// Errors (Expansion::fail, naming the node and the equation): a missing or malformed equation,
// a term count that differs from the input count, an operand rank that differs from its term,
// an output letter that is repeated or in no input, letter sizes that disagree (neither is 1, or
// a repeated letter of one operand), inputs of different types. Unsupported: "..." in a term
// whose operand rank is not known statically.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "runtime/composite/expanders.h"
#include "runtime/error.h"

namespace oat::composite {

namespace {

constexpr int kLetters = 52;  // A-Z (0-25), a-z (26-51); ellipsis dim j is label 52 + j

int letter_label(char c) { return std::isupper(static_cast<unsigned char>(c)) ? c - 'A' : 26 + c - 'a'; }

std::string label_name(int l) {
  if (l < 26) return std::string(1, static_cast<char>('A' + l));
  if (l < kLetters) return std::string(1, static_cast<char>('a' + l - 26));
  return cat("...", l - kLetters);
}

// One term of the equation: its letters (label ids) and where "..." stands (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;  // index into letters before which "..." stands
};

// A tensor during the expansion: its value name, one label and one (static) Dim per axis.
struct Operand {
  std::string value;
  std::vector<int> labels;
  std::vector<Dim> dims;
  int rank() const { return static_cast<int>(labels.size()); }
  int axis_of(int label) const {
    auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
  }
  bool has(int label) const { return axis_of(label) >= 0; }
};

Dim fixed_dim(int64_t v) { return Dim{v, ""}; }
bool is_one(const Dim& d) { return d.fixed() && d.value == 1; }

// The size of a broadcast of two dims, as far as it is known: a fixed 1 yields to the other; a
// fixed size > 1 wins (the other is the same or 1); the same symbol stays; else unknown.
Dim broadcast_dim(const Dim& a, const Dim& b) {
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  if (a.fixed()) return a;
  if (b.fixed()) return b;
  if (!a.param.empty() && a.param == b.param) return a;
  return Dim{};
}

// The product of dims when all are fixed; a single dim as it is; else unknown.
Dim product_dim(const std::vector<Dim>& dims) {
  if (dims.size() == 1) return dims[0];
  int64_t p = 1;
  for (const Dim& d : dims) {
    if (!d.fixed()) return Dim{};
    p *= d.value;
  }
  return fixed_dim(p);
}

bool all_fixed(const std::vector<Dim>& dims, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, dims.size());
  for (size_t i = from; i < to; ++i)
    if (!dims[i].fixed()) return false;
  return true;
}

class EinsumExpander {
 public:
  explicit EinsumExpander(Expansion& e) : e_(e) {}

  void run() {
    parse();
    check_sizes();
    std::vector<Operand> ops;
    for (size_t k = 0; k < terms_.size(); ++k) ops.push_back(prepare(k));
    Operand cur = std::move(ops[0]);
    for (size_t k = 1; k < ops.size(); ++k) cur = contract(std::move(cur), std::move(ops[k]), k);
    // 3. Sum what the output does not keep, then put the output's order.
    std::vector<int> drop;
    for (int l : cur.labels)
      if (std::find(out_.begin(), out_.end(), l) == out_.end()) drop.push_back(l);
    cur = reduce(std::move(cur), drop, "reduce_out");
    std::vector<int> perm;
    for (int l : out_) perm.push_back(cur.axis_of(l));
    cur = transpose(std::move(cur), perm, "transpose_out");
    materialize(cur.value);
  }

 private:
  // ---- the equation -----------------------------------------------------------------------------

  [[noreturn]] void fail(const std::string& what) const {
    e_.fail(cat("equation '", equation_, "': ", what));
  }

  Term parse_term(const std::string& s, const std::string& which) const {
    Term t;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (std::isalpha(static_cast<unsigned char>(c))) {
        t.letters.push_back(letter_label(c));
      } else if (c == '.') {
        if (s.compare(i, 3, "...") != 0) fail(cat(which, " '", s, "' has a '.' that is not part of '...'"));
        if (t.ellipsis_at >= 0) fail(cat(which, " '", s, "' has more than one '...'"));
        t.ellipsis_at = static_cast<int>(t.letters.size());
        i += 2;
      } else {
        fail(cat(which, " '", s, "' has the character '", std::string(1, c),
                 "' (terms hold letters a-z, A-Z and '...')"));
      }
    }
    return t;
  }

  void parse() {
    const Attribute* a = e_.node().attr("equation");
    if (!a) e_.fail("missing the 'equation' attribute");
    if (a->kind != Attribute::Kind::String) e_.fail("the 'equation' attribute is not a string");
    equation_ = a->s;
    std::string eq;
    for (char c : equation_)
      if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
    const size_t arrow = eq.find("->");
    const bool explicit_out = arrow != std::string::npos;
    if (explicit_out && eq.find("->", arrow + 2) != std::string::npos) fail("more than one '->'");
    const std::string lhs = explicit_out ? eq.substr(0, arrow) : eq;
    if (lhs.find('-') != std::string::npos || lhs.find('>') != std::string::npos)
      fail("a '-' or '>' outside '->'");
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
      const size_t comma = lhs.find(',', start);
      parts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    size_t n_inputs = 0;
    for (size_t i = 0; i < e_.node().inputs.size(); ++i)
      if (!e_.input(i).empty()) n_inputs = i + 1;
    if (n_inputs == 0) e_.fail("Einsum needs at least one input");
    for (size_t i = 0; i < n_inputs; ++i)
      if (e_.input(i).empty()) fail(cat("input ", i, " is omitted"));
    if (parts.size() != n_inputs)
      fail(cat(parts.size(), " term", parts.size() == 1 ? "" : "s", " for ", n_inputs, " input",
               n_inputs == 1 ? "" : "s"));
    if (e_.output(0).empty()) e_.fail("the output is omitted");

    // Types: every known input type must agree.
    for (size_t k = 0; k < n_inputs; ++k) {
      const DType t = e_.dtype(e_.input(k));
      if (t == DType::Undefined) continue;
      if (dtype_ != DType::Undefined && t != dtype_)
        fail(cat("inputs of different types (", dtype_name(dtype_), " and ", dtype_name(t), ")"));
      dtype_ = t;
    }

    // Terms, ranks and the ellipsis dims (right-aligned over E).
    std::vector<int> ell_rank;
    for (size_t k = 0; k < n_inputs; ++k) {
      Term t = parse_term(parts[k], cat("term ", k));
      const ValueInfo* vi = e_.info(e_.input(k));
      const Tensor* c = e_.constant(e_.input(k));
      std::optional<std::vector<Dim>> shape;
      if (c) {
        shape.emplace();
        for (int64_t d : c->shape()) shape->push_back(fixed_dim(d));
      } else if (vi && vi->shape) {
        shape = vi->shape;
      }
      const int n_letters = static_cast<int>(t.letters.size());
      int ell = 0;
      if (t.ellipsis_at >= 0) {
        if (!shape)
          e_.unsupported(cat("equation '", equation_, "': term ", k, " '", parts[k],
                             "' has '...' but the rank of input ", k, " ('", e_.input(k),
                             "') is not known statically"),
                         "ellipsis with unknown rank");
        ell = static_cast<int>(shape->size()) - n_letters;
        if (ell < 0)
          fail(cat("term ", k, " '", parts[k], "' names ", n_letters, " dims but input ", k,
                   " has rank ", shape->size()));
      } else if (shape && static_cast<int>(shape->size()) != n_letters) {
        fail(cat("term ", k, " '", parts[k], "' names ", n_letters, " dims but input ", k,
                 " has rank ", shape->size()));
      }
      ell_rank.push_back(ell);
      n_ellipsis_ = std::max(n_ellipsis_, ell);
      terms_.push_back(t);
      shapes_.push_back(shape);
    }
    // Each operand's labels, axis by axis.
    for (size_t k = 0; k < n_inputs; ++k) {
      const Term& t = terms_[k];
      std::vector<int> labels;
      for (int i = 0; i <= static_cast<int>(t.letters.size()); ++i) {
        if (i == t.ellipsis_at)
          for (int j = 0; j < ell_rank[k]; ++j) labels.push_back(kLetters + n_ellipsis_ - ell_rank[k] + j);
        if (i < static_cast<int>(t.letters.size())) labels.push_back(t.letters[i]);
      }
      labels_.push_back(labels);
      for (int l : labels) ++count_[l];
    }
    // The output.
    if (explicit_out) {
      const Term o = parse_term(eq.substr(arrow + 2), "the output");
      for (int i = 0; i <= static_cast<int>(o.letters.size()); ++i) {
        if (i == o.ellipsis_at)
          for (int j = 0; j < n_ellipsis_; ++j) out_.push_back(kLetters + j);
        if (i == static_cast<int>(o.letters.size())) break;
        const int l = o.letters[i];
        if (std::find(out_.begin(), out_.end(), l) != out_.end())
          fail(cat("the output repeats '", label_name(l), "'"));
        if (!count_.count(l)) fail(cat("the output's '", label_name(l), "' is in no input term"));
        out_.push_back(l);
      }
    } else {
      for (int j = 0; j < n_ellipsis_; ++j) out_.push_back(kLetters + j);
      for (const auto& [l, n] : count_)  // std::map: ascending label = ASCII order
        if (l < kLetters && n == 1) out_.push_back(l);
    }
  }

  // A letter's sizes must agree where known: equal, or 1 (broadcast) across operands; equal
  // within one operand (a diagonal).
  void check_sizes() const {
    std::map<int, std::pair<int64_t, size_t>> seen;  // label -> (size > 1, operand)
    for (size_t k = 0; k < labels_.size(); ++k) {
      if (!shapes_[k]) continue;
      std::map<int, int64_t> own;
      for (size_t a = 0; a < labels_[k].size(); ++a) {
        const Dim& d = (*shapes_[k])[a];
        if (!d.fixed()) continue;
        const int l = labels_[k][a];
        auto [it, fresh] = own.emplace(l, d.value);
        if (!fresh && it->second != d.value)
          fail(cat("'", label_name(l), "' is repeated in term ", k, " with sizes ", it->second,
                   " and ", d.value, " (input ", k, " is ", shape_str(fixed_sizes(k)), ")"));
        if (d.value == 1) continue;
        auto [jt, first] = seen.emplace(l, std::make_pair(d.value, k));
        if (!first && jt->second.first != d.value)
          fail(cat("'", label_name(l), "' has size ", jt->second.first, " in input ",
                   jt->second.second, " and ", d.value, " in input ", k));
      }
    }
  }

  // Input k's shape with unknown dims as -1 (for messages).
  std::vector<int64_t> fixed_sizes(size_t k) const {
    std::vector<int64_t> r;
    for (const Dim& d : *shapes_[k]) r.push_back(d.value);
    return r;
  }

  bool needed_after(int label, size_t k) const {
    if (std::find(out_.begin(), out_.end(), label) != out_.end()) return true;
    for (size_t j = k + 1; j < labels_.size(); ++j)
      if (std::find(labels_[j].begin(), labels_[j].end(), label) != labels_[j].end()) return true;
    return false;
  }

  // ---- step 1: one operand alone ---------------------------------------------------------------

  Operand prepare(size_t k) {
    Operand x;
    x.value = e_.input(k);
    x.labels = labels_[k];
    x.dims = shapes_[k] ? *shapes_[k] : std::vector<Dim>(x.labels.size());
    // a. Diagonals, one repeated label at a time.
    for (;;) {
      int rep = -1;
      for (int l : x.labels)
        if (std::count(x.labels.begin(), x.labels.end(), l) > 1) {
          rep = l;
          break;
        }
      if (rep < 0) break;
      x = diagonal(std::move(x), rep, k);
    }
    // b. Labels in no other operand and not in the output.
    std::vector<int> drop;
    for (int l : x.labels) {
      bool elsewhere = std::find(out_.begin(), out_.end(), l) != out_.end();
      for (size_t j = 0; j < labels_.size() && !elsewhere; ++j)
        if (j != k && std::find(labels_[j].begin(), labels_[j].end(), l) != labels_[j].end())
          elsewhere = true;
      if (!elsewhere) drop.push_back(l);
    }
    return reduce(std::move(x), drop, cat("reduce", k));
  }

  // X with label l at c axes → X with l once, at the last axis, holding the diagonal.
  Operand diagonal(Operand x, int l, size_t k) {
    std::vector<int> perm, at;
    for (int a = 0; a < x.rank(); ++a) (x.labels[a] == l ? at : perm).push_back(a);
    const int c = static_cast<int>(at.size());
    perm.insert(perm.end(), at.begin(), at.end());
    x = transpose(std::move(x), perm, cat("diag_transpose", k));
    const int rest = x.rank() - c;
    Dim n;
    for (int a = rest; a < x.rank(); ++a)
      if (x.dims[a].fixed()) n = x.dims[a];
    // Flat size n^c and the step s = Σ_{j<c} n^j, static or computed from n at run time.
    std::vector<Piece> target = dims_pieces(x, 0, rest, cat("diag_dims", k));
    std::string step;
    Dim flat;
    if (n.fixed()) {
      int64_t p = 1, s = 0;
      for (int j = 0; j < c; ++j) {
        s += p;
        p *= n.value;
      }
      target.push_back(Piece{p, ""});
      step = e_.ints({s}, cat("diag_step", k));
      flat = fixed_dim(p);
    } else {
      const std::string nv = shape_slice(x, rest, rest + 1, cat("diag_n", k));
      std::string p = nv, s = e_.ints({1}, cat("diag_one", k));
      for (int j = 1; j < c; ++j) {
        s = emit("Add", {s, p}, cat("diag_step", k), DType::I64, {{fixed_dim(1)}});
        p = emit("Mul", {p, nv}, cat("diag_flat", k), DType::I64, {{fixed_dim(1)}});
      }
      target.push_back(Piece{0, p});
      step = s;
    }
    Operand flat_x;
    flat_x.labels.assign(x.labels.begin(), x.labels.begin() + rest);
    flat_x.dims.assign(x.dims.begin(), x.dims.begin() + rest);
    flat_x.labels.push_back(l);
    flat_x.dims.push_back(flat);
    flat_x.value = emit("Reshape", {x.value, shape_value(target, cat("diag_shape", k))},
                        cat("diag_flatten", k), dtype_, flat_x.dims,
                        {{"allowzero", int_attribute(1)}});
    Operand y = flat_x;
    y.dims.back() = n;
    y.value = emit("Slice",
                   {flat_x.value, e_.ints({0}, cat("diag_start", k)),
                    e_.ints({std::numeric_limits<int64_t>::max()}, cat("diag_end", k)),
                    e_.ints({-1}, cat("diag_axis", k)), step},
                   cat("diagonal", k), dtype_, y.dims);
    return y;
  }

  // ---- step 2: R ⊗ X_k ---------------------------------------------------------------------

  Operand contract(Operand a, Operand b, size_t k) {
    // Sum first: labels on one side only and not needed later; contracted labels that
    // broadcast (static 1 on one side only).
    std::vector<int> drop_a, drop_b;
    for (int l : a.labels) {
      if (needed_after(l, k)) continue;
      if (!b.has(l)) {
        drop_a.push_back(l);
      } else {
        const Dim &da = a.dims[a.axis_of(l)], &db = b.dims[b.axis_of(l)];
        if (is_one(da) != is_one(db)) {
          drop_a.push_back(l);
          drop_b.push_back(l);
        }
      }
    }
    for (int l : b.labels)
      if (!a.has(l) && !needed_after(l, k)) drop_b.push_back(l);
    a = reduce(std::move(a), drop_a, cat("reduce_left", k));
    b = reduce(std::move(b), drop_b, cat("reduce", k));

    std::vector<int> batch, m, kk, n;
    for (int l : a.labels) {
      if (!b.has(l)) {
        m.push_back(l);
        continue;
      }
      const Dim &da = a.dims[a.axis_of(l)], &db = b.dims[b.axis_of(l)];
      const bool may_broadcast = l >= kLetters && !(da.fixed() && db.fixed());
      (needed_after(l, k) || may_broadcast ? batch : kk).push_back(l);
    }
    for (int l : b.labels)
      if (!a.has(l)) n.push_back(l);

    auto perm_of = [](const Operand& x, std::initializer_list<const std::vector<int>*> groups) {
      std::vector<int> p;
      for (const auto* g : groups)
        for (int l : *g) p.push_back(x.axis_of(l));
      return p;
    };
    const int nb = static_cast<int>(batch.size()), nm = static_cast<int>(m.size()),
              nk = static_cast<int>(kk.size()), nn = static_cast<int>(n.size());
    const std::vector<int> pa = perm_of(a, {&batch, &m, &kk}), pb = perm_of(b, {&batch, &kk, &n});
    Operand at = transpose(std::move(a), pa, cat("transpose_left", k));
    Operand bt = transpose(std::move(b), pb, cat("transpose", k));

    Operand y;
    y.labels = batch;
    y.labels.insert(y.labels.end(), m.begin(), m.end());
    y.labels.insert(y.labels.end(), n.begin(), n.end());
    for (int i = 0; i < nb; ++i) y.dims.push_back(broadcast_dim(at.dims[i], bt.dims[i]));
    y.dims.insert(y.dims.end(), at.dims.begin() + nb, at.dims.begin() + nb + nm);
    y.dims.insert(y.dims.end(), bt.dims.begin() + nb + nk, bt.dims.end());

    if (nk == 0) {
      // Y[batch, M, N] = A[batch, M, 1…] · B[batch, 1…, N]
      std::string av = at.value, bv = bt.value;
      if (nn > 0) {
        std::vector<int64_t> axes(nn);
        std::iota(axes.begin(), axes.end(), nb + nm);
        std::vector<Dim> d = at.dims;
        d.insert(d.end(), nn, fixed_dim(1));
        av = emit("Unsqueeze", {av, e_.ints(axes, cat("unsqueeze_left_axes", k))},
                  cat("unsqueeze_left", k), dtype_, d);
      }
      if (nm > 0) {
        std::vector<int64_t> axes(nm);
        std::iota(axes.begin(), axes.end(), nb);
        std::vector<Dim> d = bt.dims;
        d.insert(d.begin() + nb, nm, fixed_dim(1));
        bv = emit("Unsqueeze", {bv, e_.ints(axes, cat("unsqueeze_axes", k))}, cat("unsqueeze", k),
                  dtype_, d);
      }
      y.value = emit("Mul", {av, bv}, cat("mul", k), dtype_, y.dims);
      return y;
    }

    // Y[batch, ΠM, ΠN] = A[batch, ΠM, ΠK] @ B[batch, ΠK, ΠN]
    auto merged = [&](const Operand& x, int g1, int g2, const std::string& tag) {
      // x's axes: [batch (nb), group 1 (g1 axes), group 2 (g2 axes)] → [batch, Πg1, Πg2]
      std::vector<Dim> d(x.dims.begin(), x.dims.begin() + nb);
      d.push_back(product_dim({x.dims.begin() + nb, x.dims.begin() + nb + g1}));
      d.push_back(product_dim({x.dims.begin() + nb + g1, x.dims.end()}));
      if (g1 == 1 && g2 == 1) return std::make_pair(x.value, d);
      std::vector<Piece> target = dims_pieces(x, 0, nb, cat(tag, "_batch"));
      target.push_back(product_piece(x, nb, nb + g1, cat(tag, "_m")));
      target.push_back(product_piece(x, nb + g1, nb + g1 + g2, cat(tag, "_k")));
      const std::string v = emit("Reshape", {x.value, shape_value(target, cat(tag, "_shape"))},
                                 tag, dtype_, d, {{"allowzero", int_attribute(1)}});
      return std::make_pair(v, d);
    };
    const auto [av, ad] = merged(at, nm, nk, cat("merge_left", k));
    const auto [bv, bd] = merged(bt, nk, nn, cat("merge", k));
    std::vector<Dim> pd = y.dims;
    pd.resize(nb);
    pd.push_back(ad[nb]);
    pd.push_back(bd[nb + 1]);
    const std::string p = emit("MatMul", {av, bv}, cat("matmul", k), dtype_, pd);
    if (nm == 1 && nn == 1) {
      y.value = p;
      return y;
    }
    // [batch, ΠM, ΠN] → [batch, M…, N…]: the batch dims from the product, M from A, N from B.
    std::vector<Piece> target;
    if (all_fixed(y.dims, 0, nb)) {
      for (int i = 0; i < nb; ++i) target.push_back(Piece{y.dims[i].value, ""});
    } else {
      target.push_back(Piece{0, emit("Shape", {p}, cat("batch_dims", k), DType::I64,
                                     {{fixed_dim(nb)}},
                                     {{"start", int_attribute(0)},
                                      {"end", int_attribute(nb)}})});
    }
    for (Piece& q : dims_pieces(at, nb, nb + nm, cat("m_dims", k))) target.push_back(std::move(q));
    for (Piece& q : dims_pieces(bt, nb + nk, nb + nk + nn, cat("n_dims", k)))
      target.push_back(std::move(q));
    y.value = emit("Reshape", {p, shape_value(target, cat("split_shape", k))}, cat("split", k),
                   dtype_, y.dims, {{"allowzero", int_attribute(1)}});
    return y;
  }

  // ---- helpers: ops on Operands ----------------------------------------------------------------

  Operand transpose(Operand x, const std::vector<int>& perm, const std::string& tag) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int>(i);
    if (identity) return x;
    Operand y;
    for (int p : perm) {
      y.labels.push_back(x.labels[p]);
      y.dims.push_back(x.dims[p]);
    }
    y.value = emit("Transpose", {x.value}, tag, dtype_, y.dims,
                   {{"perm", ints_attribute({perm.begin(), perm.end()})}});
    return y;
  }

  // Σ over the axes of `labels` (ReduceSum, keepdims 0); x itself when there are none.
  Operand reduce(Operand x, const std::vector<int>& labels, const std::string& tag) {
    if (labels.empty()) return x;
    std::vector<int64_t> axes;
    Operand y;
    for (int a = 0; a < x.rank(); ++a) {
      if (std::find(labels.begin(), labels.end(), x.labels[a]) != labels.end()) {
        axes.push_back(a);
      } else {
        y.labels.push_back(x.labels[a]);
        y.dims.push_back(x.dims[a]);
      }
    }
    y.value = emit("ReduceSum", {x.value, e_.ints(axes, cat(tag, "_axes"))}, tag, dtype_, y.dims,
                   {{"keepdims", int_attribute(0)}});
    return y;
  }

  // ---- helpers: shapes -------------------------------------------------------------------------

  // Part of a Reshape target: a static size, or (value non-empty) a 1-D int64 value.
  struct Piece {
    int64_t size = 0;
    std::string value;
  };

  // Shape(x)[from:to] as an int64 value.
  std::string shape_slice(const Operand& x, int from, int to, const std::string& tag) {
    return emit("Shape", {x.value}, tag, DType::I64, {{fixed_dim(to - from)}},
                {{"start", int_attribute(from)}, {"end", int_attribute(to)}});
  }

  // x's dims [from, to): static sizes, or one Shape slice when some are not known.
  std::vector<Piece> dims_pieces(const Operand& x, int from, int to, const std::string& tag) {
    std::vector<Piece> r;
    if (from == to) return r;
    if (all_fixed(x.dims, from, to)) {
      for (int i = from; i < to; ++i) r.push_back(Piece{x.dims[i].value, ""});
    } else {
      r.push_back(Piece{0, shape_slice(x, from, to, tag)});
    }
    return r;
  }

  // Π x's dims [from, to) (1 when empty): static, or ReduceProd(Shape slice) at run time.
  Piece product_piece(const Operand& x, int from, int to, const std::string& tag) {
    if (all_fixed(x.dims, from, to)) {
      int64_t p = 1;
      for (int i = from; i < to; ++i) p *= x.dims[i].value;
      return Piece{p, ""};
    }
    std::string s = shape_slice(x, from, to, cat(tag, "_dims"));
    if (to - from > 1)
      s = emit("ReduceProd", {s}, cat(tag, "_prod"), DType::I64, {{fixed_dim(1)}},
               {{"keepdims", int_attribute(1)}});
    return Piece{0, s};
  }

  // The pieces as one 1-D int64 shape: a constant when all are static, else a Concat.
  std::string shape_value(const std::vector<Piece>& pieces, const std::string& tag) {
    std::vector<std::string> parts;
    std::vector<int64_t> run;
    for (const Piece& p : pieces) {
      if (p.value.empty()) {
        run.push_back(p.size);
        continue;
      }
      if (!run.empty()) parts.push_back(e_.ints(run, cat(tag, "_part")));
      run.clear();
      parts.push_back(p.value);
    }
    if (parts.empty()) return e_.ints(run, tag);
    if (!run.empty()) parts.push_back(e_.ints(run, cat(tag, "_part")));
    if (parts.size() == 1) return parts[0];
    return emit("Concat", parts, tag, DType::I64, std::nullopt, {{"axis", int_attribute(0)}});
  }

  // ---- deferred emission -----------------------------------------------------------------------
  // Nodes are recorded with placeholder output names and written at the end, so the node that
  // makes the final value writes the composite's output itself.

  struct Pending {
    std::string op, tag;
    std::vector<std::string> inputs;
    std::map<std::string, Attribute> attrs;
    DType dtype;
    std::optional<std::vector<Dim>> shape;
  };

  static std::string placeholder(size_t i) { return cat('\x01', i); }

  std::string emit(const std::string& op, const std::vector<std::string>& inputs,
                   const std::string& tag, DType dtype, std::optional<std::vector<Dim>> shape,
                   std::map<std::string, Attribute> attrs = {}) {
    pending_.push_back(Pending{op, tag, inputs, std::move(attrs), dtype, std::move(shape)});
    return placeholder(pending_.size() - 1);
  }

  void materialize(const std::string& result) {
    std::map<std::string, std::string> names;
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      for (std::string& in : p.inputs)
        if (names.count(in)) in = names.at(in);
      const std::string ph = placeholder(i);
      if (ph == result) {
        e_.add_to(p.op, p.inputs, {e_.output(0)}, p.tag, std::move(p.attrs));
        names[ph] = e_.output(0);
        continue;
      }
      const std::string v = e_.add1(p.op, p.inputs, p.tag, std::move(p.attrs));
      if (p.dtype != DType::Undefined) e_.set_info(v, p.dtype, p.shape);
      names[ph] = v;
    }
    if (result.empty() || result[0] != '\x01')  // no op was needed ("ij->ij")
      e_.add_to("Identity", {result}, {e_.output(0)}, "identity");
  }

  Expansion& e_;
  std::string equation_;
  DType dtype_ = DType::Undefined;
  std::vector<Term> terms_;
  std::vector<std::optional<std::vector<Dim>>> shapes_;  // per input, when its rank is known
  std::vector<std::vector<int>> labels_;                 // per input, one label per axis
  std::map<int, int> count_;                             // label -> occurrences in all terms
  std::vector<int> out_;                                 // the output's labels
  int n_ellipsis_ = 0;
  std::vector<Pending> pending_;
};

}  // namespace

void expand_einsum(Expansion& e) { EinsumExpander(e).run(); }

}  // namespace oat::composite
