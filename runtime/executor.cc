#include "runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "runtime/composite.h"
#include "runtime/sequence_ops.h"
#include "runtime/string_moves.h"
#include "runtime/subgraph.h"
#include "runtime/transpose_fold.h"

namespace oat {

struct Executor::Step {
  const Node* node = nullptr;
  std::vector<int> in;       // -1 for omitted optional inputs
  std::vector<int> out;      // -1 for omitted optional outputs
  std::vector<int> release;  // slots whose last use is this step
  std::vector<std::pair<DType, std::unique_ptr<OpKernel>>> kernels;
  std::vector<std::pair<DType, std::unique_ptr<OpKernel>>>
      host_kernels;     // device executor, CPU-placed
  bool folded = false;  // a Constant whose output is held in constants_ (runs only when observed)
  // Constant folding at run time (CPU executors, no observer): a deterministic node whose inputs
  // all come from unfed initializers, Constants or other such nodes ("clean") runs once; the
  // outputs a later computed node reads (or the graph returns) are kept here, by output, and
  // reused while the inputs stay clean. An initializer the caller feeds (the Trainer's
  // parameters) makes its readers compute again, so nothing stale is ever read.
  bool foldable = false;
  std::vector<Tensor> cached;  // by output; undefined: not kept
};

namespace {

// The ops that take sequences, optionals or maps as inputs (the sequence ops check which of their
// inputs may be one, DictVectorizer and CastMap that theirs is a map); every other op is given
// tensors only.
bool takes_non_tensors(OpId op) {
  return op == OpId::Identity || op == OpId::If || op == OpId::Loop || is_sequence_op(op) ||
         op == OpId::DictVectorizer || op == OpId::CastMap;
}

// The default ONNX domain, and the internal domain of gradient ops.
bool domain_is_default(const std::string& d) {
  return d.empty() || d == "ai.onnx" || d == kInternalDomain;
}

std::string unsupported_reason(const Node& node, Device device, const KernelRegistry& reg) {
  if (is_composite(node)) return "";  // runs as its expansion (runtime/composite.h)
  if (node.domain == kMlDomain && node.op == OpId::Unknown)
    return cat("op ", node.op_type, " in domain '", node.domain, "' is not supported");
  if (!domain_is_default(node.domain) && node.domain != kMlDomain)
    return cat("op ", node.op_type, " in domain '", node.domain, "' is not supported");
  const bool control_flow = node_has_subgraph(node);
  // Both have only CPU kernels; a device executor runs them on the host (see Executor()).
  if (device != Device::CPU && is_sequence_op(node.op))
    return cat("sequences and optionals (", node.op_type, ") have no ", device_name(device),
               " kernels (a ", device_name(device), " executor runs them on the host)");
  if (node.op == OpId::Unknown || !reg.supports_op(node.op, device)) {
    if (control_flow && node.op != OpId::Unknown && device != Device::CPU &&
        reg.supports_op(node.op, Device::CPU))
      return cat("control flow (", node.op_type, ") has no ", device_name(device), " kernel (a ",
                 device_name(device),
                 " executor runs it on the host, its subgraphs through CPU executors)");
    return cat("op ", node.op_type, " (opset ", node.opset, ") is not supported on ",
               device_name(device));
  }
  // If, Loop, Scan: their subgraphs run through their own (CPU) Executors, so every node of
  // them must be supported too.
  if (control_flow)
    for (const auto& [k, a] : node.attrs) {
      std::vector<const Graph*> gs;
      if (a.g) gs.push_back(a.g.get());
      for (const auto& g : a.graphs) gs.push_back(g.get());
      for (const Graph* g : gs) {
        if (!g) continue;
        for (const Node& m : g->nodes) {
          std::string why = unsupported_reason(m, device, reg);
          if (!why.empty()) return cat("its ", k, " has ", m.describe(), ": ", why);
        }
      }
    }
  return "";
}

// Makes a device context current for one run (allocations and frees use its stream).
class ContextScope {
 public:
  explicit ContextScope(DeviceContext* c) : c_(c) {
    if (c_) c_->enter();
  }
  ~ContextScope() {
    if (c_) c_->leave();
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  DeviceContext* c_;
};

// On a device, floating constants and feeds are uploaded once per run (constants: once). Integer
// values stay on the host for shape arithmetic, and so do floating scalars (a learning rate, a
// Clip bound): a device kernel that needs one gets it staged, which costs an upload, not a sync.
// Sequences and optionals stay on the host.
bool uploads(const Tensor& t) {
  return t.defined() && t.is_tensor() && is_floating(t.dtype()) && t.numel() > 1;
}

// Whether a node's outputs are a function of its inputs alone, so that constant inputs give a
// constant output: not the generators (a fresh draw per run), Dropout (a fresh mask), control
// flow (its subgraphs may draw), nor a node without inputs (Constant is evaluated apart).
bool foldable(const Node& n) {
  if (n.inputs.empty() || node_has_subgraph(n)) return false;
  switch (n.op) {
    case OpId::Unknown:
    case OpId::Dropout:
    case OpId::RandomNormal:
    case OpId::RandomUniform:
    case OpId::RandomNormalLike:
    case OpId::RandomUniformLike:
    case OpId::Bernoulli:
    case OpId::Multinomial:
      return false;
    default:
      return true;
  }
}

Tensor to_host(DeviceContext* c, const Tensor& t) {
  return c && t.defined() && t.device() != Device::CPU ? c->download(t) : t;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> unsupported_nodes(const Graph& graph,
                                                                   Device device,
                                                                   const KernelRegistry& reg) {
  std::vector<std::pair<std::string, std::string>> r;
  for (const Node& n : graph.nodes) {
    std::string why = unsupported_reason(n, device, reg);
    if (!why.empty()) r.emplace_back(n.describe(), why);
  }
  return r;
}

namespace {

// The graph as this executor runs it, nullptr when that is the caller's graph unchanged:
// back-to-back Transposes folded (runtime/transpose_fold.h), its composite ops (Einsum,
// RNN/GRU/LSTM) expanded, and its control-flow nodes given the outer values their subgraphs read
// as implicit inputs (runtime/subgraph.h), so that liveness keeps those values until the node has
// run and the kernel receives them.
std::unique_ptr<const Graph> lowered_copy(const Graph& graph,
                                          std::map<std::string, CompositeOrigin>& parts,
                                          Device device) {
  const bool composites = has_composites(graph);
  const bool transposes = has_transpose_pairs(graph);
  bool outer_reads = false;
  for (const Node& n : graph.nodes)
    if (node_has_subgraph(n) && !n.has_attr(kImplicitInputsAttr) && !implicit_inputs(n).empty())
      outer_reads = true;
  if (!composites && !transposes && !outer_reads) return nullptr;
  auto g = std::make_unique<Graph>(graph);
  if (transposes) fold_transpose_pairs(*g);
  // A graph given to an Executor runs forward (a training graph arrives expanded), so on the CPU
  // the fused inference kernels may stand in for an expansion (LoweringOptions).
  if (composites) lower_composites(*g, &parts, LoweringOptions{device == Device::CPU});
  if (outer_reads) add_implicit_inputs(*g);
  return g;
}

}  // namespace

Executor::Executor(const Graph& graph, ExecutorOptions options)
    : lowered_(lowered_copy(graph, composite_parts_, options.device)),
      graph_(lowered_ ? *lowered_ : graph),
      options_(options),
      registry_(options.registry ? options.registry : &default_registry()),
      device_ctx_(make_device_context(options.device)) {
  auto add_slot = [&](const std::string& name) {
    auto it = slots_.find(name);
    if (it != slots_.end()) return it->second;
    int s = static_cast<int>(slots_.size());
    slots_.emplace(name, s);
    return s;
  };
  for (const auto& [name, t] : graph_.initializers) add_slot(name);
  for (const auto& v : graph_.inputs) input_slots_.push_back(add_slot(v.name));
  steps_.resize(graph_.nodes.size());
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    std::string why = unsupported_reason(n, options_.device, *registry_);
    // A device executor may run a node on the host (shape arithmetic, see DeviceContext), and
    // so it runs control flow (If, Loop, Scan: the subgraphs through CPU executors, their device
    // inputs downloaded) and the sequence and optional ops, whose values live on the host.
    if (!why.empty() && device_ctx_ && unsupported_reason(n, Device::CPU, *registry_).empty())
      why.clear();
    if (!why.empty()) throw Unsupported(cat(n.describe(), ": ", why), n.op_type);
    Step& s = steps_[i];
    s.node = &n;
    for (const auto& in : n.inputs) {
      if (in.empty()) {
        s.in.push_back(-1);
        continue;
      }
      auto it = slots_.find(in);
      if (it == slots_.end())
        throw Error(cat(n.describe(), ": input '", in, "' is not produced before this node"));
      s.in.push_back(it->second);
    }
    for (const auto& out : n.outputs) s.out.push_back(out.empty() ? -1 : add_slot(out));
    s.foldable = foldable(n);
    s.cached.resize(s.out.size());
  }
  for (const auto& v : graph_.outputs) {
    auto it = slots_.find(v.name);
    if (it == slots_.end())
      throw Error(cat("graph output '", v.name, "' is not produced by any node or input"));
    output_slots_.push_back(it->second);
  }
  constants_.resize(slots_.size());
  for (const auto& [name, t] : graph_.initializers) constants_[slots_.at(name)] = t;
  // Constant nodes are evaluated once, here, and their outputs held like initializers: no copy of
  // the value at every run, and on a device a floating one is uploaded once, not before every
  // node that reads it. With an observer (check, the profilers) the node still runs, so it is
  // seen like any other.
  for (Step& s : steps_) {
    if (s.node->op != OpId::Constant || s.out.size() != 1 || s.out[0] < 0) continue;
    const std::vector<const Tensor*> none;
    std::vector<Tensor> outs(1);
    auto kernel = registry_->create(*s.node, Device::CPU, kernel_dtype_key(*s.node, none));
    KernelContext ctx(*s.node, none, &outs, Device::CPU, nullptr, {});
    kernel->compute(ctx);
    if (!outs[0].defined())
      throw Error(cat(s.node->describe(), ": kernel did not produce output 0"));
    constants_[static_cast<size_t>(s.out[0])] = std::move(outs[0]);
    s.folded = true;
  }
  // On a device, floating constants are uploaded at their first run without a feed that replaces
  // them (run_impl), then kept: the Trainer feeds its device-resident state for the training
  // graph's parameter and optimizer initializers, which would otherwise be a second, never-read
  // copy of the whole state in device memory.
  if (device_ctx_) device_constants_.resize(slots_.size());

  // Liveness: the last step reading each slot releases it, unless it is an output or constant.
  std::vector<int>& last_use = last_use_;
  last_use.assign(slots_.size(), -1);
  consumers_.assign(slots_.size(), {});
  for (size_t i = 0; i < steps_.size(); ++i)
    for (int s : steps_[i].in)
      if (s >= 0) {
        last_use[s] = static_cast<int>(i);
        consumers_[s].push_back(static_cast<int>(i));
      }
  std::set<int> keep(output_slots_.begin(), output_slots_.end());
  for (size_t s = 0; s < last_use.size(); ++s)
    if (last_use[s] >= 0 && !keep.count(static_cast<int>(s)) && !constants_[s].defined())
      steps_[last_use[s]].release.push_back(static_cast<int>(s));
}

Executor::~Executor() = default;

size_t Executor::folded_values() const {
  size_t n = 0;
  for (const Step& s : steps_)
    for (const Tensor& t : s.cached) n += t.defined() ? 1 : 0;
  return n;
}

void Executor::set_bytes_filter(std::function<bool(const std::string&)> filter) {
  counted_.clear();
  if (!filter) return;
  counted_.assign(slots_.size(), 0);
  for (const auto& [name, slot] : slots_) counted_[slot] = filter(name) ? 1 : 0;
}

int Executor::slot_of(const std::string& name) const {
  auto it = slots_.find(name);
  if (it == slots_.end()) throw Error(cat("no value named '", name, "' in the graph"));
  return it->second;
}

void Executor::validate_feeds(const std::map<std::string, Tensor>& feeds) const {
  std::set<std::string> declared;
  for (const auto& v : graph_.inputs) {
    declared.insert(v.name);
    auto it = feeds.find(v.name);
    if (it == feeds.end())
      throw Error(cat("missing input '", v.name, "' (expected ", dtype_name(v.dtype), " ",
                      v.shape_string(), ")"));
    const Tensor& t = it->second;
    // (an input declared without a type takes any value; one declared optional(X) also takes a
    // plain X, as a Loop body's optional carried value after its first iteration)
    const bool typed = v.dtype != DType::Undefined || v.kind != ValueKind::Tensor;
    // (a sequence's items and a map's key type are checked too: sequence(map) is not
    // sequence(tensor), map(int64, ...) not map(string, ...))
    const bool kind_ok =
        v.kind == ValueKind::Optional
            ? (t.kind() == ValueKind::Optional ? t.inner_kind() == v.inner : t.kind() == v.inner)
        : v.kind == ValueKind::Sequence
            ? t.kind() == v.kind && (t.inner_kind() == v.inner || t.items().empty())
            : t.kind() == v.kind;
    if (typed && !kind_ok)
      throw Error(cat("input '", v.name, "' is a ", t.describe(), ", expected a ",
                      v.kind == ValueKind::Optional ? cat("optional(", value_kind_name(v.inner), ")")
                      : v.kind == ValueKind::Tensor ? std::string("tensor")
                                                    : v.type_string()));
    if (typed && v.key != DType::Undefined && t.key_dtype() != v.key && !t.items().empty())
      throw Error(cat("input '", v.name, "' is a ", t.describe(), ", expected a ",
                      v.type_string()));
    if (v.dtype != DType::Undefined && t.dtype() != v.dtype &&
        !(t.kind() != ValueKind::Tensor && t.dtype() == DType::Undefined))
      throw Error(cat("input '", v.name, "' has dtype ", dtype_name(t.dtype()), ", expected ",
                      dtype_name(v.dtype)));
    if (v.shape) {
      const auto& dims = *v.shape;
      bool ok = static_cast<int>(dims.size()) == t.rank();
      for (size_t d = 1; ok && d < dims.size(); ++d)
        if (dims[d].fixed() && dims[d].value != t.shape()[d]) ok = false;
      if (!ok)
        throw Error(cat("input '", v.name, "' has shape ", shape_str(t.shape()), ", expected ",
                        v.shape_string()));
    }
  }
  for (const auto& [name, t] : feeds)
    if (!declared.count(name) && !graph_.initializers.count(name))
      throw Error(cat("input '", name, "' is not an input of the model"));
}

std::vector<Tensor> Executor::run(const std::map<std::string, Tensor>& feeds) {
  std::vector<std::string> names;
  for (const auto& v : graph_.outputs) names.push_back(v.name);
  auto values = run(feeds, names);
  std::vector<Tensor> r;
  for (const auto& n : names) r.push_back(values.at(n));
  return r;
}

std::map<std::string, Tensor> Executor::run(const std::map<std::string, Tensor>& feeds,
                                            const std::vector<std::string>& fetch) {
  return run_impl(feeds, fetch, true);
}

std::map<std::string, Tensor> Executor::run_resident(const std::map<std::string, Tensor>& feeds,
                                                     const std::vector<std::string>& fetch,
                                                     const std::set<std::string>& donated) {
  return run_impl(feeds, fetch, false, donated);
}

std::map<std::string, Tensor> Executor::run_impl(const std::map<std::string, Tensor>& feeds,
                                                 const std::vector<std::string>& fetch,
                                                 bool to_host_outputs,
                                                 const std::set<std::string>& donated) {
  validate_feeds(feeds);
  for (const auto& name : donated)
    if (!feeds.count(name)) throw Error(cat("donated value '", name, "' is not fed"));
  for (const auto& [name, t] : feeds)
    if (t.defined() && t.device() != Device::CPU && t.device() != options_.device)
      throw Error(cat("input '", name, "' is on ", device_name(t.device()),
                      ", this executor runs on ", device_name(options_.device)));
  DeviceContext* dc = device_ctx_.get();
  ContextScope scope(dc);
  std::vector<Tensor> values = constants_;
  std::vector<char> fed(values.size(), 0);
  for (const auto& [name, t] : feeds) {  // may override an initializer
    const int slot = slot_of(name);
    values[slot] = dc && uploads(t) ? dc->upload(t) : t;
    fed[static_cast<size_t>(slot)] = 1;
  }
  if (dc) {
    std::vector<std::pair<size_t, Tensor>> uploaded;
    for (size_t s = 0; s < values.size(); ++s) {
      if (fed[s] || !uploads(constants_[s])) continue;
      if (device_constants_[s].defined())
        values[s] = device_constants_[s];
      else
        uploaded.emplace_back(s, values[s] = dc->upload(constants_[s]));
    }
    if (!uploaded.empty()) {
      // Kept only once the copies have run: during a CUDA-graph capture they are merely recorded
      // (the synchronisation throws and fails the capture), and a capture that is then discarded
      // would leave buffers that were never written.
      dc->synchronize();
      for (auto& [s, t] : uploaded) device_constants_[s] = std::move(t);
    }
  }
  std::set<int> fetch_slots;
  for (const auto& n : fetch) fetch_slots.insert(slot_of(n));

  // Run-time constant folding (Step::foldable). clean: a value that depends on unfed initializers
  // and Constants only; a clean step whose needed outputs are all cached does not run (needed:
  // fetched, returned, or read by a step that runs; found backwards).
  const bool fold = !dc && !observer_;
  std::vector<char> clean_step, runs;
  if (fold) {
    std::vector<char> clean(values.size(), 0), needed(values.size(), 0);
    for (size_t v = 0; v < values.size(); ++v) clean[v] = constants_[v].defined() && !fed[v];
    clean_step.assign(steps_.size(), 0);
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& s = steps_[i];
      if (s.folded || !s.foldable) continue;
      bool c = true;
      for (int v : s.in) c = c && (v < 0 || clean[static_cast<size_t>(v)]);
      if (!c) continue;
      clean_step[i] = 1;
      for (int v : s.out)
        if (v >= 0) clean[static_cast<size_t>(v)] = 1;
    }
    for (int v : fetch_slots) needed[static_cast<size_t>(v)] = 1;
    for (int v : output_slots_) needed[static_cast<size_t>(v)] = 1;
    runs.assign(steps_.size(), 0);
    for (size_t i = steps_.size(); i-- > 0;) {
      const Step& s = steps_[i];
      bool r = !s.folded && !clean_step[i];
      for (size_t o = 0; !r && clean_step[i] && o < s.out.size(); ++o)
        r = s.out[o] >= 0 && needed[static_cast<size_t>(s.out[o])] && !s.cached[o].defined();
      runs[i] = r;
      if (r)
        for (int v : s.in)
          if (v >= 0) needed[static_cast<size_t>(v)] = 1;
    }
  }
  // Kept: a clean output that a computed (not clean) step reads or the graph returns; what only
  // other clean steps read is not needed once their outputs are kept.
  auto keeps = [&](int slot) {
    if (std::find(output_slots_.begin(), output_slots_.end(), slot) != output_slots_.end())
      return true;
    for (int c : consumers_[static_cast<size_t>(slot)])
      if (!clean_step[static_cast<size_t>(c)]) return true;
    return false;
  };
  // Donated feeds a step may write in place: those it reads last, neither fetched nor a graph
  // output, nor sharing their storage with another value of the run.
  std::vector<char> donated_slot(values.size(), 0);
  if (!donated.empty()) {
    std::unordered_map<const Storage*, int> sharing;
    for (const Tensor& t : values)
      if (t.storage()) ++sharing[t.storage().get()];
    for (const auto& n : donated) {
      const int slot = slot_of(n);
      const Tensor& t = values[static_cast<size_t>(slot)];
      if (t.storage() && sharing[t.storage().get()] == 1 && !fetch_slots.count(slot) &&
          std::find(output_slots_.begin(), output_slots_.end(), slot) == output_slots_.end())
        donated_slot[static_cast<size_t>(slot)] = 1;
    }
  }

  // peak_bytes(): computed values held, by storage (outputs may share one, or share a feed's).
  std::unordered_set<const Storage*> external;
  for (const Tensor& t : values)
    if (t.storage()) external.insert(t.storage().get());
  if (fold)
    for (const Step& s : steps_)
      for (const Tensor& t : s.cached)
        if (t.storage()) external.insert(t.storage().get());
  std::unordered_map<const Storage*, int> live;
  size_t held = 0;
  peak_bytes_ = 0;
  auto counts = [&](int slot) {
    return slot >= 0 && (counted_.empty() || counted_[slot]) && values[slot].storage() &&
           !external.count(values[slot].storage().get());
  };

  // After step s: the values whose last reader it was are dropped (unless fetched).
  auto release_after = [&](const Step& s) {
    for (int slot : s.release) {
      if (fetch_slots.count(slot)) continue;
      if (counts(slot)) {
        auto it = live.find(values[slot].storage().get());
        if (it != live.end() && --it->second == 0) {
          held -= it->first->bytes();
          live.erase(it);
        }
      }
      values[slot] = Tensor();
    }
  };

  std::vector<const Tensor*> in;
  for (size_t step = 0; step < steps_.size(); ++step) {
    Step& s = steps_[step];
    if (s.folded && !observer_) continue;
    if (fold && !runs[step]) {  // clean, its needed outputs kept
      for (size_t o = 0; o < s.out.size(); ++o)
        if (s.out[o] >= 0 && s.cached[o].defined()) values[s.out[o]] = s.cached[o];
      release_after(s);
      continue;
    }
    const Node& node = *s.node;
    in.clear();
    for (int slot : s.in) {
      if (slot < 0) {
        in.push_back(nullptr);
        continue;
      }
      if (!values[slot].defined())
        throw Error(cat(node.describe(), ": input '", node.inputs[in.size()],
                        "' has no value (was it produced?)"));
      in.push_back(&values[slot]);
    }
    std::vector<Tensor> outs(s.out.size());
    const Device where = dc ? dc->placement(node, in) : options_.device;
    if (where != Device::CPU)  // sequences and optionals live on the host (runtime/tensor.h)
      for (size_t k = 0; k < in.size(); ++k)
        if (in[k] && !in[k]->is_tensor())
          throw Error(cat(
              node.describe(), ": input ", k, " '", node.inputs[k], "' is a ", in[k]->describe(),
              ", which lives on the host, but the node was placed on ", device_name(where)));
    std::vector<Tensor> staged;
    if (where != Device::CPU) {
      dc->stage_inputs(node, in, staged);
    } else if (dc) {
      // A node the device context places on the host although some inputs live on the device
      // (ops whose output length depends on the values, e.g. NonMaxSuppression: see
      // runtime/cuda/README.md): its device inputs are downloaded (a synchronisation).
      staged.reserve(in.size());
      for (const Tensor*& t : in) {
        if (!t || t->device() == Device::CPU) continue;
        try {
          staged.push_back(dc->download(*t));
        } catch (const Error& e) {
          throw Error(
              cat(node.describe(), ": runs on the host and reads its inputs there: ", e.what()));
        }
        t = &staged.back();
      }
    }
    if (!takes_non_tensors(node.op))
      for (size_t k = 0; k < in.size(); ++k)
        if (in[k] && !in[k]->is_tensor())
          throw Error(cat(node.describe(), ": input ", k, " '", node.inputs[k], "' is a ",
                          in[k]->describe(), "; ", node.op_type,
                          " takes tensors (the sequence and optional ops read such values)"));
    // String tensors reach only the ops that take them; the movement ops move their element
    // numbers instead (runtime/string_moves.h).
    StringMove string_move;
    const bool strings = has_string_input(in);
    const bool numbered = strings && (moves_strings(node.op) || compares_strings(node.op));
    if (numbered && moves_strings(node.op))
      string_move.number_inputs(node, in);
    else if (numbered)
      string_move.intern_inputs(node, in);
    else if (strings && !takes_strings(node.op))
      throw Unsupported(cat(node.describe(), ": ", node.op_type,
                            " takes no string tensors (strings are read by Cast, CastLike, "
                            "StringNormalizer, TfIdfVectorizer, Equal, Unique and ai.onnx.ml's "
                            "encoders, and moved by "
                            "the shape and movement ops)"),
                        cat(node.op_type, "[string]"));
    DType key = kernel_dtype_key(node, in);
    auto& cache = where == options_.device ? s.kernels : s.host_kernels;
    OpKernel* kernel = nullptr;
    for (auto& [t, k] : cache)
      if (t == key) kernel = k.get();
    if (!kernel) {
      cache.emplace_back(key, registry_->create(node, where, key));
      kernel = cache.back().second.get();
    }
    std::vector<bool> donated_in;
    if (!donated.empty())
      for (size_t k = 0; k < s.in.size(); ++k) {
        const int slot = s.in[k];
        const bool last = slot >= 0 && donated_slot[static_cast<size_t>(slot)] &&
                          in[k] == &values[slot] &&  // not a staged copy
                          last_use_[static_cast<size_t>(slot)] == static_cast<int>(step) &&
                          std::count(s.in.begin(), s.in.end(), slot) == 1;
        donated_in.push_back(last);
      }
    KernelContext ctx(node, in, &outs, where, where == Device::CPU ? nullptr : dc,
                      std::move(donated_in));
    // Inputs that are this executor's constants (initializers not fed in this run, Constant
    // nodes' values): their storage is held by constants_ and never written.
    // Flagged only for nodes that read one (weights), so most nodes allocate nothing here.
    std::vector<bool> constant_in;
    for (size_t k = 0; k < s.in.size(); ++k) {
      const int slot = s.in[k];
      if (slot < 0 || !constants_[static_cast<size_t>(slot)].defined() ||
          fed[static_cast<size_t>(slot)] || in[k] != &values[slot])
        continue;
      constant_in.resize(s.in.size(), false);
      constant_in[k] = true;
    }
    if (!constant_in.empty()) ctx.set_constant_inputs(std::move(constant_in));
    // A node of a composite's expansion is named through the composite, the node the model has:
    // "node 'scat' (ScatterND), in its expansion: node 'scat/rows' (GatherGrad, ...): ...".
    auto in_composite = [&](const std::string& msg) {
      auto it = composite_parts_.find(node.name);
      if (it == composite_parts_.end()) return msg;
      return cat("node '", it->second.name, "' (", it->second.op_type,
                 "), in its expansion: ", msg);
    };
    try {
      kernel->compute(ctx);
    } catch (const Unsupported& e) {
      if (!composite_parts_.count(node.name)) throw;
      throw Unsupported(in_composite(e.what()), e.key());
    } catch (const Error& e) {
      // Errors raised below the kernel (an allocation of a huge output: "out of memory
      // allocating N bytes") do not know the node; name it.
      const std::string what = e.what();
      if (what.rfind("node '", 0) == 0 && !composite_parts_.count(node.name)) throw;
      throw Error(
          in_composite(what.rfind("node '", 0) == 0 ? what : cat(node.describe(), ": ", what)));
    } catch (const std::bad_alloc&) {
      // A kernel's own buffer (an index table sized by the output) that the host cannot give.
      throw Error(in_composite(cat(node.describe(), ": out of memory (a host allocation failed)")));
    } catch (const std::length_error&) {
      throw Error(in_composite(
          cat(node.describe(), ": out of memory (a buffer larger than the address space)")));
    } catch (const std::exception& e) {
      throw Error(in_composite(cat(node.describe(), ": ", e.what())));
    }
    if (numbered) string_move.name_outputs(node, outs);
    for (size_t o = 0; o < s.out.size(); ++o) {
      if (s.out[o] < 0) continue;
      if (!outs[o].defined())
        throw Error(cat(node.describe(), ": kernel did not produce output ", o, " '",
                        node.outputs[o], "'"));
      values[s.out[o]] = std::move(outs[o]);
      if (counts(s.out[o]) && live[values[s.out[o]].storage().get()]++ == 0)
        held += values[s.out[o]].storage()->bytes();
    }
    peak_bytes_ = std::max(peak_bytes_, held);
    if (observer_) {
      std::vector<Tensor> seen, before;
      for (int slot : s.out) seen.push_back(slot >= 0 ? to_host(dc, values[slot]) : Tensor());
      // On a device the observer sees host copies; what it changes in place (check's
      // --inject-error hook) is copied back, so later nodes see it as they do on the CPU.
      for (size_t o = 0; o < seen.size(); ++o)
        before.push_back(s.out[o] >= 0 && values[s.out[o]].device() != Device::CPU ? seen[o].clone()
                                                                                   : Tensor());
      const std::vector<Tensor> host = seen;  // shallow: the storage the observer may change
      observer_(node, seen);
      for (size_t o = 0; o < host.size(); ++o)
        if (before[o].nbytes() &&
            std::memcmp(host[o].raw_data(), before[o].raw_data(), before[o].nbytes()) != 0)
          dc->copy_into(host[o], values[s.out[o]]);
    }
    if (fold && clean_step[step])
      for (size_t o = 0; o < s.out.size(); ++o)
        if (s.out[o] >= 0 && keeps(s.out[o])) s.cached[o] = values[s.out[o]];
    release_after(s);
  }
  std::map<std::string, Tensor> r;
  for (const auto& n : fetch) {
    const Tensor& t = values[slot_of(n)];
    if (!t.defined()) throw Error(cat("value '", n, "' was not computed"));
    r[n] = to_host_outputs ? to_host(dc, t) : t;
  }
  return r;
}

}  // namespace oat
