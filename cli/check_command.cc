#include "cli/check_command.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <set>

#include "cli/train_commands.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/composite.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "runtime/threads.h"
#include "train/check.h"
#include "train/data/batches.h"
#include "train/data/idx.h"
#include "train/trainer.h"

namespace oat::cli {

namespace fs = std::filesystem;

CheckCommand::CheckCommand(CLI::App& app) {
  cmd_ = app.add_subcommand(
      "check",
      "Run one batch through the mixed-precision path (CUDA, or the CPU F16/BF16 kernels when no "
      "device answers) and the CPU FP32 reference; per node, output and gradient errors against "
      "a tolerance set by its precision; exit 1 when a node is out of tolerance");
  cmd_->add_option("model", o_.model, "ONNX model file")->required();
  cmd_->add_option("--precision", o_.precision, "fp16 | bf16 | fp32 (the checked path's)")
      ->check(CLI::IsMember({"fp16", "bf16", "fp32"}));
  cmd_->add_option("--batch", o_.batch, "Batch size (dynamic dimensions of random inputs)")
      ->check(CLI::PositiveNumber);
  cmd_->add_option("--device", o_.device,
                   "auto (cuda when a device answers, else the CPU mixed path) | cpu | cuda "
                   "(fails without a device)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd_->add_option("--data", o_.data,
                   "random (N(0,1) inputs, or uniform ids below the embedding's size for an "
                   "integer input; uniform labels; by --seed), an IDX folder, fashion-mnist (its "
                   "first training batch) or X.npy (its first inputs, random labels)");
  cmd_->add_option("--input", o_.inputs,
                   "NAME=FILE.npy: the batch of the model input NAME (its first --batch samples), "
                   "repeatable. Without it: random ids for an integer input a Gather indexes, "
                   "all ones for a bool/integer input whose name contains 'mask', else an error")
      ->allow_extra_args(false);
  cmd_->add_option("--normalize", o_.normalize, "MEAN,STD as for train (IDX data)")
      ->delimiter(',')
      ->expected(2);
  cmd_->add_option("--seed", o_.seed, "Seed of the random batch");
  cmd_->add_option("--loss", o_.loss,
                   "cross-entropy | mse | l1 | bce-with-logits | model (default: cross-entropy; mse "
                   "for an output with one unit on its class axis)")
      ->check(CLI::IsMember({"cross-entropy", "mse", "l1", "bce-with-logits", "model"}));
  add_label_options(cmd_, o_.labels);
  cmd_->add_option("--loss-scale", o_.loss_scale,
                   "Backward seed of both paths (default: 65536 for fp16, halved while the "
                   "gradients overflow; 1 otherwise)")
      ->check(CLI::PositiveNumber);
  cmd_->add_option("--rtol-fp32", o_.rtol_fp32,
                   "Tolerance of FP32 nodes (local rel; default 1e-4, 1e-3 on CUDA)");
  cmd_->add_option("--rtol-fp16", o_.rtol_fp16, "Tolerance of FP16 nodes (default 1e-2)");
  cmd_->add_option("--rtol-bf16", o_.rtol_bf16, "Tolerance of BF16 nodes (default 8e-2)");
  cmd_->add_option("--op-lists", o_.op_lists,
                   "JSON file moving ops between the allow/deny/infer/clear lists");
  cmd_->add_option("--fp32-nodes", o_.fp32_nodes, "Forward nodes kept in FP32")->delimiter(',');
  cmd_->add_option("--fp16-nodes", o_.fp16_nodes, "Forward nodes run in the low precision")
      ->delimiter(',');
  cmd_->add_flag("--no-out-of-range-fp32", o_.no_out_of_range_fp32,
                 "fp16: paint Mul/Div nodes reading a constant with max |x| < 6.1e-5, and "
                 "nodes reading one with max |x| > 65504, like any other (by default "
                 "they stay fp32)");
  cmd_->add_flag("--forward-only", o_.forward_only,
                 "No loss and no backward pass: the inference model (as `convert` writes it, "
                 "FP32 inputs/outputs) against the FP32 model, node by node, and each output. "
                 "Chosen by itself for a model with no float initializer or a non-float output");
  cmd_->add_option("--json", o_.json, "Also write the report as JSON to this file");
  cmd_->add_option("--threads", o_.threads, "CPU threads (0: all cores)");
  cmd_->add_option("--inject-error", o_.inject_error,
                   "Test hook: multiply the checked path's outputs of this node by 1.25")
      ->group("");
}

int CheckCommand::run() const { return run_check(o_); }

namespace {

// Every float output of the node, multiplied by 1.25 in place (the executor's own values).
void scale_in_place(Tensor& t, float factor) {
  if (!is_floating(t.dtype()) || t.device() != Device::CPU || !t.raw_data()) return;
  Tensor f = cast_tensor(t, DType::F32);
  float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] *= factor;
  Tensor back = cast_tensor(f, t.dtype());
  std::memcpy(t.raw_data(), back.raw_data(), t.nbytes());
}

// Uniform ids in [0, bound) of an integer type (check's random token ids).
Tensor random_ids(DType dt, const Shape& shape, int64_t bound, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> id(0, bound - 1);
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DType::I64) t.data<int64_t>()[i] = id(rng);
    else if (dt == DType::I32) t.data<int32_t>()[i] = static_cast<int32_t>(id(rng));
    else t.data<uint8_t>()[i] = static_cast<uint8_t>(id(rng));  // I8, U8 (bound <= 256 assumed)
  }
  return t;
}

bool name_has_mask(const std::string& name) {
  std::string low = name;
  for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return low.find("mask") != std::string::npos;
}

// The model's other inputs for a batch of n samples: --input NAME=FILE.npy (its first n rows),
// else the defaults PyTorch/HF exports expect: random ids below the table size for an integer
// input a Gather indexes (as the data input's), all ones for a bool/integer input whose name
// contains "mask" (attention_mask: nothing is padding), else an error asking for --input. A
// symbolic non-batch dimension takes the data input's size at that axis (the sequence length).
std::map<std::string, Tensor> check_extra_inputs(std::map<std::string, Tensor> given,
                                                 const train::BatchLayout& layout,
                                                 const Tensor& input, std::mt19937_64& rng,
                                                 std::map<std::string, std::string>& how) {
  const int64_t n = input.dim(0);
  std::map<std::string, Tensor> r;
  for (auto& [name, t] : given) {
    const train::ExtraInput* scalar = nullptr;
    for (const train::ExtraInput& e : layout.extra_inputs)
      if (e.name == name && e.scalar) scalar = &e;
    if (scalar) {  // one value for the whole batch (train/data/batches.h ExtraInput::scalar)
      train::BatchLayout one;
      one.require_finite = false;  // run_check's, once it knows the check is not forward only
      one.extra_inputs.push_back(*scalar);
      train::check_extra_inputs({{name, t}}, 1, one, "check", "--input");
      const Tensor v = t.reshaped({});
      r[name] = v.dtype() == scalar->dtype ? v : cast_tensor(v, scalar->dtype);
      how[name] = "--input";
      continue;
    }
    if (t.rank() < 1 || t.dim(0) < n)
      throw Error(cat("--input ", name, "=...: ", t.rank() < 1 ? 0 : t.dim(0),
                      " samples, the batch needs ", n, " (", shape_str(t.shape()), ")"));
    std::map<std::string, Tensor> d = {{name, t}};
    train::BatchLayout one;
    one.require_finite = false;
    for (const train::ExtraInput& e : layout.extra_inputs)
      if (e.name == name) one.extra_inputs.push_back(e);
    if (one.extra_inputs.empty()) {  // unknown name: check_extra_inputs names the inputs
      train::check_extra_inputs(given, t.dim(0), layout, "check", "--input");
      continue;
    }
    // The kind and shape first (on the whole file), then its first n rows.
    train::check_extra_inputs(d, t.dim(0), one, "check", "--input");
    Shape s = t.shape();
    s[0] = n;
    Tensor rows(t.dtype(), s);
    std::memcpy(rows.raw_data(), t.raw_data(), rows.nbytes());
    r[name] = rows.dtype() == one.extra_inputs[0].dtype ? rows
                                                        : cast_tensor(rows, one.extra_inputs[0].dtype);
    how[name] = "--input";
  }
  for (const train::ExtraInput& e : layout.extra_inputs) {
    if (r.count(e.name)) continue;
    const bool integer = is_integer(e.dtype);
    std::string why;
    if (!e.shape_known) why = "its shape is not declared";
    Shape s = e.scalar ? Shape{} : Shape{n};
    for (size_t d = 0; why.empty() && d < e.sample_shape.size(); ++d) {
      int64_t v = e.sample_shape[d];
      if (v < 0) {
        if (static_cast<int64_t>(d) + 1 < input.rank()) v = input.dim(static_cast<int64_t>(d) + 1);
        else why = cat("its dimension ", d + 1, " is symbolic and the data input has no such axis");
      }
      s.push_back(v);
    }
    if (why.empty() && integer && e.bound > 0) {
      r[e.name] = random_ids(e.dtype, s, e.bound, rng);
      how[e.name] = cat("random ids in [0, ", e.bound, ")");
    } else if (why.empty() && (integer || e.dtype == DType::Bool) && name_has_mask(e.name)) {
      Tensor ones(DType::F32, s);
      for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
      r[e.name] = cast_tensor(ones, e.dtype);
      how[e.name] = "all ones: a mask by its name";
    } else if (why.empty() && is_floating(e.dtype) && !name_has_mask(e.name)) {
      // Another float input (a Keras functional model's second input): N(0, 1) like the data
      // input. A float *mask* has no safe default (additive 0/-inf or multiplicative 0/1).
      std::normal_distribution<float> normal(0.0f, 1.0f);
      Tensor v(DType::F32, s);
      for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = normal(rng);
      r[e.name] = cast_tensor(v, e.dtype);
      how[e.name] = "random N(0,1), like the data input";
    } else {
      if (why.empty())
        why = "no default: not integer ids a Gather bounds, not a bool/integer input named "
              "*mask*, not a float input other than a mask";
      std::string shape = "[N";
      for (int64_t v : e.sample_shape) shape += v < 0 ? std::string(", ?") : cat(", ", v);
      throw Error(cat("the model's input '", e.name, "' (", dtype_name(e.dtype), " ",
                      e.shape_known ? shape + "]" : std::string("[N, ...]"), ") has ", why,
                      ": give it with --input ", e.name, "=FILE.npy"));
    }
  }
  return r;
}

// The batch: the first --batch samples of --data, or random inputs and uniform labels. Random
// inputs are N(0,1) floats, or for an integer (token id) input uniform ids in [0, bound), bound
// the size of the table a Gather indexes with them. Cross-entropy labels have the output's
// shape without the class axis; where the declared output shape leaves that open, the model
// runs once on the input to see it. `labels` comes back with the class axis fixed, `axis_line`
// says how it was chosen.
void make_check_batch(const CheckCommandOptions& o, const Graph& g, train::LossKind loss,
                      train::LabelOptions& labels, std::string& axis_line, Tensor& input,
                      Tensor& target, std::map<std::string, Tensor>& extra,
                      std::map<std::string, std::string>& how, std::string& source) {
  const ValueInfo& out = loss_output(g, o.labels);
  train::BatchLayout layout = train::layout_for(g, loss, out.name, labels);
  apply_normalize(o.normalize, layout);
  // Non-finite values are refused by run_check once it knows the check is not forward only.
  layout.require_finite = false;
  const ValueInfo& in = train::data_input_of(g);
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // --input NAME=FILE.npy: the data input's (as --data X.npy) or another input's batch.
  std::map<std::string, Tensor> given = read_named_inputs(o.inputs, "--input");
  Tensor data_npy;
  std::string data_src = o.data;
  source = o.data == "random" ? cat("random, seed ", o.seed) : cat("first batch of ", o.data);
  if (auto it = given.find(in.name); it != given.end()) {
    if (o.data != "random")
      throw Error(cat("--input ", in.name, "=... and --data ", o.data, " both give the data input '",
                      in.name, "'"));
    data_npy = it->second;
    data_src = cat("--input ", in.name);
    source = cat("first batch of ", data_src);
    given.erase(it);
  }
  const bool npy = data_npy.defined() ||
                   (o.data.size() > 4 && o.data.compare(o.data.size() - 4, 4, ".npy") == 0);
  if (npy) {
    // Inputs from the file (labels random below).
    train::Dataset d{data_npy.defined() ? data_npy : onnx_loader::read_npy(o.data), Tensor()};
    if (d.inputs.rank() < 1 || d.size() == 0) throw Error(cat(data_src, ": no samples"));
    // Placeholder labels [N] of 0: only the inputs are checked and cut here.
    d.targets = Tensor::zeros(DType::I64, {d.size()});
    train::BatchLayout inputs_only = layout;
    inputs_only.target_dtype = DType::I64;
    inputs_only.target_shape = {};
    inputs_only.num_classes = 0;
    inputs_only.extra_inputs.clear();  // checked by check_extra_inputs below
    train::fit_sample_shape(inputs_only, d.inputs, data_src);
    train::check_dataset(d, inputs_only, data_npy.defined() ? data_src : cat("--data ", o.data));
    const int64_t n = std::min<int64_t>(o.batch, d.size());
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; ++i) idx[i] = i;
    input = train::make_batch(d, inputs_only, idx, 0, n).inputs;
  } else if (o.data != "random") {
    std::string dir = train::named_dataset_dir(o.data);
    if (dir.empty()) dir = o.data;
    if (!fs::is_directory(dir))
      throw Error(cat("--data ", o.data, ": not 'random', a folder, an .npy file or a known "
                      "dataset name (fashion-mnist)"));
    train::IdxFolder f = train::load_idx_folder(dir);
    train::Dataset d{f.train.images, f.train.labels};
    train::BatchLayout data_only = layout;
    data_only.extra_inputs.clear();  // checked by check_extra_inputs below
    train::fit_sample_shape(data_only, d.inputs, cat("--data ", o.data));
    train::check_dataset(d, data_only, cat("--data ", o.data));
    const int64_t n = std::min<int64_t>(o.batch, d.size());
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; ++i) idx[i] = i;
    train::Batch b = train::make_batch(d, data_only, idx, 0, n);
    input = b.inputs;
    target = b.targets;
    extra = check_extra_inputs(given, layout, input, rng, how);
    if (loss == train::LossKind::CrossEntropy)
      labels.class_axis = layout.class_axis;
    return;
  } else {
    Shape xs = {o.batch};
    xs.insert(xs.end(), layout.sample_shape.begin(), layout.sample_shape.end());
    for (size_t d = 1; d < xs.size(); ++d)
      if (xs[d] < 0)
        throw Error(cat("input '", in.name, "' has shape ", in.shape_string(), ": dimension ", d,
                        " is symbolic, so check cannot size a random batch: give one with --input ",
                        in.name, "=FILE.npy (or --data X.npy)"));
    if (is_integer(layout.input_dtype)) {
      if (layout.input_bound <= 0)
        throw Error(cat("input '", in.name, "' takes ", dtype_name(layout.input_dtype),
                        " ids, but no Gather of a table of known size consumes it, so check "
                        "cannot make random ids: give --data IDS.npy"));
      input = random_ids(layout.input_dtype, xs, layout.input_bound, rng);
    } else {
      input = Tensor(DType::F32, xs);
      for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = normal(rng);
    }
  }
  extra = check_extra_inputs(given, layout, input, rng, how);
  if (loss == train::LossKind::Model) return;
  if (loss == train::LossKind::CrossEntropy) {
    const train::ClassAxis ca = train::resolve_class_axis(out, labels);
    axis_line = ca.why;
    labels.class_axis = ca.axis;
    // The labels' shape: the output's without the class axis. Where the declared shape leaves
    // a dimension (or the class count) open, the model runs once to see it.
    Shape out_shape = {input.dim(0)};
    bool known = out.shape.has_value();
    if (known)
      for (size_t d = 1; d < out.shape->size(); ++d) {
        known = known && (*out.shape)[d].fixed();
        out_shape.push_back((*out.shape)[d].value);
      }
    if (!known) {
      Executor exec(g);
      std::map<std::string, Tensor> feeds = extra;
      feeds[in.name] = input;
      std::vector<Tensor> outs = exec.run(feeds);
      out_shape = outs.at(layout.output_index).shape();
    }
    if (static_cast<int64_t>(out_shape.size()) != ca.rank)
      throw Error(cat("output '", out.name, "' is ", shape_str(out_shape),
                      " when run, not of rank ", ca.rank));
    const int64_t classes = out_shape[static_cast<size_t>(ca.axis)];
    if (classes <= 0)
      throw Error(cat("output '", out.name, "' is ", shape_str(out_shape),
                      ": no classes at axis ", ca.axis));
    Shape ls = out_shape;
    ls.erase(ls.begin() + ca.axis);
    std::uniform_int_distribution<int64_t> label(0, classes - 1);
    target = Tensor(DType::I64, ls);
    for (int64_t i = 0; i < target.numel(); ++i) target.data<int64_t>()[i] = label(rng);
    return;
  }
  Shape ts = {input.dim(0)};
  ts.insert(ts.end(), layout.target_shape.begin(), layout.target_shape.end());
  target = Tensor(DType::F32, ts);
  for (int64_t i = 0; i < target.numel(); ++i)
    target.data<float>()[i] = loss == train::LossKind::BCEWithLogits ? (normal(rng) > 0 ? 1.0f : 0.0f)
                                                                     : normal(rng);
}

}  // namespace

int run_check(const CheckCommandOptions& o) {
  set_num_threads(o.threads);
  train::CheckOptions c;
  c.precision = o.precision == "fp16" ? DType::F16 : o.precision == "bf16" ? DType::BF16 : DType::F32;
  std::string why_cpu;
  if (o.device == "cuda") {
    cuda::require_device();
    c.device = Device::CUDA;
  } else if (o.device == "cpu") {
    why_cpu = "--device cpu";
  } else if (cuda::device_count() > 0) {
    c.device = Device::CUDA;
  } else {
    why_cpu = cat("no CUDA device: ", cuda::describe_device(0));
  }
  c.loss_scale = o.loss_scale;
  if (o.rtol_fp32 >= 0) c.tol.fp32 = c.tol.fp32_cuda = o.rtol_fp32;
  if (o.rtol_fp16 >= 0) c.tol.fp16 = o.rtol_fp16;
  if (o.rtol_bf16 >= 0) c.tol.bf16 = o.rtol_bf16;
  if (c.precision == DType::F32 && (!o.op_lists.empty() || !o.fp32_nodes.empty() ||
                                    !o.fp16_nodes.empty() || o.no_out_of_range_fp32))
    throw Error(
        "--op-lists, --fp32-nodes, --fp16-nodes and --no-out-of-range-fp32 need --precision fp16 "
        "or bf16");
  c.op_lists = o.op_lists;
  c.fp32_nodes = o.fp32_nodes;
  c.low_nodes = o.fp16_nodes;
  c.out_of_range_fp32 = !o.no_out_of_range_fp32;
  if (!o.json.empty() && fs::is_directory(o.json))
    throw Error(cat("--json ", o.json, ": is a folder"));

  onnx_loader::Model model = onnx_loader::load_model(o.model);
  onnx_loader::require_supported_inputs(model);
  const ValueInfo& out = loss_output(model.graph, o.labels);
  c.output = out.name;
  // Forward only, by the flag or because there is nothing to train or no loss to attach.
  std::string forward_line;
  c.forward_only = o.forward_only;
  if (!c.forward_only) {
    const bool has_float_init =
        std::any_of(model.graph.initializers.begin(), model.graph.initializers.end(),
                    [](const auto& kv) { return is_floating(kv.second.dtype()); });
    if (!has_float_init)
      forward_line =
          "the model has no float initializer, so nothing to train and no gradient "
          "to compare";
    else if (out.dtype != DType::Undefined && !is_floating(out.dtype))
      forward_line = cat("output '", out.name, "' is ", dtype_name(out.dtype),
                         ", so no loss can be attached to it");
    if (!forward_line.empty()) {
      forward_line = cat("forward only: ", forward_line, " (as --forward-only)");
      c.forward_only = true;
    }
  }
  auto refuse_training_flags = [&] {
    if (!o.loss.empty() || o.loss_scale > 0 || o.labels.class_axis != LabelFlags::kAuto ||
        o.labels.ignore_index != -100)
      throw Error(
          cat("--loss, --loss-scale, --class-axis and --ignore-index need a forward and "
              "backward check, and this one is forward only",
              o.forward_only ? " (--forward-only)" : cat(": ", forward_line)));
  };
  if (c.forward_only) refuse_training_flags();
  // Without --loss: cross-entropy, unless the output has one unit on its class axis (a dense
  // [N, 1, H, W] map: a denoiser, a one-channel mask), where cross-entropy is 0 with no
  // gradient and the check would compare nothing: then mse, said on a line of its own.
  std::string loss_name = o.loss.empty() ? "cross-entropy" : o.loss;
  std::string loss_line;
  if (c.forward_only) {
    loss_name = "model";  // no loss: make_check_batch cuts the inputs only
  } else if (o.loss.empty() && out.shape && out.shape->size() >= 2) {
    try {
      const train::ClassAxis ca =
          train::resolve_class_axis(out, label_options(o.labels, "cross-entropy", nullptr));
      const Dim& d = (*out.shape)[static_cast<size_t>(ca.axis)];
      if (d.fixed() && d.value == 1) {
        loss_name = "mse";
        loss_line = cat("loss mse: output '", out.name, "' ", out.shape_string(),
                        " has one unit on its class axis ", ca.axis,
                        ", where cross-entropy is 0 with no gradient (--loss picks another)");
      }
    } catch (const Error&) {
      // The class axis is not determined here (--class-axis out of range): the batch below says so.
    }
  }
  c.loss = train::parse_loss(loss_name);
  c.labels = label_options(o.labels, loss_name, nullptr);  // the labels' shape: the batch's
  auto fired = std::make_shared<bool>(false);
  if (!o.inject_error.empty()) {
    const std::string target = o.inject_error;
    // A composite op (LSTM, Einsum, ...) runs as its expansion: its outputs are perturbed where
    // the expansion writes them.
    std::set<std::string> composite_outputs;
    for (const Node& n : model.graph.nodes)
      if (n.name == target && is_composite(n))
        for (const auto& v : n.outputs)
          if (!v.empty()) composite_outputs.insert(v);
    c.perturb = [target, composite_outputs, fired](const Node& n, std::vector<Tensor>& outs) {
      bool writes = n.name == target;
      for (const auto& v : n.outputs) writes |= composite_outputs.count(v) != 0;
      if (!writes) return;
      *fired = true;
      for (Tensor& t : outs) scale_in_place(t, 1.25f);
    };
  }
  Tensor input, target;
  std::string axis_line;
  std::map<std::string, std::string> c_extra_how;
  std::string source;
  make_check_batch(o, model.graph, c.loss, c.labels, axis_line, input, target, c.extra_inputs,
                   c_extra_how, source);
  if (!c.forward_only) {
    // Float parameters, but none reaches the loss (a Floor or Round between): forward only.
    const std::string why = train::forward_only_reason(model.graph, c);
    if (!why.empty()) {
      forward_line = cat("forward only: ", why,
                         ", so there is no gradient to compare (as "
                         "--forward-only)");
      c.forward_only = true;  // --loss and the label flags were valid, and go unused
      loss_line.clear();
      axis_line.clear();
    }
  }

  if (!c.forward_only) {
    // A NaN or inf in the batch makes every loss and gradient that reads it non-finite; an
    // inference model may be fed them (IsNaN, IsInf), forward only.
    const std::string hint = " for a training check (--forward-only accepts NaN and inf)";
    train::require_finite(input, cat(source, ": inputs"), true, hint);
    train::require_finite(target, cat(source, ": targets"), true, hint);
    for (const auto& [name, t] : c.extra_inputs)  // an additive attention mask may hold -inf
      train::require_finite(t, cat("input '", name, "'"), false, hint);
  }
  if (c.forward_only) {
    // The batch is cut as float32; an inference model may declare float64 or float16.
    const ValueInfo& in = train::data_input_of(model.graph);
    if (is_floating(in.dtype) && input.dtype() != in.dtype) input = cast_tensor(input, in.dtype);
  }
  std::cout << "check " << train::check_mode_line(c, why_cpu) << "\n";
  std::cout << "model " << o.model << ", batch " << input.dim(0) << " ("
            << source
            << "), input " << dtype_name(input.dtype()) << " " << shape_str(input.shape()) << "\n";
  for (const auto& [name, t] : c.extra_inputs)
    std::cout << "input '" << name << "' " << dtype_name(t.dtype()) << " " << shape_str(t.shape())
              << " (" << c_extra_how[name] << ")\n";
  if (!forward_line.empty()) std::cout << forward_line << "\n";
  if (!loss_line.empty()) std::cout << loss_line << "\n";
  if (!axis_line.empty())
    std::cout << "cross-entropy over " << axis_line << ", labels " << shape_str(target.shape())
              << "\n";
  std::cout << std::flush;
  train::CheckReport r = train::run_check(model.graph, input, target, c);
  r.mode = train::check_mode_line(c, why_cpu);
  if (!o.inject_error.empty() && !*fired)
    throw Error(cat("--inject-error: no node named '", o.inject_error, "' ran in the ",
                    c.forward_only ? "inference" : "training", " graph"));
  std::cout << train::check_table(r) << std::flush;
  if (!o.json.empty()) onnx_loader::write_file_atomic(o.json, train::check_json(r));
  return r.ok() ? 0 : 1;
}

}  // namespace oat::cli
