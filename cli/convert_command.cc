#include "cli/convert_command.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "cli/input_files.h"
#include "convert/auto_search.h"
#include "convert/export.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "runtime/threads.h"

namespace oat::cli {

namespace fs = std::filesystem;

ConvertCommand::ConvertCommand(CLI::App& app) {
  cmd_ = app.add_subcommand(
      "convert", "Write an FP16 (or BF16) inference model and report its deviation from FP32");
  auto* c = cmd_;
  c->add_option("model", o_.model, "ONNX model file (float32)")->required();
  c->add_option("-o,--output", o_.out, "Converted model file")->required();
  c->add_option("--to", o_.to, "Low precision: fp16 or bf16")
      ->check(CLI::IsMember({"fp16", "bf16"}));
  c->add_flag("--keep-io-types", o_.keep_io_types,
              "Graph inputs and outputs stay float32 (Casts at the boundary)");
  // One value per occurrence (repeatable), so `--block-ops Gemm MODEL` leaves MODEL positional.
  c->add_option("--block-ops", o_.block_ops, "Op types kept in float32 (comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  c->add_option("--block-nodes", o_.block_nodes, "Node names kept in float32 (comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  c->add_option("--op-lists", o_.op_lists,
                "JSON file moving ops between lists: {\"allow\": {\"add\": [...], \"remove\": "
                "[...]}, \"deny\": ..., \"infer\": ..., \"clear\": ...}");
  c->add_flag("--no-out-of-range-fp32", o_.no_out_of_range_fp32,
              "fp16: paint Mul/Div nodes reading a constant with max |x| < 6.1e-5, and "
              "nodes reading one with max |x| > 65504, like any other (by default "
              "they stay fp32)");
  c->add_option("--calib", o_.calib,
                "Sample input as [NAME=]FILE (.npy or .pb), repeatable; default: random "
                "N(0,1) inputs")
      ->allow_extra_args(false);
  c->add_option("--batch", o_.batch, "Size of dynamic dimensions in random sample inputs")
      ->check(CLI::PositiveNumber);
  c->add_option("--seed", o_.seed, "Seed of the random sample inputs");
  c->add_flag("--auto", o_.auto_search,
              "Search for nodes to keep in float32 so every output stays within --rtol");
  c->add_option("--rtol", o_.rtol,
                "--auto target: max |y - y_fp32| / max |y_fp32| for every output")
      ->check(CLI::PositiveNumber);
  c->add_option("--max-pins", o_.max_pins, "--auto gives up after pinning this many nodes")
      ->check(CLI::PositiveNumber);
  c->add_flag("--no-verify", o_.no_verify,
              "Write the model even when the float32 model fails on the sample inputs (an "
              "invalid attribute, an index out of range): without it that is an error");
  c->add_flag("--plan", o_.print_plan, "Print the precision plan (node, op, precision, reason)");
  c->add_flag("--external-data", o_.external_data,
              "Store initializers in OUT.data beside the model (automatic when the input has "
              "external data)");
  c->add_option("--threads", o_.threads, "CPU threads for the deviation runs (0: all cores)")
      ->check(CLI::NonNegativeNumber);
}

int ConvertCommand::run() const { return run_convert(o_); }

namespace {

// Fails unless `out` can be written as a file: not a folder, its folder exists and is writable,
// and it is not the input model itself (nor the input's external data).
void check_output_file(const std::string& out, const std::string& model) {
  std::error_code ec;
  const fs::path p(out);
  if (fs::is_directory(p, ec)) throw Error(cat(out, ": output path is a folder"));
  const fs::path dir = fs::absolute(p, ec).parent_path();
  if (!fs::is_directory(dir, ec))
    throw Error(cat(out, ": cannot write the output, folder '", dir.string(), "' does not exist"));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(cat(out, ": cannot write the output, folder '", dir.string(), "' is not writable"));
  if (fs::exists(p, ec) && fs::equivalent(p, model, ec))
    throw Error(cat(out, ": the output would overwrite the input model"));
}

// --calib specs bound to graph inputs: NAME=FILE by name, else a file whose stored name (a
// .npy's stem, a .pb's name) is an input, else the next unbound input in order. Float files are
// cast to the input's float dtype (a float64 .npy for a float32 input).
std::map<std::string, Tensor> read_calib(const std::vector<std::string>& specs, const Graph& g) {
  std::map<std::string, Tensor> feeds = bind_input_files(specs, g, "--calib", false);
  for (const auto& v : g.inputs) {
    auto it = feeds.find(v.name);
    if (it == feeds.end())
      throw Error(cat("--calib: no file for input '", v.name, "' (", dtype_name(v.dtype), " ",
                      v.shape_string(), ")"));
    if (it->second.dtype() != v.dtype && is_floating(it->second.dtype()) && is_floating(v.dtype))
      it->second = cast_tensor(it->second, v.dtype);
  }
  return feeds;
}

uintmax_t total_size(const std::vector<std::string>& files) {
  uintmax_t n = 0;
  for (const auto& f : files) {
    std::error_code ec;
    const uintmax_t s = fs::file_size(f, ec);
    if (!ec) n += s;
  }
  return n;
}

std::string mib(uintmax_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(bytes < (1u << 20) ? 3 : 2) << bytes / 1048576.0 << " MiB";
  return os.str();
}

void print_deviation(const std::vector<convert::OutputDeviation>& devs) {
  std::cout << "  " << std::left << std::setw(24) << "output" << std::right << std::setw(12)
            << "max_abs" << std::setw(12) << "max|fp32|" << std::setw(12) << "rel"
            << "  top-1 agree\n";
  for (const auto& d : devs) {
    std::cout << "  " << std::left << std::setw(24) << d.name << std::right << std::scientific
              << std::setprecision(3) << std::setw(12) << d.max_abs << std::setw(12) << d.max_ref
              << std::setw(12) << d.rel << std::defaultfloat << "  ";
    if (d.top1_agree >= 0)
      std::cout << d.top1_agree << "/" << d.rows;
    else
      std::cout << "-";
    std::cout << "\n";
  }
}

}  // namespace

int run_convert(const ConvertOptions& o) {
  if (o.threads < 0) throw Error(cat("--threads ", o.threads, " must be 0 or more"));
  set_num_threads(o.threads);
  check_output_file(o.out, o.model);

  onnx_loader::Model model = onnx_loader::load_model(o.model);
  const Graph& g = model.graph;

  convert::ExportOptions ex;
  ex.keep_io_types = o.keep_io_types;
  ex.paint.low = o.to == "bf16" ? DType::BF16 : DType::F16;
  if (!o.op_lists.empty()) ex.paint.lists.apply_json_file(o.op_lists);
  ex.paint.out_of_range_fp32 = !o.no_out_of_range_fp32;
  if (!o.block_ops.empty()) {
    ex.paint.lists.block(o.block_ops);
    std::set<std::string> present;
    for (const Node& n : g.nodes) present.insert(n.op_type);
    for (const auto& op : o.block_ops)
      if (!present.count(op))
        std::cerr << "warning: --block-ops " << op << ": no node of that op in " << o.model << "\n";
  }
  std::set<std::string> names;
  for (const Node& n : g.nodes) names.insert(n.name);
  for (const auto& n : o.block_nodes) {
    if (!names.count(n))
      throw Error(cat("--block-nodes: ", o.model, " has no node named '", n,
                      "' (node names are listed by `onnx-amp-train convert --plan`)"));
    ex.paint.fp32_nodes.insert(n);
  }
  const std::map<std::string, Tensor> feeds =
      o.calib.empty() ? convert::sample_inputs(g, o.batch, o.seed) : read_calib(o.calib, g);

  {
    // A --calib file of the wrong type or shape fails here, before anything is written. A model
    // our runtime cannot run (an op it lacks) is still converted, without the deviation report.
    std::unique_ptr<Executor> exec;
    try {
      exec = std::make_unique<Executor>(g);
    } catch (const Error&) {
    }
    if (exec) exec->validate_feeds(feeds);
  }

  const char* low = o.to == "bf16" ? "bfloat16" : "float16";
  std::cout << "model " << o.model << ": " << g.nodes.size() << " nodes, " << g.initializers.size()
            << " initializers\n";
  if (o.auto_search) {
    convert::AutoSearchOptions ao;
    ao.rtol = o.rtol;
    ao.max_pins = o.max_pins;
    const convert::AutoSearchResult a = convert::auto_search(g, feeds, ex, ao);
    std::cout << "auto: worst rel " << std::scientific << std::setprecision(3)
              << a.initial_worst_rel << " with the op lists alone, target " << o.rtol
              << std::defaultfloat << "; " << a.evaluations << " conversions tried, " << a.rejected
              << " pins undone (no better)\n";
    for (const auto& s : a.steps)
      std::cout << "  " << (s.pruned ? "un-pinned " : "pinned    ") << s.node << " (" << s.op_type
                << ", gain " << std::scientific << std::setprecision(2) << s.gain
                << ") -> worst rel " << s.worst_rel << std::defaultfloat << "\n";
    std::cout << "auto: " << a.fp32_nodes.size() << " node(s) kept in float32:";
    for (const auto& n : a.fp32_nodes) std::cout << " " << n;
    std::cout << "\n";
    if (!a.met)
      std::cerr << "warning: --auto did not reach --rtol " << o.rtol << " (worst rel "
                << convert::worst_rel(a.deviation) << " after " << a.fp32_nodes.size()
                << " pins; raise --max-pins or block ops); writing the best found\n";
    ex.paint.fp32_nodes.insert(a.fp32_nodes.begin(), a.fp32_nodes.end());
  }

  convert::ConvertedGraph c = convert::convert_for_inference(g, ex);
  if (o.print_plan) std::cout << c.plan.to_string();
  // Shape and Size read any type and write int64: FP32 in the plan, no float compute.
  size_t type_agnostic = 0;
  for (const Node& n : g.nodes) {
    const convert::NodePrecision* p = c.plan.find(n.name);
    if (p && p->carries_floats && p->dtype == DType::F32 && n.inputs.size() == 1 &&
        convert::input_accepts_any_float(n, 0))
      ++type_agnostic;
  }
  std::cout << "precision " << o.to << ": " << c.plan.count(ex.paint.low) << " nodes in " << low
            << ", " << c.plan.count(DType::F32) - type_agnostic << " kept in float32; "
            << c.report.casts_inserted << " casts inserted, " << c.report.casts_removed
            << " folded; " << c.report.converted_initializers.size() << " initializers stored as "
            << low;
  if (type_agnostic) std::cout << "; " << type_agnostic << " Shape/Size nodes read any type";
  std::cout << "\n";
  if (c.constants_folded)
    std::cout << c.constants_folded << " Constant nodes stored as initializers\n";
  for (const auto& cl : c.report.clamped) std::cout << "clamped " << cl << "\n";
  for (const auto& p : c.schema_pins)
    std::cout << "kept in float32 for ONNX's schema: " << p << "\n";

  // Deviation before writing: a model with an op our runtime lacks is still written (ONNX Runtime
  // may run it), with a warning instead of numbers; one whose float32 run fails is not.
  std::vector<convert::OutputDeviation> devs;
  std::string not_measured;
  try {
    devs = convert::compare_outputs(g, c.graph, feeds);
  } catch (const convert::ReferenceRunFailed& e) {
    // The input model is broken, or the random sample inputs do not fit it: nothing is written
    // unless asked (ONNX Runtime would fail on it too).
    if (!o.no_verify)
      throw Error(cat(o.model, ": ", e.what(), "; nothing written (--calib gives real inputs, "
                      "--no-verify writes the converted model anyway)"));
    not_measured = e.what();
  } catch (const std::exception& e) {
    not_measured = e.what();
  }

  onnx_loader::SaveOptions so;
  so.external_data = o.external_data;
  const onnx_loader::SavedModel saved =
      onnx_loader::save_rewritten_model(model, c.graph, o.out, so);
  const uintmax_t before = total_size(onnx_loader::model_files(model));
  std::cout << "wrote " << saved.files[0];
  if (saved.files.size() > 1) std::cout << " + " << saved.files[1];
  std::cout << ": " << mib(saved.bytes) << " (" << std::fixed << std::setprecision(3)
            << (before ? static_cast<double>(saved.bytes) / before : 0.0) << std::defaultfloat
            << " of the input's " << mib(before)
            << "); ONNX checker: " << (saved.checked ? "ok" : "skipped, " + saved.not_checked_why)
            << "\n";

  if (!not_measured.empty()) {
    std::cerr << "warning: deviation not measured: " << not_measured << "\n";
    return 0;
  }
  std::cout << "deviation from float32 on "
            << (o.calib.empty()
                    ? cat("random N(0,1) inputs (batch ", o.batch, ", seed ", o.seed, ")")
                    : std::string("--calib inputs"))
            << ", rel = max_abs / max|fp32|:\n";
  print_deviation(devs);
  std::cout << "worst rel " << std::scientific << std::setprecision(3) << convert::worst_rel(devs)
            << std::defaultfloat << "\n";
  return 0;
}

}  // namespace oat::cli
