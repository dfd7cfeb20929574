#include "convert/auto_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "runtime/executor.h"

namespace oat::convert {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// d(v) = max|low - ref| / max|ref| (infinite where low is not finite and ref is).
double value_deviation(const Tensor& low, const Tensor& ref) {
  if (low.shape() != ref.shape() || !is_floating(low.dtype())) return 0;
  const std::vector<float> y = low.to_float_vector();
  const float* r = ref.data<float>();
  double max_abs = 0, max_ref = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(r[i])) continue;
    max_ref = std::max(max_ref, static_cast<double>(std::abs(r[i])));
    if (!std::isfinite(y[i])) return kInf;
    max_abs = std::max(max_abs, static_cast<double>(std::abs(y[i] - r[i])));
  }
  return max_ref > 0 ? max_abs / max_ref : max_abs;
}

struct Evaluation {
  std::vector<OutputDeviation> outputs;
  double worst = 0;
  std::map<std::string, double> gain;  // low-precision nodes of the original graph
};

class Search {
 public:
  Search(const Graph& g, const std::map<std::string, Tensor>& feeds, const ExportOptions& base)
      : g_(g), feeds_(feeds), base_(base) {
    Executor exec(g_);
    exec.set_observer([this](const Node& n, const std::vector<Tensor>& outs) {
      for (size_t k = 0; k < outs.size(); ++k)
        if (outs[k].defined() && outs[k].dtype() == DType::F32) ref_[n.outputs[k]] = outs[k];
    });
    ref_outputs_ = exec.run(feeds_);
  }

  Evaluation evaluate(const std::set<std::string>& pins) {
    ++evaluations;
    ExportOptions o = base_;
    o.paint.fp32_nodes.insert(pins.begin(), pins.end());
    ConvertedGraph c = convert_for_inference(g_, o);
    std::map<std::string, double> dev;
    Executor exec(c.graph);
    exec.set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
      for (size_t k = 0; k < outs.size(); ++k) {
        auto it = ref_.find(n.outputs[k]);
        if (it != ref_.end() && outs[k].defined())
          dev[n.outputs[k]] = value_deviation(outs[k], it->second);
      }
    });
    const std::vector<Tensor> got = exec.run(adapt_feeds(c.graph, feeds_));
    Evaluation e;
    for (size_t k = 0; k < got.size(); ++k)
      e.outputs.push_back(deviation(g_.outputs[k].name, got[k], ref_outputs_[k]));
    e.worst = worst_rel(e.outputs);
    auto d = [&](const std::string& v) {
      auto it = dev.find(v);
      return it == dev.end() ? 0.0 : (std::isnan(it->second) ? kInf : it->second);
    };
    for (const Node& n : g_.nodes) {
      const NodePrecision* p = c.plan.find(n.name);
      if (!p || p->dtype == DType::F32) continue;
      double in = 0, out = 0;
      for (const auto& v : n.inputs) in = std::max(in, d(v));
      for (const auto& v : n.outputs) out = std::max(out, d(v));
      // An overflow born here is infinitely bad; one that arrives is not this node's doing.
      e.gain[n.name] = std::isinf(out) ? (std::isinf(in) ? 0.0 : kInf) : out - in;
    }
    return e;
  }

  size_t evaluations = 0;

 private:
  const Graph& g_;
  const std::map<std::string, Tensor>& feeds_;
  const ExportOptions& base_;
  std::map<std::string, Tensor> ref_;
  std::vector<Tensor> ref_outputs_;
};

}  // namespace

AutoSearchResult auto_search(const Graph& g, const std::map<std::string, Tensor>& feeds,
                             const ExportOptions& base, const AutoSearchOptions& options) {
  if (!(options.rtol > 0)) throw Error(cat("--rtol ", options.rtol, " must be positive"));
  std::map<std::string, std::string> op_of;
  for (const Node& n : g.nodes) op_of[n.name] = n.op_type;

  Search search(g, feeds, base);
  AutoSearchResult r;
  std::set<std::string> pins, rejected;
  std::vector<std::pair<std::string, double>> chosen;  // (node, gain when chosen)
  Evaluation e = search.evaluate(pins);
  r.initial_worst_rel = e.worst;
  while (!(e.worst <= options.rtol) && pins.size() < options.max_pins &&
         search.evaluations < options.max_evaluations) {
    // Clear-list ops move data without changing it: FP32 cannot make them more exact.
    std::string best;
    double best_gain = -kInf;
    for (const auto& [node, gain] : e.gain)
      if (!pins.count(node) && !rejected.count(node) &&
          base.paint.lists.list_of(op_of[node]) != OpList::Clear && gain > best_gain)
        best = node, best_gain = gain;
    if (best.empty()) break;  // nothing left to try
    pins.insert(best);
    Evaluation trial = search.evaluate(pins);
    // An overflow born in the node is removed by the pin even while another one keeps the
    // output infinite; any other pin must make the worst output better.
    if (std::isinf(best_gain) || trial.worst < e.worst) {
      chosen.emplace_back(best, best_gain);
      e = std::move(trial);
      r.steps.push_back({best, op_of[best], best_gain, e.worst, false});
    } else {
      pins.erase(best);
      rejected.insert(best);
      ++r.rejected;
    }
  }
  r.met = e.worst <= options.rtol;
  if (r.met && chosen.size() > 1) {
    // Prune: the least useful pins first.
    std::stable_sort(chosen.begin(), chosen.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [node, gain] : chosen) {
      pins.erase(node);
      Evaluation trial = search.evaluate(pins);
      if (trial.worst <= options.rtol) {
        e = std::move(trial);
        r.steps.push_back({node, op_of[node], gain, e.worst, true});
      } else {
        pins.insert(node);
      }
    }
  }
  // Report in graph order.
  for (const Node& n : g.nodes)
    if (pins.count(n.name)) r.fp32_nodes.push_back(n.name);
  r.deviation = std::move(e.outputs);
  r.evaluations = search.evaluations;
  return r;
}

}  // namespace oat::convert
