// oat_cuda_ops: the time of single CUDA kernels at the shapes the benchmark models give them —
// the reductions (bias gradients, a conv's dB, scalar sums), LayerNormGrad's column sums,
// softmax rows, broadcasting elementwise ops and a transpose, the packed elementwise kernels
// (activations, Cast, BatchNorm), and the device generators (Dropout, RandomNormalLike) — in F32
// and F16.
//
//   oat_cuda_ops [--repeat R] [--filter TEXT] [--small]
//
// Each case is a one-node graph on a CUDA executor, its float inputs uploaded once: 3 warm-up
// runs, then R runs (default 50) of Executor::run_resident and one synchronisation. It prints
// microseconds per run and the effective bandwidth, (bytes read + bytes written) / time. A run
// includes the executor's host work for one node (tens of microseconds), so small cases measure
// that more than the kernel. --small divides every case's leading dimension by 16 (for checking
// the program on the CUDA emulator, where times mean nothing). Exit 1 without a CUDA device.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "tests/node_builder.h"  // make_node_outputs (header-only, no test framework)

namespace {

using namespace oat;
using Clock = std::chrono::steady_clock;

struct Input {
  Shape shape;                 // a float input in the case's dtype (uploaded)
  std::vector<int64_t> ints;   // or, when not empty, an int64 host input with these values
  bool keep_f32 = false;       // a float input that stays F32: Dropout's ratio (no shape: the
                               // scalar 0.1), BatchNorm's scale/bias/mean/var (positive values)
  bool scalar_bool = false;    // Dropout's training_mode
};

struct Case {
  std::string name, op;
  int64_t opset;
  std::map<std::string, Attribute> attrs;
  std::vector<Input> inputs;
  int outputs = 1;
};

std::vector<Case> cases(bool small) {
  const int64_t d = small ? 16 : 1;
  auto f = [](Shape s) { return Input{std::move(s), {}, false, false}; };
  auto i64 = [](std::vector<int64_t> v) { return Input{{}, std::move(v), false, false}; };
  std::vector<Case> v;
  // Bias gradients: [rows, D] -> [D] (columns, split over the rows).
  v.push_back({"bias grad, transformer (128x28 rows, 128)", "SumToShape", 1, {},
               {f({128 * 28 / d, 128}), i64({128})}});
  v.push_back({"bias grad, 8192 rows of 1024", "SumToShape", 1, {}, {f({8192 / d, 1024}), i64({1024})}});
  // A conv's dB shape: [N, C, H, W] over N, H, W (rows of H·W, 64 outputs split).
  v.push_back({"ReduceSum [64,64,56,56] over 0,2,3", "ReduceSum", 13, {{"keepdims", int_attribute(0)}},
               {f({64 / d, 64, 56, 56}), i64({0, 2, 3})}});
  v.push_back({"ReduceSum, 16M to a scalar", "ReduceSum", 13, {{"keepdims", int_attribute(0)}},
               {f({16 << 20 >> (small ? 4 : 0)}), i64({0})}});
  v.push_back({"ReduceMean [128,28,128] over 1 (a sequence mean)", "ReduceMean", 13,
               {{"axes", ints_attribute({1})}, {"keepdims", int_attribute(0)}}, {f({128 / d, 28, 128})}});
  // LayerNormGrad: dX per row, dScale/dBias column sums split over the rows.
  v.push_back({"LayerNormGrad 3584 rows of 128", "LayerNormalizationGrad", 1, {},
               {f({3584 / d, 128}), f({3584 / d, 128}), f({128})}, 3});
  v.push_back({"LayerNormGrad 8192 rows of 1024", "LayerNormalizationGrad", 1, {},
               {f({8192 / d, 1024}), f({8192 / d, 1024}), f({1024})}, 3});
  // Softmax rows: attention (a warp per row of 28 / 128) and logits (a block per row of 1000).
  v.push_back({"Softmax attention [128*4*28, 28]", "Softmax", 13, {}, {f({128 * 4 * 28 / d, 28})}});
  v.push_back({"Softmax attention [64*12*128, 128]", "Softmax", 13, {}, {f({64 * 12 * 128 / d, 128})}});
  v.push_back({"SoftmaxGrad attention [64*12*128, 128]", "SoftmaxGrad", 1, {{"axis", int_attribute(-1)}},
               {f({64 * 12 * 128 / d, 128}), f({64 * 12 * 128 / d, 128})}});
  v.push_back({"LogSoftmax logits [8192, 1000]", "LogSoftmax", 13, {}, {f({8192 / d, 1000})}});
  // Elementwise with broadcasting (32-bit index math, launch.h IndexDivider): a bias add, a
  // per-channel scale, an attention-head transpose; a same-shape Add as the bandwidth baseline.
  v.push_back({"Add same shape [8192, 1024]", "Add", 14, {}, {f({8192 / d, 1024}), f({8192 / d, 1024})}});
  v.push_back({"Add bias [8192, 1024] + [1024]", "Add", 14, {}, {f({8192 / d, 1024}), f({1024})}});
  v.push_back({"Mul [64,64,56,56] * [64,1,1]", "Mul", 14, {}, {f({64 / d, 64, 56, 56}), f({64, 1, 1})}});
  v.push_back({"Transpose [64,128,12,64] perm 0,2,1,3", "Transpose", 13,
               {{"perm", ints_attribute({0, 2, 1, 3})}}, {f({64 / d, 128, 12, 64})}});
  // 16-byte packs (vector_map.cuh): activations and their gradients, a cast, BatchNorm's
  // normalisation (training: statistics, then the packed apply) and its gradient.
  auto f32 = [](Shape sh) { return Input{std::move(sh), {}, true, false}; };
  v.push_back({"Relu [64,64,56,56]", "Relu", 14, {}, {f({64 / d, 64, 56, 56})}});
  v.push_back({"ReluGrad [64,64,56,56]", "ReluGrad", 1, {},
               {f({64 / d, 64, 56, 56}), f({64 / d, 64, 56, 56})}});
  v.push_back({"Cast [8192, 1024] to float32", "Cast", 13, {{"to", int_attribute(1)}},
               {f({8192 / d, 1024})}});
  v.push_back({"BatchNormalization training [64,64,56,56]", "BatchNormalization", 15,
               {{"training_mode", int_attribute(1)}},
               {f({64 / d, 64, 56, 56}), f32({64}), f32({64}), f32({64}), f32({64})}, 3});
  v.push_back({"BatchNormalizationGrad [64,64,56,56]", "BatchNormalizationGrad", 1,
               {{"training_mode", int_attribute(1)}},
               {f({64 / d, 64, 56, 56}), f({64 / d, 64, 56, 56}), f32({64})}, 3});
  // Device generators (no seed: Philox on the device).
  v.push_back({"Dropout training [64,128,768]", "Dropout", 13, {},
               {f({64 / d, 128, 768}), Input{{}, {}, true, false}, Input{{}, {}, false, true}}, 2});
  v.push_back({"RandomNormalLike [64, 128, 768]", "RandomNormalLike", 1, {}, {f({64 / d, 128, 768})}});
  return v;
}

int usage() {
  std::cerr << "usage: oat_cuda_ops [--repeat R] [--filter TEXT] [--small]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 50;
  std::string filter;
  bool small = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--small") small = true;
    else return usage();
  }
  if (cuda::device_count() == 0) {
    std::cerr << "oat_cuda_ops: no CUDA device: " << cuda::describe_device() << "\n";
    return 1;
  }
  std::cout << "device: " << cuda::describe_device() << "\n\n"
            << "| case | dtype | us/run | GB/s |\n| --- | --- | ---: | ---: |\n";
  uint64_t seed = 1;
  for (const Case& c : cases(small)) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos &&
        c.op.find(filter) == std::string::npos)
      continue;
    for (DType dt : {DType::F32, DType::F16}) {
      try {
        Graph g;
        g.opsets[""] = c.opset;
        Node n = oat_test::make_node_outputs("op", c.op, {}, {}, c.attrs, c.opset);
        std::map<std::string, Tensor> feeds;
        double bytes = 0;
        for (size_t k = 0; k < c.inputs.size(); ++k) {
          const Input& in = c.inputs[k];
          const std::string name = "in" + std::to_string(k);
          n.inputs.push_back(name);
          Tensor host;
          if (!in.ints.empty()) {
            host = Tensor::from_vector<int64_t>({static_cast<int64_t>(in.ints.size())}, in.ints);
          } else if (in.scalar_bool) {
            host = Tensor::scalar<bool>(true);
          } else if (in.keep_f32 && in.shape.empty()) {
            host = Tensor::scalar<float>(0.1f);
          } else {
            Tensor t(DType::F32, in.shape);
            for (int64_t e = 0; e < t.numel(); ++e) {
              seed = seed * 6364136223846793005ull + 1442695040888963407ull;
              const float u = static_cast<float>((seed >> 40) & 0xffff) / 65536.0f;  // [0, 1)
              t.data<float>()[e] = in.keep_f32 ? 0.5f + u : u - 0.5f;  // F32: positive
            }
            host = in.keep_f32 ? t : cast_tensor(t, dt);
            Tensor dev(host.dtype(), in.shape, Device::CUDA);
            cuda::copy_bytes(dev.raw_data(), true, host.raw_data(), false, host.nbytes());
            bytes += static_cast<double>(host.nbytes());
            host = dev;
          }
          std::vector<Dim> dims;
          for (int64_t s : host.shape()) dims.push_back(Dim{s, ""});
          g.inputs.push_back(ValueInfo{name, host.dtype(), dims});
          feeds[name] = host;
        }
        std::vector<std::string> fetch;
        for (int o = 0; o < c.outputs; ++o) {
          n.outputs.push_back("out" + std::to_string(o));
          g.outputs.push_back(ValueInfo{n.outputs.back(), DType::Undefined, std::nullopt});
          fetch.push_back(n.outputs.back());
        }
        g.nodes.push_back(n);
        ExecutorOptions opt;
        opt.device = Device::CUDA;
        Executor ex(g, opt);
        std::map<std::string, Tensor> out;
        for (int w = 0; w < 3; ++w) out = ex.run_resident(feeds, fetch);
        for (const auto& [name, t] : out) bytes += static_cast<double>(t.nbytes());
        ex.device_context()->synchronize();
        const auto t0 = Clock::now();
        for (int r = 0; r < repeat; ++r) out = ex.run_resident(feeds, fetch);
        ex.device_context()->synchronize();
        const double us =
            std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / repeat;
        std::cout << "| " << c.name << " | " << dtype_name(dt) << " | " << std::fixed
                  << std::setprecision(1) << us << " | " << std::setprecision(1)
                  << bytes / (us * 1e3) << " |\n";
      } catch (const std::exception& e) {
        std::cout << "| " << c.name << " | " << dtype_name(dt) << " | error: " << e.what()
                  << " | |\n";
      }
    }
  }
  return 0;
}
