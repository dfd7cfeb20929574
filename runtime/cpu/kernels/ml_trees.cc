// ai.onnx.ml tree ensembles (opsets 1 and 3): decision trees, random forests and gradient boosting
// (scikit-learn, XGBoost, LightGBM through skl2onnx / onnxmltools). X [N, F] or [F] (float,
// double, int64, int32); thresholds are compared in double for double X, else in float (as ONNX
// Runtime does), so a float model decides exactly as it was trained.
//
// The trees: node (treeid, nodeid) has a mode, a feature f and a threshold v; a branch goes to
// its true node when
//   BRANCH_LEQ x_f <= v   BRANCH_LT x_f < v   BRANCH_GTE x_f >= v   BRANCH_GT x_f > v
//   BRANCH_EQ  x_f == v   BRANCH_NEQ x_f != v
// or when x_f is NaN and nodes_missing_value_tracks_true is 1; else to its false node. A LEAF
// ends the walk, adding its weights (target_* / class_*: (treeid, nodeid, id, weight) lists) to
// the row's score of each id. The root of a tree is its one node that no node of it points to;
// a tree must be acyclic (checked once, when the kernel is made).
//
// TreeEnsembleRegressor -> Y float [N, n_targets]: per target t, over the trees' leaf weights w,
//   SUM  y_t = Σ w + b_t       AVERAGE  y_t = Σ w / n_trees + b_t
//   MIN  y_t = min w + b_t     MAX      y_t = max w + b_t
//   b = base_values (when it has n_targets values), then post_transform (ml_common.h). A row
//   whose leaves give target t no weight has y_t = b_t with one target, 0 with several (what
//   ONNX Runtime 1.32 computes: scripts/compare_ml_ort.py).
// TreeEnsembleClassifier -> (Y labels [N], Z float [N, K]), K = len(classlabels): s_k = Σ w of
//   class k over the trees. K > 2: s_k += base_values[k]; label = the class of the largest
//   s_k among those reached (the first); Z = post_transform(s).
//   K = 2 follows ONNX Runtime's binary rules exactly (tree_ensemble_aggregator.h), since every
//   exporter relies on them: with weights for one class only ("binary case"), the label is
//   classlabels[1] when that class's score p is > 0.5 (all weights >= 0) or > 0 (some
//   negative), and Z = [1 - p, p] (all >= 0) or [-p, p], LOGISTIC [1 - σ(p), σ(p)]; with weights
//   for both classes Z = post_transform(s), the label classlabels[1] when s_1 > 0. base_values
//   of one value add to s_0; of two, as ONNX Runtime adds them; a class no leaf reached scores
//   0 in Z even so (ONNX Runtime 1.32, measured: scripts/compare_ml_ort.py).
// Opset 3's *_as_tensor attributes (double thresholds, weights, base values) are read too.
// No gradients; on CUDA they run on the host.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <type_traits>

#include "runtime/cpu/kernels/ml_common.h"

namespace oat::cpu {

namespace {

using ml::PostTransform;

enum class Mode { Leq, Lt, Gte, Gt, Eq, Neq, Leaf };

Mode mode_of(const Node& n, const std::string& s) {
  if (s == "BRANCH_LEQ") return Mode::Leq;
  if (s == "BRANCH_LT") return Mode::Lt;
  if (s == "BRANCH_GTE") return Mode::Gte;
  if (s == "BRANCH_GT") return Mode::Gt;
  if (s == "BRANCH_EQ") return Mode::Eq;
  if (s == "BRANCH_NEQ") return Mode::Neq;
  if (s == "LEAF") return Mode::Leaf;
  throw Error(cat(n.describe(), ": nodes_modes holds \"", s,
                  "\" (BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ or LEAF)"));
}

struct TreeNode {
  Mode mode = Mode::Leaf;
  int64_t feature = 0;
  double value = 0;
  float value_f = 0;
  bool missing_true = false;
  int64_t next_true = -1, next_false = -1;  // indices into the node table
  std::vector<std::pair<int64_t, double>> weights;  // (target or class, weight) at a leaf
};

// Scores of one row: a value and whether any leaf reached it.
struct Score {
  double v = 0;
  bool has = false;
};

enum class Aggregate { Sum, Average, Min, Max };

class Forest {
 public:
  // Reads the nodes_* and `<prefix>_*` attributes (prefix "target" or "class").
  Forest(const Node& n, const std::string& prefix, int64_t ids) {
    auto bad = [&](const std::string& why) { throw Error(cat(n.describe(), ": ", why)); };
    const std::vector<int64_t> tree = n.attr_ints("nodes_treeids"), node = n.attr_ints("nodes_nodeids"),
                               feat = n.attr_ints("nodes_featureids"),
                               yes = n.attr_ints("nodes_truenodeids"),
                               no = n.attr_ints("nodes_falsenodeids"),
                               missing = n.attr_ints("nodes_missing_value_tracks_true");
    const std::vector<std::string>& modes = ml::strings_attr(n, "nodes_modes");
    const std::vector<double> values = ml::doubles_attr(n, "nodes_values");
    const size_t count = tree.size();
    if (count == 0) bad("has no nodes (nodes_treeids is empty)");
    auto same = [&](size_t got, const char* what, bool optional = false) {
      if (got != count && !(optional && got == 0))
        bad(cat(what, " has ", got, " values; nodes_treeids has ", count));
    };
    same(node.size(), "nodes_nodeids");
    same(modes.size(), "nodes_modes");
    same(feat.size(), "nodes_featureids");
    same(values.size(), "nodes_values", true);
    same(yes.size(), "nodes_truenodeids");
    same(no.size(), "nodes_falsenodeids");
    same(missing.size(), "nodes_missing_value_tracks_true", true);
    std::map<std::pair<int64_t, int64_t>, int64_t> at;
    nodes_.resize(count);
    for (size_t i = 0; i < count; ++i) {
      if (!at.emplace(std::make_pair(tree[i], node[i]), static_cast<int64_t>(i)).second)
        bad(cat("node (tree ", tree[i], ", node ", node[i], ") is defined twice"));
      TreeNode& t = nodes_[i];
      t.mode = mode_of(n, modes[i]);
      t.feature = feat[i];
      t.value = values.empty() ? 0.0 : values[i];
      t.value_f = static_cast<float>(t.value);
      t.missing_true = !missing.empty() && missing[i] != 0;
      if (t.mode != Mode::Leaf && (t.feature < 0 || t.feature >= (int64_t{1} << 40)))
        bad(cat("node (tree ", tree[i], ", node ", node[i], ") reads feature ", t.feature));
      if (t.mode != Mode::Leaf) features_ = std::max(features_, t.feature + 1);
    }
    // children, by (tree, node id)
    std::map<int64_t, std::vector<int64_t>> by_tree;
    for (size_t i = 0; i < count; ++i) {
      TreeNode& t = nodes_[i];
      by_tree[tree[i]].push_back(static_cast<int64_t>(i));
      if (t.mode == Mode::Leaf) continue;
      for (auto [id, dst] : {std::make_pair(yes[i], &t.next_true), std::make_pair(no[i], &t.next_false)}) {
        auto it = at.find({tree[i], id});
        if (it == at.end())
          bad(cat("node (tree ", tree[i], ", node ", node[i], ") branches to node ", id,
                  ", which tree ", tree[i], " does not have"));
        *dst = it->second;
      }
    }
    // roots: per tree, the node no node points to; and no cycles
    for (const auto& [tid, members] : by_tree) {
      std::map<int64_t, int> pointed;
      for (int64_t i : members)
        if (nodes_[i].mode != Mode::Leaf) {
          ++pointed[nodes_[i].next_true];
          ++pointed[nodes_[i].next_false];
        }
      int64_t root = -1;
      for (int64_t i : members)
        if (!pointed.count(i)) {
          if (root >= 0) bad(cat("tree ", tid, " has more than one root (nodes no node points to)"));
          root = i;
        }
      if (root < 0) bad(cat("tree ", tid, " has no root (every node is pointed to: a cycle)"));
      // each node reachable once at most: a walk may not revisit
      std::vector<char> seen(count, 0);
      std::vector<int64_t> stack = {root};
      while (!stack.empty()) {
        const int64_t i = stack.back();
        stack.pop_back();
        if (seen[i]) bad(cat("tree ", tid, " is not a tree: node ", node[i], " is reached twice"));
        seen[i] = 1;
        if (nodes_[i].mode != Mode::Leaf) {
          stack.push_back(nodes_[i].next_true);
          stack.push_back(nodes_[i].next_false);
        }
      }
      roots_.push_back(root);
    }
    // leaf weights
    const std::vector<int64_t> wt = n.attr_ints(prefix + "_treeids"), wn = n.attr_ints(prefix + "_nodeids"),
                               wid = n.attr_ints(prefix + "_ids");
    const std::vector<double> w = ml::doubles_attr(n, prefix + "_weights");
    if (wn.size() != wt.size() || wid.size() != wt.size() || w.size() != wt.size())
      bad(cat(prefix, "_treeids, _nodeids, _ids and _weights must have one length, got ", wt.size(),
              ", ", wn.size(), ", ", wid.size(), ", ", w.size()));
    for (size_t j = 0; j < wt.size(); ++j) {
      auto it = at.find({wt[j], wn[j]});
      if (it == at.end())
        bad(cat(prefix, " weight ", j, " is on node (tree ", wt[j], ", node ", wn[j],
                "), which does not exist"));
      if (wid[j] < 0 || wid[j] >= ids)
        bad(cat(prefix, "_ids[", j, "] = ", wid[j], " is out of range [0, ", ids, ")"));
      nodes_[it->second].weights.emplace_back(wid[j], w[j]);
      ids_seen_.insert(wid[j]);
      all_positive_ = all_positive_ && w[j] >= 0;
    }
  }

  // The number of features X must have at least.
  int64_t features() const { return features_; }
  int64_t trees() const { return static_cast<int64_t>(roots_.size()); }
  size_t distinct_ids() const { return ids_seen_.size(); }
  bool all_positive() const { return all_positive_; }

  // Adds every tree's leaf weights for row x to s (aggregated by `agg`).
  template <typename T>
  void score(const T* x, Aggregate agg, Score* s) const {
    for (int64_t root : roots_) {
      const TreeNode* t = &nodes_[root];
      while (t->mode != Mode::Leaf) t = &nodes_[go_true(*t, x) ? t->next_true : t->next_false];
      for (const auto& [id, w] : t->weights) {
        Score& c = s[id];
        if (!c.has)
          c.v = w;
        else if (agg == Aggregate::Sum || agg == Aggregate::Average)
          c.v += w;
        else if (agg == Aggregate::Min)
          c.v = std::min(c.v, w);
        else
          c.v = std::max(c.v, w);
        c.has = true;
      }
    }
  }

 private:
  template <typename T>
  static bool go_true(const TreeNode& t, const T* x) {
    const T v = x[t.feature];
    if (t.missing_true && std::isnan(v)) return true;
    const T th = std::is_same_v<T, double> ? static_cast<T>(t.value) : static_cast<T>(t.value_f);
    switch (t.mode) {
      case Mode::Leq: return v <= th;
      case Mode::Lt: return v < th;
      case Mode::Gte: return v >= th;
      case Mode::Gt: return v > th;
      case Mode::Eq: return v == th;
      default: return v != th;
    }
  }

  std::vector<TreeNode> nodes_;
  std::vector<int64_t> roots_;
  int64_t features_ = 0;
  std::set<int64_t> ids_seen_;
  bool all_positive_ = true;
};

// X's rows in the threshold type, and the per-row scores of every tree.
template <typename T>
std::vector<Score> forest_scores(const KernelContext& ctx, const Forest& f, const Tensor& x,
                                 const ml::Rows& r, int64_t ids, Aggregate agg) {
  if (r.c < f.features())
    ctx.fail(cat("X has ", r.c, " features; the trees read feature ", f.features() - 1));
  const std::vector<double> d = ml::numbers_of(ctx, x);
  const std::vector<T> v(d.begin(), d.end());
  std::vector<Score> s(static_cast<size_t>(r.n * ids));
#pragma omp parallel for schedule(static) if (r.n * f.trees() > 4096)
  for (int64_t i = 0; i < r.n; ++i) f.score(v.data() + i * r.c, agg, s.data() + i * ids);
  return s;
}

std::vector<Score> scores_of(const KernelContext& ctx, const Forest& f, const Tensor& x,
                             const ml::Rows& r, int64_t ids, Aggregate agg) {
  return x.dtype() == DType::F64 ? forest_scores<double>(ctx, f, x, r, ids, agg)
                                 : forest_scores<float>(ctx, f, x, r, ids, agg);
}

class TreeRegressorKernel : public OpKernel {
 public:
  explicit TreeRegressorKernel(const Node& n)
      : targets_(n.attr_int("n_targets", 1)),
        forest_(n, "target", std::max<int64_t>(targets_, 1)),
        base_(ml::doubles_attr(n, "base_values")),
        post_(ml::post_transform_of(n)) {
    if (targets_ < 1) throw Error(cat(n.describe(), ": n_targets must be >= 1, got ", targets_));
    const std::string a = n.attr_string("aggregate_function", "SUM");
    if (a == "SUM")
      agg_ = Aggregate::Sum;
    else if (a == "AVERAGE")
      agg_ = Aggregate::Average;
    else if (a == "MIN")
      agg_ = Aggregate::Min;
    else if (a == "MAX")
      agg_ = Aggregate::Max;
    else
      throw Error(cat(n.describe(), ": aggregate_function must be SUM, AVERAGE, MIN or MAX, got \"",
                      a, "\""));
    if (!base_.empty() && static_cast<int64_t>(base_.size()) != targets_)
      throw Error(cat(n.describe(), ": base_values has ", base_.size(), " values for ", targets_,
                      " targets"));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = ml::rows_of(ctx, x);
    const std::vector<Score> s = scores_of(ctx, forest_, x, r, targets_, agg_);
    Tensor& y = ctx.allocate_output(0, DType::F32, {r.n, targets_});
    float* out = y.data<float>();
    for (int64_t i = 0; i < r.n; ++i) {
      for (int64_t t = 0; t < targets_; ++t) {
        const Score& c = s[static_cast<size_t>(i * targets_ + t)];
        double v = c.has ? c.v : 0.0;
        if (agg_ == Aggregate::Average) v /= static_cast<double>(forest_.trees());
        // a target no leaf reached is 0 when there are several (ONNX Runtime's rule)
        if (!base_.empty() && (c.has || targets_ == 1)) v += base_[static_cast<size_t>(t)];
        out[i * targets_ + t] = static_cast<float>(v);
      }
      ml::post_transform_row(post_, out + i * targets_, targets_);
    }
  }

 private:
  int64_t targets_;
  Forest forest_;
  std::vector<double> base_;
  PostTransform post_;
  Aggregate agg_ = Aggregate::Sum;
};

int64_t class_count(const Node& n) {
  const int64_t k = static_cast<int64_t>(std::max(ml::strings_attr(n, "classlabels_strings").size(),
                                                  n.attr_ints("classlabels_int64s").size()));
  if (k < 2)
    throw Error(cat(n.describe(), ": needs two or more classlabels_int64s or classlabels_strings, got ",
                    k));
  return k;
}

class TreeClassifierKernel : public OpKernel {
 public:
  explicit TreeClassifierKernel(const Node& n)
      : strings_(ml::strings_attr(n, "classlabels_strings")),
        ints_(n.attr_ints("classlabels_int64s")),
        k_(class_count(n)),
        forest_(n, "class", k_),
        base_(ml::doubles_attr(n, "base_values")),
        post_(ml::post_transform_of(n)) {
    if (!strings_.empty() && !ints_.empty())
      throw Error(cat(n.describe(), ": has both classlabels_strings and classlabels_int64s"));
    binary_ = k_ == 2 && forest_.distinct_ids() == 1;
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = ml::rows_of(ctx, x);
    const std::vector<Score> all = scores_of(ctx, forest_, x, r, k_, Aggregate::Sum);
    Tensor& y = ctx.allocate_output(0, strings_.empty() ? DType::I64 : DType::String, {r.n});
    Tensor& z = ctx.allocate_output(1, DType::F32, {r.n, k_});
    float* zo = z.data<float>();
    std::fill_n(zo, z.numel(), 0.0f);
    for (int64_t i = 0; i < r.n; ++i) {
      std::vector<Score> s(all.begin() + i * k_, all.begin() + (i + 1) * k_);
      float* zs = zo + i * k_;
      const int64_t label = k_ > 2 ? multiclass(s, zs) : two_classes(s, zs);
      if (!strings_.empty())
        y.data<std::string>()[i] = strings_[static_cast<size_t>(label)];
      else
        y.data<int64_t>()[i] = ints_[static_cast<size_t>(label)];
    }
  }

 private:
  int64_t multiclass(std::vector<Score>& s, float* z) const {
    for (size_t k = 0; k < base_.size() && k < s.size(); ++k) {
      s[k].v = s[k].has ? s[k].v + base_[k] : base_[k];
      s[k].has = true;
    }
    int64_t best = -1;
    for (int64_t k = 0; k < k_; ++k)
      if (s[k].has && (best < 0 || s[k].v > s[best].v)) best = k;
    for (int64_t k = 0; k < k_; ++k) z[k] = s[k].has ? static_cast<float>(s[k].v) : 0.0f;
    ml::post_transform_row(post_, z, k_);
    return std::max<int64_t>(best, 0);
  }

  // ONNX Runtime's TreeAggregatorClassifier::FinalizeScores for two classes.
  int64_t two_classes(std::vector<Score>& s, float* z) const {
    int extra = -1;  // how the second score is made from one (ml_common.h's add_second_class)
    if (base_.size() == 2) {
      if (s[1].has) {
        s[1].v = base_[1] + s[0].v;
        s[0].v = -s[1].v;
      } else {
        s[1].v += base_[1];
        s[0].v += base_[0];
      }
    } else if (base_.size() == 1) {
      s[0].v += base_[0];
      if (!s[1].has) s.pop_back();
    } else if (base_.empty()) {
      extra = 3;
      if (!s[1].has) s.pop_back();
    }
    // A class no leaf reached counts as 0 whatever base value was added to it (ONNX Runtime's
    // ScoreValue reads so).
    auto val = [&](size_t k) { return s[k].has ? static_cast<float>(s[k].v) : 0.0f; };
    const double pos = s.size() == 2 && s[1].has ? s[1].v : (s[0].has ? s[0].v : 0.0);
    int64_t label;
    if (binary_) {
      if (forest_.all_positive()) {
        extra = pos > 0.5 ? 0 : 1;
        label = pos > 0.5 ? 1 : 0;
      } else {
        extra = pos > 0 ? 2 : 3;
        label = pos > 0 ? 1 : 0;
      }
    } else {
      label = pos > 0 ? 1 : 0;
    }
    if (s.size() == 2) {
      z[0] = val(0);
      z[1] = val(1);
      ml::post_transform_row(post_, z, 2);
      return label;
    }
    const float v = val(0);
    if (extra < 0) {  // one score and no rule for a second: ONNX Runtime writes it alone
      z[0] = post_ == PostTransform::Probit ? ml::probit(v) : v;
    } else {
      ml::binary_scores(post_, v, extra <= 1 ? ml::SecondScore::OneMinus : ml::SecondScore::Negate,
                        z);
    }
    return label;
  }

  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  int64_t k_;
  Forest forest_;
  std::vector<double> base_;
  PostTransform post_;
  bool binary_ = false;
};

}  // namespace

void register_ml_trees(KernelRegistry& r) {
  const std::initializer_list<DType> numeric = {DType::F32, DType::F64, DType::I64, DType::I32};
  r.add(OpId::TreeEnsembleRegressor, Device::CPU, numeric, kernel_factory<TreeRegressorKernel>());
  r.add(OpId::TreeEnsembleClassifier, Device::CPU, numeric, kernel_factory<TreeClassifierKernel>());
}

}  // namespace oat::cpu
