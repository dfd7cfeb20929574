// Agreement cases (agreement_case.h): elementwise and broadcasting, Dropout, unary ops and
// activations, composites, casts, GEMMs.
#include "tests/cuda/agreement_case.h"

namespace oat_agree {

void add_elementwise_cases(std::vector<Case>& v) {
  // elementwise binary with broadcasting
  for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"})
    v.push_back({op, 17, {}, {flt({2, 3, 4}), flt({3, 1})}});
  v.push_back({"Div", 17, {}, {flt({2, 3, 4}), pos({4})}});
  v.push_back({"Pow", 17, {}, {pos({3, 4}), flt({1})}});
  v.push_back({"PRelu", 16, {}, {flt({2, 3, 4, 5}), flt({3, 1, 1})}});
  // Before opset 7 a [C] slope is per channel (axis 1), not numpy-broadcast along W.
  v.push_back({"PRelu",
               6,
               {},
               {flt({2, 3, 4, 5}), flt({3})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "legacy slope"});
  // NaN stays NaN through Max, Min, Relu and Clip, as on the CPU.
  const float nan = std::nanf("");
  for (const char* op : {"Max", "Min"})
    v.push_back({op,
                 13,
                 {},
                 {vals({4}, {nan, 1.f, 2.f, nan}), vals({4}, {1.f, nan, 3.f, nan})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "NaN"});
  v.push_back({"Relu",
               14,
               {},
               {vals({4}, {nan, -1.f, 0.f, 2.f})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "NaN"});
  v.push_back({"Clip",
               13,
               {},
               {vals({4}, {nan, -5.f, 0.5f, 5.f}), vals({}, {-1.f}), vals({}, {1.f})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "NaN"});
  v.push_back({"Sum", 13, {}, {flt({2, 3}), flt({3}), flt({1})}});
  v.push_back({"Mean", 13, {}, {flt({2, 3}), flt({3}), flt({1})}});
  v.push_back(
      {"Mean", 13, {}, {flt({2, 3})}, 1, {DType::F32, DType::F16, DType::BF16}, "one input"});
  v.push_back({"Add", 17, {}, {flt({64, 65}), flt({64, 65})}, 1, {DType::F32}, "same shape"});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    v.push_back({op, 16, {}, {flt({4, 5}), flt({5})}});
  v.push_back({"Where", 16, {}, {bools({2, 3}), flt({2, 3}), flt({3})}});
  v.push_back({"Mod", 13, {{"fmod", attr_i(1)}}, {flt({3, 4}), pos({4})}});
  v.push_back({"IsNaN", 13, {}, {flt({3, 4})}});
  v.push_back({"IsInf", 10, {}, {huge({3, 4})}});
  v.push_back({"Not", 1, {}, {bools({3, 4})}, 1, {DType::Bool}});
  // Dropout: inference (Y = X, mask all true), and training, where both backends draw the same
  // mask (seeded: numpy's MT19937 stream, drawn by the CUDA kernel in a host function; unseeded:
  // Philox, computed on the device). Before opset 10 the mask is in X's dtype; opset 6 trains
  // when is_test = 0.
  v.push_back(
      {"Dropout", 13, {}, {flt({3, 5})}, 2, {DType::F32, DType::F16, DType::BF16}, "inference"});
  v.push_back({"Dropout",
               7,
               {},
               {flt({3, 5})},
               2,
               {DType::F32, DType::F16, DType::BF16},
               "inference, opset 7 (mask in X's dtype)"});
  {
    In ratio = vals({}, {0.3f});
    ratio.keep_f32 = true;
    v.push_back({"Dropout",
                 13,
                 {{"seed", attr_i(7)}},
                 {flt({4, 33}), ratio, all_true({})},
                 2,
                 {DType::F32, DType::F16, DType::BF16},
                 "training"});
  }
  {
    In ratio = vals({}, {0.3f});
    ratio.keep_f32 = true;
    v.push_back({"Dropout",
                 13,
                 {},
                 {flt({5, 37}), ratio, all_true({})},
                 2,
                 {DType::F32, DType::F16, DType::BF16},
                 "training, unseeded (Philox, 185 elements: a partial block of 4)"});
  }
  v.push_back({"Dropout",
               6,
               {{"seed", attr_i(3)}, {"ratio", attr_f(0.25f)}},
               {flt({3, 17})},
               2,
               {DType::F32, DType::F16, DType::BF16},
               "training, opset 6 (mask in X's dtype)"});
  for (const char* op : {"And", "Or", "Xor"})
    v.push_back({op, 7, {}, {bools({3, 4}), bools({4})}, 1, {DType::Bool}});
  v.push_back({"Shape", 15, {{"start", attr_i(1)}}, {flt({2, 3, 4})}});
  v.push_back({"Size", 13, {}, {flt({2, 3, 4})}});
  v.push_back({"CastLike", 15, {}, {flt({5, 7}), f32({1})}});
  // unary and activations
  for (const char* op :
       {"Exp", "Neg",      "Abs",      "Floor",   "Ceil",        "Sign",      "Round",
        "Sin", "Cos",      "Relu",     "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
        "Erf", "Softsign", "Softplus", "Mish",    "Selu",        "Elu",       "Celu"})
    v.push_back({op, 18, {}, {flt({3, 17})}});
  for (const char* op : {"Sqrt", "Log", "Reciprocal"}) v.push_back({op, 13, {}, {pos({3, 17})}});
  for (const char* op : {"Atan", "Sinh", "Cosh", "Asinh"}) v.push_back({op, 9, {}, {flt({3, 17})}});
  v.push_back({"Tan", 7, {}, {spread(51, -1.4f, 1.4f)}});
  for (const char* op : {"Asin", "Acos", "Atanh"})
    v.push_back({op, 9, {}, {spread(51, -0.95f, 0.95f)}});
  v.push_back({"Acosh", 9, {}, {spread(51, 1.f, 6.f)}});
  // Composite ops (runtime/composite/): the expansion runs on each backend. LRN size 4 pads
  // the channel window asymmetrically.
  v.push_back({"LRN", 13, {{"size", attr_i(5)}, {"alpha", attr_f(0.3f)}}, {flt({2, 7, 3, 4})}});
  v.push_back({"LRN", 13, {{"size", attr_i(4)}, {"beta", attr_f(0.5f)}}, {flt({2, 6, 5})}});
  v.push_back({"MeanVarianceNormalization", 13, {}, {flt({2, 3, 4, 5})}});
  v.push_back({"GroupNormalization",
               18,
               {{"num_groups", attr_i(2)}},
               {flt({2, 6, 3, 4}), flt({2}), flt({2})}});
  v.push_back({"GroupNormalization",
               21,
               {{"num_groups", attr_i(3)}},
               {flt({2, 6, 5}), flt({6}), flt({6})}});
  v.push_back({"MeanVarianceNormalization", 13, {{"axes", attr_ints({1, 2})}}, {flt({2, 3, 4})}});
  // GridSample (grid_sample.cc): coordinates in F32 on the device, flat indices cast to int64
  // there and read with GatherElements (device-produced indices). Grid values in [-1.3, 1.3]
  // (some points outside the image), every mode × padding_mode × align_corners.
  {
    std::vector<float> g(2 * 4 * 3 * 2);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = -1.3f + 2.6f * static_cast<float>((i * 37 + 11) % 53) / 52.f;
    for (const char* mode : {"bilinear", "nearest", "bicubic"})
      for (const char* pad : {"zeros", "border", "reflection"})
        for (int64_t align : {0, 1})
          v.push_back({"GridSample",
                       16,
                       {{"mode", attr_s(mode)},
                        {"padding_mode", attr_s(pad)},
                        {"align_corners", attr_i(align)}},
                       {flt({2, 3, 5, 6}), vals({2, 4, 3, 2}, g)}});
  }
  // The index-driven composites (indexing.cc): int64 index arithmetic, then Gather,
  // GatherElements and the scatter-adds GatherGrad / GatherElementsGrad.
  v.push_back({"OneHot", 11, {}, {ints({1, -1, 7, 0}, {2, 2}), ints({5}, {}), flt({2})}});
  v.push_back({"OneHot", 9, {{"axis", attr_i(0)}}, {ints({2, 0, -3}), ints({4}), flt({2})}});
  v.push_back({"EyeLike", 9, {{"k", attr_i(1)}}, {flt({3, 5})}});
  v.push_back({"GatherND", 13, {}, {flt({3, 4, 2}), ints({0, 1, -1, 3, 0, 1}, {3, 2})}});
  v.push_back({"GatherND",
               13,
               {{"batch_dims", attr_i(1)}},
               {flt({2, 3, 4}), ints({2, -1, 0, 0}, {2, 2, 1})}});
  v.push_back({"ScatterElements",
               13,
               {{"axis", attr_i(0)}},
               {flt({3, 4}), ints({0, 2, -1, 1, 0, 0}, {2, 3}), flt({2, 3})}});
  v.push_back({"ScatterElements",
               16,
               {{"axis", attr_i(1)}, {"reduction", attr_s("add")}},
               {flt({3, 4}), ints({0, 0, -1, 3, 3, 1}, {2, 3}), flt({2, 3})}});
  v.push_back({"Scatter", 9, {}, {flt({4, 2}), ints({3, 1}, {1, 2}), flt({1, 2})}});
  v.push_back({"ScatterND", 13, {}, {flt({4, 3, 2}), ints({0, 1, -1, 2}, {2, 2}), flt({2, 2})}});
  v.push_back({"ScatterND",
               16,
               {{"reduction", attr_s("add")}},
               {flt({4, 3}), ints({1, 1, -4}, {3, 1}), flt({3, 3})}});
  // mul, max, min: ScatterReduce (duplicate targets; ScatterND through its flat form).
  for (const char* r : {"mul", "max", "min"}) {
    v.push_back({"ScatterElements",
                 18,
                 {{"axis", attr_i(1)}, {"reduction", attr_s(r)}},
                 {flt({3, 4}), ints({0, 0, -1, 3, 3, 1}, {2, 3}), flt({2, 3})}});
    v.push_back({"ScatterND",
                 18,
                 {{"reduction", attr_s(r)}},
                 {flt({4, 3, 2}), ints({0, 1, -1, 2, 0, 1}, {3, 2}), flt({3, 2})}});
  }
  v.push_back({"ReverseSequence", 10, {}, {flt({4, 3, 2}), ints({4, 2, 1})}});
  v.push_back({"ReverseSequence",
               10,
               {{"time_axis", attr_i(1)}, {"batch_axis", attr_i(0)}},
               {flt({3, 4}), ints({3, 4, 1})}});
  v.push_back({"Shrink", 9, {{"lambd", attr_f(1.f)}, {"bias", attr_f(0.5f)}}, {flt({3, 17})}});
  v.push_back({"LeakyRelu", 16, {{"alpha", attr_f(0.2f)}}, {flt({3, 17})}});
  v.push_back({"ThresholdedRelu", 10, {{"alpha", attr_f(0.5f)}}, {flt({3, 17})}});
  v.push_back({"Gelu", 20, {}, {flt({3, 17})}});
  v.push_back({"Gelu", 20, {{"approximate", attr_s("tanh")}}, {flt({3, 17})}});
  v.push_back({"Clip", 13, {}, {flt({3, 17}), In{In::NegUnit, {}}, In{In::Unit, {}}}});
  // casts
  for (int64_t to : {1, 10, 16, 7, 6, 9})
    v.push_back({"Cast",
                 13,
                 {{"to", attr_i(to)}},
                 {flt({5, 7})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "to=" + std::to_string(to)});
  // To the wider integer types (no device element type: host-placed), and opset 1's type names.
  for (int64_t to : {4, 5, 12, 13})
    v.push_back({"Cast",
                 13,
                 {{"to", attr_i(to)}},
                 {flt({5, 7})},
                 1,
                 {DType::F32},
                 "to=" + std::to_string(to)});
  for (const char* to : {"FLOAT16", "INT32", "UINT16"})
    v.push_back(
        {"Cast", 1, {{"to", attr_s(to)}}, {flt({5, 7})}, 1, {DType::F32}, std::string("to=") + to});
  // GEMMs
  v.push_back({"MatMul", 13, {}, {flt({5, 7}), flt({7, 3})}});
  v.push_back({"MatMul", 13, {}, {flt({2, 5, 7}), flt({7, 3})}});
  v.push_back({"MatMul", 13, {}, {flt({2, 5, 7}), flt({2, 7, 3})}});
  v.push_back({"MatMul", 13, {}, {flt({2, 1, 4, 6}), flt({3, 6, 5})}});
  // Both broadcast partly: strided-batched GEMMs over the trailing batch dims where each
  // operand is whole or absent (3 calls of 2; 2 calls of 3), one per leading group.
  v.push_back({"MatMul", 13, {}, {flt({3, 1, 2, 4, 6}), flt({2, 6, 5})}});
  v.push_back({"MatMul", 13, {}, {flt({1, 3, 4, 6}), flt({2, 1, 6, 5})}});
  v.push_back({"MatMul", 13, {}, {flt({7}), flt({7, 3})}});
  v.push_back({"MatMul", 13, {}, {flt({64, 96}), flt({96, 80})}});
  v.push_back({"Gemm", 13, {}, {flt({5, 7}), flt({7, 3}), flt({3})}});
  v.push_back({"Gemm",
               13,
               {{"transA", attr_i(1)},
                {"transB", attr_i(1)},
                {"alpha", attr_f(0.5f)},
                {"beta", attr_f(2.f)}},
               {flt({7, 5}), flt({3, 7}), flt({5, 3})}});
  // K = 0: an empty sum, zeros (MatMul) and beta·C (Gemm); no cuBLAS call (leading dims 0)
  v.push_back({"MatMul", 13, {}, {flt({2, 5, 0}), flt({0, 3})}});
  v.push_back({"Gemm",
               13,
               {{"transA", attr_i(1)}, {"beta", attr_f(2.f)}},
               {flt({0, 5}), flt({0, 3}), flt({5, 3})}});
}

}  // namespace oat_agree
