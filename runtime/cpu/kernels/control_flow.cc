// Control flow: If (opset 1/11/13/16), Loop (1/11/13/16) and Scan (8/9/11/16), on the CPU, for
// inference (autodiff has no gradient for them; the CUDA backend has no kernels for them, and a
// CUDA executor runs these on the host: runtime/cuda/context.cc).
//
// Each subgraph runs through its own CPU Executor, built once with the kernel (the Executor makes
// one kernel per node and dtype key) and reused for every iteration and every call. Values the
// subgraph reads from the enclosing graph arrive as the node's last inputs, which the enclosing
// Executor appended (runtime/subgraph.h: implicit inputs), and are fed to the subgraph's
// Executor as extra graph inputs. Tensors pass between iterations by handle, without copies.
//
// If(cond) -> outputs of then_branch when cond (a bool tensor of one element) is true, else of
//   else_branch. The branches take no inputs; their outputs may differ in shape (opset 11+).
//
// Loop(M?, cond?, v_initial_1..N) -> (v_final_1..N, scan_output_1..K), body(iteration_num,
// cond_in, v_1..N) -> (cond_out, v_1..N, scan_element_1..K):
//   i = 0; cond = cond? given : true; v = v_initial
//   while (i < M (absent: unbounded) and cond):
//     (cond, v, e) = body(i, cond, v); scan_k.append(e_k); ++i
//   v_final = v; scan_output_k = stack(scan_k) along a new axis 0 ([i, ...element shape])
// The body's cond output ends the loop also when the cond input was omitted: the ONNX text calls
// it "ignored" for the (M, "") and ("", "") forms, ONNX Runtime reads it always, and a Loop with
// neither input would otherwise never end; we follow ONNX Runtime. Loop-carried values may change
// shape between iterations; scan elements may not. A loop of zero iterations returns the initial
// values and, for each scan output, an empty tensor [0, d...] with the body output's declared
// dims (an unknown dim counts as 0; an unknown rank gives [0]), as ONNX Runtime does.
//
// Scan (opset 9+)(s_initial_1..N, x_1..M) -> (s_final_1..N, y_1..K), body(s_1..N, x_1..M
// elements) -> (s_1..N, y_1..K elements), num_scan_inputs = M:
//   T = x_j.shape[a_j] (a_j = scan_input_axes[j], default 0; equal for every j)
//   for t in 0..T-1: element of x_j = x_j[..., t', ...] along a_j with t' = t, or T-1-t when
//     scan_input_directions[j] = 1; (s, e) = body(s, elements)
//   y_k stacks the T elements e_k along axis b_k = scan_output_axes[k] (default 0, negative counts
//   from the end of y_k's rank), iteration t at index t, or T-1-t when scan_output_directions[k]=1.
// Scan 8 has a leading optional input sequence_lens [B] and a batch axis: states are [B, ...],
// scan inputs [B, T, ...]; each batch entry b runs separately for sequence_lens[b] (1..T, default
// T) iterations, its scan inputs read along axis 1 (`directions`: reverse starts at
// sequence_lens[b]-1), its scan outputs written in iteration order and zero beyond
// sequence_lens[b]; outputs are the per-entry results stacked along a new axis 0.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include "runtime/cpu/register.h"
#include "runtime/executor.h"
#include "runtime/subgraph.h"

namespace oat::cpu {

namespace {

// ---- tensors along an axis (any dtype: whole elements are moved as bytes, strings as objects) ----

// x with `axis` removed, at position `index` along it: x[..., index, ...].
Tensor select_index(const Tensor& x, int axis, int64_t index) {
  Shape shape = x.shape();
  const int64_t n = shape[static_cast<size_t>(axis)];
  shape.erase(shape.begin() + axis);
  Tensor y(x.dtype(), shape);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  const size_t inner = y.numel() == 0 || outer == 0 ? 0 : y.nbytes() / static_cast<size_t>(outer);
  if (x.dtype() == DType::String) {  // objects, copied one by one
    const int64_t k = static_cast<int64_t>(inner / sizeof(std::string));
    const std::string* src = x.data<std::string>();
    std::string* dst = y.data<std::string>();
    for (int64_t o = 0; o < outer && k; ++o)
      std::copy(src + (o * n + index) * k, src + (o * n + index + 1) * k, dst + o * k);
    return y;
  }
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  for (int64_t o = 0; o < outer && inner; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * inner,
                src + static_cast<size_t>(o * n + index) * inner, inner);
  return y;
}

// The elements (equal shapes and dtypes) stacked along a new axis `axis` of their rank + 1:
// element t lands at index t, or count-1-t when `reverse`. `count` may exceed the number of
// elements; the rest is zero (Scan 8's padding).
Tensor stack(const std::vector<Tensor>& elems, int axis, bool reverse, int64_t count) {
  const Tensor& first = elems.front();
  Shape shape = first.shape();
  shape.insert(shape.begin() + axis, count);
  Tensor y = static_cast<int64_t>(elems.size()) < count ? Tensor::zeros(first.dtype(), shape)
                                                        : Tensor(first.dtype(), shape);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= first.dim(d);
  const size_t inner =
      first.numel() == 0 || outer == 0 ? 0 : first.nbytes() / static_cast<size_t>(outer);
  if (first.dtype() == DType::String) {  // objects, copied one by one
    const int64_t k = static_cast<int64_t>(inner / sizeof(std::string));
    std::string* dst = y.data<std::string>();
    for (size_t t = 0; t < elems.size() && k; ++t) {
      const int64_t at = reverse ? count - 1 - static_cast<int64_t>(t) : static_cast<int64_t>(t);
      const std::string* src = elems[t].data<std::string>();
      for (int64_t o = 0; o < outer; ++o)
        std::copy(src + o * k, src + (o + 1) * k, dst + (o * count + at) * k);
    }
    return y;
  }
  char* dst = static_cast<char*>(y.raw_data());
  for (size_t t = 0; t < elems.size() && inner; ++t) {
    const int64_t at = reverse ? count - 1 - static_cast<int64_t>(t) : static_cast<int64_t>(t);
    const char* src = static_cast<const char*>(elems[t].raw_data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o * count + at) * inner,
                  src + static_cast<size_t>(o) * inner, inner);
  }
  return y;
}

// One element of a bool tensor (If's and Loop's conditions).
bool condition_value(const KernelContext& ctx, const Tensor& c, const std::string& what) {
  if (c.dtype() != DType::Bool || c.numel() != 1)
    ctx.fail(cat(what, " must be a bool tensor of one element, got ", dtype_name(c.dtype()), " ",
                 shape_str(c.shape())));
  return c.data<bool>()[0];
}

// ---- one subgraph and its Executor ----

class Subgraph {
 public:
  // The graph attribute `attr` of n; n's implicit inputs (appended by the enclosing Executor)
  // must hold every outer value it reads.
  Subgraph(const Node& n, const char* attr) : attr_(attr) {
    const Attribute* a = n.attr(attr);
    if (!a || a->kind != Attribute::Kind::Graph || !a->g)
      throw Error(cat(n.describe(), ": graph attribute '", attr, "' is missing"));
    graph_ = a->g.get();
    outer_ = subgraph_free_names(*graph_);
    const size_t first_implicit = n.inputs.size() - num_implicit_inputs(n);
    for (const auto& name : outer_) {
      auto it = std::find(n.inputs.begin() + static_cast<long>(first_implicit), n.inputs.end(), name);
      if (it == n.inputs.end())
        throw Error(cat(n.describe(), ": ", attr, " reads '", name,
                        "' from the enclosing graph, but the node was not given it as an implicit "
                        "input (run the graph through an Executor, which adds them)"));
      outer_input_.push_back(static_cast<int>(it - n.inputs.begin()));
    }
    run_graph_ = subgraph_for_executor(*graph_, outer_);
    try {
      exec_ = std::make_unique<Executor>(run_graph_);
    } catch (const Unsupported& e) {
      throw Unsupported(cat(n.describe(), ": ", attr, ": ", e.what()), e.key());
    } catch (const Error& e) {
      throw Error(cat(n.describe(), ": ", attr, ": ", e.what()));
    }
  }

  // The subgraph as the model wrote it (declared inputs and outputs).
  const Graph& graph() const { return *graph_; }
  size_t num_inputs() const { return graph_->inputs.size(); }
  size_t num_outputs() const { return graph_->outputs.size(); }

  // Runs it with its declared inputs in order (`inputs`) and the outer values from ctx; returns
  // its outputs in order. `where` (e.g. "iteration 3") prefixes errors.
  std::vector<Tensor> run(const KernelContext& ctx, std::vector<Tensor> inputs,
                          const std::string& where) {
    if (inputs.size() != graph_->inputs.size())
      ctx.fail(cat(attr_, " declares ", graph_->inputs.size(), " inputs, the node gives it ",
                   inputs.size()));
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) feeds[graph_->inputs[i].name] = std::move(inputs[i]);
    for (size_t j = 0; j < outer_.size(); ++j) feeds[outer_[j]] = ctx.input(outer_input_[j]);
    try {
      return exec_->run(feeds);
    } catch (const Unsupported& e) {
      throw Unsupported(cat(ctx.node().describe(), ": ", attr_, where.empty() ? "" : ", ", where,
                            ": ", e.what()),
                        e.key());
    } catch (const Error& e) {
      ctx.fail(cat(attr_, where.empty() ? "" : ", ", where, ": ", e.what()));
    }
  }

  // What the subgraph declares for output k: dtype and dims (unknown dims as 0), for the empty
  // scan outputs of a loop without iterations. Throws when the dtype is not known.
  std::pair<DType, Shape> declared_output(const KernelContext& ctx, size_t k) const {
    const ValueInfo& out = graph_->outputs[k];
    const ValueInfo* vi = &out;
    if ((out.dtype == DType::Undefined || !out.shape) && graph_->value_info.count(out.name))
      vi = &graph_->value_info.at(out.name);
    const DType dtype = out.dtype != DType::Undefined ? out.dtype : vi->dtype;
    if (dtype == DType::Undefined)
      ctx.fail(cat("ran no iteration, and ", attr_, " output '", out.name,
                   "' declares no element type to make its empty scan output with"));
    Shape dims;
    const auto& shape = out.shape ? out.shape : vi->shape;
    if (shape)
      for (const Dim& d : *shape) dims.push_back(d.fixed() ? d.value : 0);
    return {dtype, dims};
  }

 private:
  std::string attr_;
  const Graph* graph_ = nullptr;
  std::vector<std::string> outer_;  // the outer values it reads
  std::vector<int> outer_input_;    // the node input that carries each
  Graph run_graph_;                 // what exec_ runs (declared inputs, then outer_)
  std::unique_ptr<Executor> exec_;
};

// Node inputs the model wrote (without the implicit ones).
size_t declared_inputs(const Node& n) { return n.inputs.size() - num_implicit_inputs(n); }

// The scan elements of one output: all of one shape and dtype, checked as they arrive.
void append_element(const KernelContext& ctx, std::vector<Tensor>& elems, Tensor e,
                    const std::string& what, int64_t iteration) {
  if (!elems.empty() &&
      (e.shape() != elems.front().shape() || e.dtype() != elems.front().dtype()))
    ctx.fail(cat(what, ": iteration ", iteration, " gave ", dtype_name(e.dtype()), " ",
                 shape_str(e.shape()), ", the first gave ", dtype_name(elems.front().dtype()), " ",
                 shape_str(elems.front().shape()), " (scan elements must keep their shape)"));
  elems.push_back(std::move(e));
}

// ---- If ----

class IfKernel : public OpKernel {
 public:
  explicit IfKernel(const Node& n) : then_(n, "then_branch"), else_(n, "else_branch") {
    if (then_.num_outputs() != else_.num_outputs())
      throw Error(cat(n.describe(), ": then_branch has ", then_.num_outputs(),
                      " outputs, else_branch ", else_.num_outputs()));
    if (n.outputs.size() > then_.num_outputs())
      throw Error(cat(n.describe(), ": the node has ", n.outputs.size(),
                      " outputs, its branches ", then_.num_outputs()));
  }

  void compute(KernelContext& ctx) override {
    const bool cond = condition_value(ctx, ctx.input(0), "cond");
    Subgraph& branch = cond ? then_ : else_;
    std::vector<Tensor> outs = branch.run(ctx, {}, "");
    for (int i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.output_requested(i)) ctx.set_output(i, std::move(outs[static_cast<size_t>(i)]));
  }

 private:
  Subgraph then_, else_;
};

// ---- Loop ----

class LoopKernel : public OpKernel {
 public:
  explicit LoopKernel(const Node& n) : body_(n, "body") {
    const size_t declared = declared_inputs(n);
    if (declared < 2)
      throw Error(cat(n.describe(), ": Loop takes M and cond (either may be \"\") before its ",
                      "loop-carried values; the node has ", declared, " inputs"));
    carried_ = declared - 2;
    if (body_.num_inputs() != 2 + carried_)
      throw Error(cat(n.describe(), ": body has ", body_.num_inputs(), " inputs, expected ",
                      2 + carried_, " (iteration_num, cond and the ", carried_,
                      " loop-carried values)"));
    if (body_.num_outputs() < 1 + carried_)
      throw Error(cat(n.describe(), ": body has ", body_.num_outputs(), " outputs, expected cond, ",
                      "the ", carried_, " loop-carried values and any scan outputs"));
    scans_ = body_.num_outputs() - 1 - carried_;
    if (n.outputs.size() > carried_ + scans_)
      throw Error(cat(n.describe(), ": the node has ", n.outputs.size(), " outputs, its body gives ",
                      carried_, " loop-carried values and ", scans_, " scan outputs"));
  }

  void compute(KernelContext& ctx) override {
    int64_t trip_count = std::numeric_limits<int64_t>::max();
    if (const Tensor* m = ctx.input_or_null(0)) {
      if (m->dtype() != DType::I64 || m->numel() != 1)
        ctx.fail(cat("M must be an int64 tensor of one element, got ", dtype_name(m->dtype()), " ",
                     shape_str(m->shape())));
      trip_count = m->data<int64_t>()[0];
    }
    bool cond = true;
    if (const Tensor* c = ctx.input_or_null(1)) cond = condition_value(ctx, *c, "cond");
    std::vector<Tensor> v;
    for (size_t j = 0; j < carried_; ++j) v.push_back(ctx.input(static_cast<int>(2 + j)));
    std::vector<std::vector<Tensor>> scan(scans_);

    int64_t i = 0;
    for (; i < trip_count && cond; ++i) {
      std::vector<Tensor> in;
      in.reserve(2 + carried_);
      in.push_back(Tensor::scalar<int64_t>(i));
      in.push_back(Tensor::scalar<bool>(cond));
      for (Tensor& t : v) in.push_back(std::move(t));
      std::vector<Tensor> out = body_.run(ctx, std::move(in), cat("iteration ", i));
      cond = condition_value(ctx, out[0], cat("body output cond (iteration ", i, ")"));
      for (size_t j = 0; j < carried_; ++j) v[j] = std::move(out[1 + j]);
      for (size_t k = 0; k < scans_; ++k)
        append_element(ctx, scan[k], std::move(out[1 + carried_ + k]),
                       cat("scan output ", k, " '", body_.graph().outputs[1 + carried_ + k].name, "'"),
                       i);
    }

    for (size_t j = 0; j < carried_; ++j)
      if (ctx.output_requested(static_cast<int>(j))) ctx.set_output(static_cast<int>(j), v[j]);
    for (size_t k = 0; k < scans_; ++k) {
      const int o = static_cast<int>(carried_ + k);
      if (!ctx.output_requested(o)) continue;
      if (scan[k].empty()) {
        auto [dtype, dims] = body_.declared_output(ctx, 1 + carried_ + k);
        dims.insert(dims.begin(), 0);
        ctx.set_output(o, Tensor(dtype, dims));
      } else {
        ctx.set_output(o, stack(scan[k], 0, false, static_cast<int64_t>(scan[k].size())));
      }
    }
  }

 private:
  Subgraph body_;
  size_t carried_ = 0, scans_ = 0;
};

// ---- Scan ----

// An attribute list of `count` entries (default `def` each), checked for size.
std::vector<int64_t> list_attr(const Node& n, const char* name, size_t count, int64_t def) {
  std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(count, def));
  if (v.size() != count)
    throw Error(cat(n.describe(), ": attribute ", name, " has ", v.size(), " entries, expected ",
                    count));
  return v;
}

void check_directions(const Node& n, const char* name, const std::vector<int64_t>& d) {
  for (int64_t x : d)
    if (x != 0 && x != 1)
      throw Error(cat(n.describe(), ": attribute ", name, " holds ", x, " (0 forward, 1 reverse)"));
}

class ScanKernel : public OpKernel {
 public:
  explicit ScanKernel(const Node& n) : body_(n, "body"), batched_(n.opset < 9) {
    const int64_t m = n.attr_int("num_scan_inputs", -1);
    const size_t first = batched_ ? 1 : 0;  // Scan 8: sequence_lens
    const size_t declared = declared_inputs(n);
    if (m < 1 || declared < first + static_cast<size_t>(m))
      throw Error(cat(n.describe(), ": num_scan_inputs = ", m, " does not fit the node's ",
                      declared - std::min(declared, first), " state and scan inputs"));
    scan_in_ = static_cast<size_t>(m);
    states_ = declared - first - scan_in_;
    if (body_.num_inputs() != states_ + scan_in_)
      throw Error(cat(n.describe(), ": body has ", body_.num_inputs(), " inputs, expected ",
                      states_, " states + ", scan_in_, " scan inputs"));
    if (body_.num_outputs() < states_)
      throw Error(cat(n.describe(), ": body has ", body_.num_outputs(), " outputs, fewer than its ",
                      states_, " states"));
    scan_out_ = body_.num_outputs() - states_;
    if (n.outputs.size() > states_ + scan_out_)
      throw Error(cat(n.describe(), ": the node has ", n.outputs.size(), " outputs, its body gives ",
                      states_ + scan_out_));
    if (batched_) {
      in_dirs_ = list_attr(n, "directions", scan_in_, 0);
      check_directions(n, "directions", in_dirs_);
      in_axes_.assign(scan_in_, 0);  // per batch entry, the sequence axis is the first
      out_axes_.assign(scan_out_, 0);
      out_dirs_.assign(scan_out_, 0);
    } else {
      in_axes_ = list_attr(n, "scan_input_axes", scan_in_, 0);
      in_dirs_ = list_attr(n, "scan_input_directions", scan_in_, 0);
      out_axes_ = list_attr(n, "scan_output_axes", scan_out_, 0);
      out_dirs_ = list_attr(n, "scan_output_directions", scan_out_, 0);
      check_directions(n, "scan_input_directions", in_dirs_);
      check_directions(n, "scan_output_directions", out_dirs_);
    }
  }

  void compute(KernelContext& ctx) override {
    if (batched_) return compute_batched(ctx);
    std::vector<Tensor> s, x;
    for (size_t j = 0; j < states_; ++j) s.push_back(ctx.input(static_cast<int>(j)));
    for (size_t j = 0; j < scan_in_; ++j) x.push_back(ctx.input(static_cast<int>(states_ + j)));
    std::vector<int> axes;
    int64_t steps = -1;
    for (size_t j = 0; j < scan_in_; ++j) {
      const int r = x[j].rank();
      const int64_t a = in_axes_[j] < 0 ? in_axes_[j] + r : in_axes_[j];
      if (a < 0 || a >= r)
        ctx.fail(cat("scan_input_axes[", j, "] = ", in_axes_[j], " is outside scan input ", j,
                     " of shape ", shape_str(x[j].shape())));
      axes.push_back(static_cast<int>(a));
      if (steps >= 0 && x[j].dim(static_cast<int>(a)) != steps)
        ctx.fail(cat("scan inputs differ in length: ", steps, " and ", x[j].dim(static_cast<int>(a)),
                     " (scan input ", j, " ", shape_str(x[j].shape()), ")"));
      steps = x[j].dim(static_cast<int>(a));
    }
    std::vector<std::vector<Tensor>> y(scan_out_);
    run_sequence(ctx, s, x, axes, steps, y, "");
    for (size_t j = 0; j < states_; ++j)
      if (ctx.output_requested(static_cast<int>(j))) ctx.set_output(static_cast<int>(j), s[j]);
    for (size_t k = 0; k < scan_out_; ++k) {
      const int o = static_cast<int>(states_ + k);
      if (!ctx.output_requested(o)) continue;
      Shape elem;
      DType dtype;
      if (y[k].empty()) std::tie(dtype, elem) = body_.declared_output(ctx, states_ + k);
      else dtype = y[k].front().dtype(), elem = y[k].front().shape();
      const int r = static_cast<int>(elem.size()) + 1;
      const int64_t a = out_axes_[k] < 0 ? out_axes_[k] + r : out_axes_[k];
      if (a < 0 || a >= r)
        ctx.fail(cat("scan_output_axes[", k, "] = ", out_axes_[k], " is outside scan output ", k,
                     " of rank ", r));
      if (y[k].empty()) {
        elem.insert(elem.begin() + a, 0);
        ctx.set_output(o, Tensor(dtype, elem));
      } else {
        ctx.set_output(o, stack(y[k], static_cast<int>(a), out_dirs_[k] != 0, steps));
      }
    }
  }

 private:
  // Runs the body over the first `length` elements of the scan inputs x along `axes` (reverse
  // directions start at length-1): states s in place, scan elements appended to y.
  void run_sequence(KernelContext& ctx, std::vector<Tensor>& s, const std::vector<Tensor>& x,
                    const std::vector<int>& axes, int64_t length,
                    std::vector<std::vector<Tensor>>& y, const std::string& where) {
    for (int64_t t = 0; t < length; ++t) {
      std::vector<Tensor> in;
      in.reserve(states_ + scan_in_);
      for (Tensor& v : s) in.push_back(std::move(v));
      for (size_t j = 0; j < scan_in_; ++j)
        in.push_back(select_index(x[j], axes[j], in_dirs_[j] ? length - 1 - t : t));
      std::vector<Tensor> out = body_.run(ctx, std::move(in), cat(where, "iteration ", t));
      for (size_t j = 0; j < states_; ++j) s[j] = std::move(out[j]);
      for (size_t k = 0; k < scan_out_; ++k)
        append_element(ctx, y[k], std::move(out[states_ + k]),
                       cat(where, "scan output ", k, " '", body_.graph().outputs[states_ + k].name, "'"),
                       t);
    }
  }

  // Scan 8: batch axis 0, sequence axis 1, optional sequence_lens.
  void compute_batched(KernelContext& ctx) {
    std::vector<Tensor> s0, x;
    for (size_t j = 0; j < states_; ++j) s0.push_back(ctx.input(static_cast<int>(1 + j)));
    for (size_t j = 0; j < scan_in_; ++j) x.push_back(ctx.input(static_cast<int>(1 + states_ + j)));
    int64_t batch = -1, steps = -1;
    auto check_batch = [&](const Tensor& t, const std::string& what, int min_rank) {
      if (t.rank() < min_rank)
        ctx.fail(cat(what, " has shape ", shape_str(t.shape()), ", needs ", min_rank == 1 ?
                     "a batch axis" : "a batch and a sequence axis"));
      if (batch >= 0 && t.dim(0) != batch)
        ctx.fail(cat(what, " has batch ", t.dim(0), ", other inputs ", batch));
      batch = t.dim(0);
    };
    for (size_t j = 0; j < states_; ++j) check_batch(s0[j], cat("state ", j), 1);
    for (size_t j = 0; j < scan_in_; ++j) {
      check_batch(x[j], cat("scan input ", j), 2);
      if (steps >= 0 && x[j].dim(1) != steps)
        ctx.fail(cat("scan inputs differ in length: ", steps, " and ", x[j].dim(1)));
      steps = x[j].dim(1);
    }
    std::vector<int64_t> lens(static_cast<size_t>(batch), steps);
    if (const Tensor* sl = ctx.input_or_null(0)) {
      if (sl->dtype() != DType::I64 || sl->numel() != batch)
        ctx.fail(cat("sequence_lens must be int64 with one entry per batch entry (", batch,
                     "), got ", dtype_name(sl->dtype()), " ", shape_str(sl->shape())));
      for (int64_t b = 0; b < batch; ++b) {
        lens[static_cast<size_t>(b)] = sl->data<int64_t>()[b];
        if (lens[static_cast<size_t>(b)] < 1 || lens[static_cast<size_t>(b)] > steps)
          ctx.fail(cat("sequence_lens[", b, "] = ", lens[static_cast<size_t>(b)],
                       " is outside 1..", steps));
      }
    }
    std::vector<std::vector<Tensor>> s_out(states_);
    std::vector<std::vector<Tensor>> y_out(scan_out_);  // per batch entry: [steps, ...]
    const std::vector<int> axes(scan_in_, 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> s, xb;
      for (const Tensor& t : s0) s.push_back(select_index(t, 0, b));
      for (const Tensor& t : x) xb.push_back(select_index(t, 0, b));
      std::vector<std::vector<Tensor>> y(scan_out_);
      const std::string where = cat("batch entry ", b, ", ");
      run_sequence(ctx, s, xb, axes, lens[static_cast<size_t>(b)], y, where);
      for (size_t j = 0; j < states_; ++j)
        append_element(ctx, s_out[j], std::move(s[j]), cat("state ", j), b);
      for (size_t k = 0; k < scan_out_; ++k)
        append_element(ctx, y_out[k], stack(y[k], 0, false, steps),
                       cat(where, "scan output ", k), b);
    }
    for (size_t j = 0; j < states_; ++j) {
      const int o = static_cast<int>(j);
      if (!ctx.output_requested(o)) continue;
      if (batch == 0) ctx.set_output(o, Tensor(s0[j].dtype(), s0[j].shape()));
      else ctx.set_output(o, stack(s_out[j], 0, false, batch));
    }
    for (size_t k = 0; k < scan_out_; ++k) {
      const int o = static_cast<int>(states_ + k);
      if (!ctx.output_requested(o)) continue;
      if (batch == 0) {
        auto [dtype, dims] = body_.declared_output(ctx, states_ + k);
        dims.insert(dims.begin(), {0, steps});
        ctx.set_output(o, Tensor(dtype, dims));
      } else {
        ctx.set_output(o, stack(y_out[k], 0, false, batch));
      }
    }
  }

  Subgraph body_;
  bool batched_;  // opset 8
  size_t states_ = 0, scan_in_ = 0, scan_out_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

// ---- SequenceMap ----
// SequenceMap(S, A₁..Aₖ; body) -> Y₁..Yₘ: body runs once per item i of S; it reads S[i], and
// for each Aⱼ, Aⱼ[i] when Aⱼ is a sequence (of S's length) or Aⱼ itself when a tensor. Output
// sequence Yₒ collects body output o of every run (its element type from the body's declaration
// when S is empty).

class SequenceMapKernel : public OpKernel {
 public:
  explicit SequenceMapKernel(const Node& n) : body_(n, "body") {
    const size_t declared = declared_inputs(n);
    if (body_.num_inputs() != declared)
      throw Error(
          cat(n.describe(), ": body has ", body_.num_inputs(), " inputs, the node ", declared));
    if (n.outputs.size() > body_.num_outputs())
      throw Error(cat(n.describe(), ": the node has ", n.outputs.size(), " outputs, its body ",
                      body_.num_outputs()));
  }

  void compute(KernelContext& ctx) override {
    const size_t declared = declared_inputs(ctx.node());
    const Tensor& s = ctx.input(0);
    if (s.kind() != ValueKind::Sequence)
      ctx.fail(cat("input 0 must be a sequence, got a ", s.describe()));
    const size_t n = s.items().size();
    for (size_t j = 1; j < declared; ++j) {
      const Tensor& a = ctx.input(static_cast<int>(j));
      if (a.kind() == ValueKind::Sequence && a.items().size() != n)
        ctx.fail(cat("input ", j, " is a sequence of ", a.items().size(), ", input 0 of ", n));
      if (a.kind() == ValueKind::Optional) ctx.fail(cat("input ", j, " is an optional"));
    }
    std::vector<std::vector<Tensor>> ys(body_.num_outputs());
    for (size_t i = 0; i < n; ++i) {
      std::vector<Tensor> in;
      for (size_t j = 0; j < declared; ++j) {
        const Tensor& a = ctx.input(static_cast<int>(j));
        in.push_back(a.kind() == ValueKind::Sequence ? a.items()[i] : a);
      }
      std::vector<Tensor> out = body_.run(ctx, std::move(in), cat("item ", i));
      for (size_t o = 0; o < ys.size(); ++o) ys[o].push_back(std::move(out[o]));
    }
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      if (!ctx.output_requested(o)) continue;
      auto& items = ys[static_cast<size_t>(o)];
      DType elem = items.empty() ? DType::Undefined : items.front().dtype();
      if (items.empty()) {
        const ValueInfo& out = body_.graph().outputs[static_cast<size_t>(o)];
        elem = out.dtype;
        if (elem == DType::Undefined && body_.graph().value_info.count(out.name))
          elem = body_.graph().value_info.at(out.name).dtype;
      }
      for (size_t i = 0; i < items.size(); ++i)
        if (!items[i].is_tensor() || items[i].dtype() != elem)
          ctx.fail(cat("body output ", o, " of item ", i, " is a ", items[i].describe(),
                       "; the output sequence holds tensors of ", dtype_name(elem)));
      ctx.set_output(o, Tensor::sequence(elem, std::move(items)));
    }
  }

 private:
  Subgraph body_;
};

}  // namespace

void register_control_flow(KernelRegistry& r) {
  r.add(OpId::SequenceMap, Device::CPU, kAnyDType, kernel_factory<SequenceMapKernel>());
  r.add(OpId::If, Device::CPU, kAnyDType, kernel_factory<IfKernel>());
  r.add(OpId::Loop, Device::CPU, kAnyDType, kernel_factory<LoopKernel>());
  r.add(OpId::Scan, Device::CPU, kAnyDType, kernel_factory<ScanKernel>());
}

}  // namespace oat::cpu
