// Agreement cases (agreement_case.h): gradient ops (internal domain), losses, fused mixed-precision
// ops, FP32 weight gradients.
#include "tests/cuda/agreement_case.h"

namespace oat_agree {

void add_gradient_cases(std::vector<Case>& v) {
  // gradients (internal domain)
  for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad"})  // (dY, Y)
    v.push_back({op, 1, {}, {flt({3, 17}), In{In::Unit, {3, 17}}}});
  for (const char* op : {"LeakyReluGrad", "GeluGrad", "EluGrad", "SoftplusGrad", "HardSigmoidGrad",
                         "HardSwishGrad"})  // (dY, X)
    v.push_back({op, 1, {}, {flt({3, 17}), flt({3, 17})}});
  v.push_back({"GeluGrad", 1, {{"approximate", attr_s("tanh")}}, {flt({3, 17}), flt({3, 17})}});
  v.push_back(
      {"ClipGrad", 1, {}, {flt({3, 17}), flt({3, 17}), In{In::NegUnit, {}}, In{In::Unit, {}}}});
  // A dY that overflowed to ±inf where the mask is 0 gives dX = 0 (not inf·0 = NaN), as
  // the CPU's select and PyTorch's threshold_backward / hardtanh_backward.
  {
    const float inf = INFINITY;
    v.push_back({"ReluGrad",
                 1,
                 {},
                 {vals({4}, {inf, 1.f, -inf, 2.f}), vals({4}, {0.f, 1.f, 0.f, 2.f})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "overflowed dY masked"});
    v.push_back({"ClipGrad",
                 1,
                 {},
                 {vals({4}, {inf, 1.f, -inf, 2.f}), vals({4}, {-2.f, 0.5f, 3.f, 0.f}),
                  vals({}, {-1.f}), vals({}, {1.f})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "overflowed dY masked"});
    v.push_back({"HardSwishGrad",
                 1,
                 {},
                 {vals({2}, {inf, 1.f}), vals({2}, {-4.f, 1.f})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "overflowed dY masked"});
  }
  v.push_back({"SumToShape", 1, {}, {flt({2, 3, 4}), ints({3, 1})}});
  v.push_back({"SumToShape", 1, {}, {flt({5, 6}), ints({6})}});
  v.push_back({"SumToShape",
               1,
               {},
               {flt({64, 64, 24}), ints({24})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "bias gradient, split"});
  v.push_back({"ReduceGrad",
               1,
               {{"axes", attr_ints({1})}, {"mean", attr_i(1)}},
               {flt({3, 1, 5}), ints({3, 4, 5})}});
  v.push_back({"ReduceGrad",
               1,
               {{"keepdims", attr_i(0)}},
               {flt({}), ints({3, 4})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "to scalar"});
  v.push_back({"MatMulGrad", 1, {}, {flt({5, 3}), flt({5, 7}), flt({7, 3})}, 2});
  // an empty batch: A's and B's broadcast 1s get zero gradients (no GEMM writes them)
  v.push_back({"MatMulGrad", 1, {}, {flt({0, 5, 3}), flt({1, 5, 7}), flt({0, 7, 3})}, 2});
  v.push_back({"MatMulGrad", 1, {}, {flt({0, 5, 3}), flt({0, 5, 7}), flt({1, 7, 3})}, 2});
  v.push_back({"MatMulGrad",
               1,
               {},
               {flt({2, 5, 3}), flt({2, 5, 7}), flt({7, 3})},
               2,
               {DType::F32},
               "shared weight"});
  v.push_back({"MatMulGrad",
               1,
               {},
               {flt({2, 5, 3}), flt({2, 5, 7}), flt({2, 7, 3})},
               2,
               {DType::F32},
               "batched"});
  v.push_back({"MatMulGrad",
               1,
               {},
               {flt({2, 5, 3}), flt({5, 7}), flt({2, 7, 3})},
               2,
               {DType::F32},
               "shared input"});
  v.push_back({"GemmGrad",
               1,
               {{"alpha", attr_f(0.5f)}, {"beta", attr_f(2.f)}},
               {flt({5, 3}), flt({5, 7}), flt({7, 3}), flt({3})},
               3});
  v.push_back({"GemmGrad",
               1,
               {{"transA", attr_i(1)}, {"transB", attr_i(1)}},
               {flt({5, 3}), flt({7, 5}), flt({3, 7}), flt({5, 3})},
               3,
               {DType::F32},
               "transposed"});
  v.push_back(
      {"SliceGrad",
       1,
       {},
       {flt({2, 3}), ints({4, 6}), ints({1, -5}), ints({3, 100}), ints({0, 1}), ints({1, 2})}});
  v.push_back({"SliceGrad",
               1,
               {},
               {flt({4, 3}), ints({4, 6}), ints({-1}), ints({-100}), ints({1}), ints({-2})}});
  v.push_back({"ConcatGrad",
               1,
               {{"axis", attr_i(1)}},
               {flt({2, 6, 2}), ints({2, 3, 2}), ints({2, 1, 2}), ints({2, 2, 2})},
               3});
  v.push_back({"GatherGrad",
               1,
               {{"axis", attr_i(1)}},
               {flt({3, 2, 2, 2}), ints({3, 4, 2}), ints({0, 3, 1, -1}, {2, 2})}});
  v.push_back({"GatherGrad", 1, {}, {flt({6, 5}), ints({4, 5}), ints({1, 1, 3, 0, 1, 3})}});
  v.push_back({"TileGrad", 1, {}, {flt({4, 3, 6}), ints({2, 3, 2})}});
  v.push_back({"TileGrad",
               1,
               {},
               {flt({0, 3, 2}), ints({2, 3, 2})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "repeats 0"});
  v.push_back({"DropoutGrad", 1, {{"ratio", attr_f(0.25f)}}, {flt({3, 17}), bools({3, 17})}});
  // PadGrad, CumSumGrad, ReduceXYGrad, GatherElements(+Grad), PReluGrad
  v.push_back({"PadGrad",
               1,
               {{"mode", attr_s("reflect")}},
               {flt({7, 11}), ints({3, 4}), ints({2, 3, 2, 4})}});
  v.push_back({"PadGrad",
               1,
               {},
               {flt({4, 2}), ints({2, 3}), ints({1, 2, 1, -3})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "constant, crop"});
  v.push_back({"PadGrad",
               1,
               {{"mode", attr_s("edge")}},
               {flt({2, 3, 9}), ints({2, 3, 4}), ints({2, 3}), ints({-1})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "edge, axes"});
  v.push_back({"PadGrad",
               1,
               {{"mode", attr_s("wrap")}, {"pads", attr_ints({1, 5, 2, 1})}},
               {flt({6, 10}), ints({3, 4})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "wrap, pads attribute"});
  v.push_back({"CumSumGrad", 1, {}, {flt({3, 5, 2}), ints({1}, Shape{})}});
  v.push_back({"CumSumGrad",
               1,
               {{"exclusive", attr_i(1)}, {"reverse", attr_i(1)}},
               {flt({3, 5}), ints({-1}, Shape{})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "exclusive, reverse"});
  {
    // X with ties (Max/Min) and rows with no, one and two zeros (Prod); Y = the reduction.
    const In x_ties = vals({3, 4}, {1, 3, 3, 2, 0, 5, 5, 5, -1, 2, 2, 0});
    v.push_back({"ReduceXYGrad",
                 1,
                 {{"reduce", attr_s("ReduceMax")}, {"axes", attr_ints({1})}},
                 {flt({3, 1}), x_ties, vals({3, 1}, {3, 5, 2})}});
    v.push_back({"ReduceXYGrad",
                 1,
                 {{"reduce", attr_s("ReduceMin")}, {"keepdims", attr_i(0)}},
                 {flt({}), x_ties, vals({}, {-1})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "all axes"});
    v.push_back({"ReduceXYGrad",
                 1,
                 {{"reduce", attr_s("ReduceMin")}},
                 {flt({1, 4}), x_ties, vals({1, 4}, {-1, 2, 2, 0}), ints({0})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "axes input"});
    v.push_back({"ReduceXYGrad",
                 1,
                 {{"reduce", attr_s("ReduceProd")}, {"axes", attr_ints({1})}},
                 {flt({3, 1}), vals({3, 4}, {2, 3, 0.5f, 1.5f, 2, 0, -1, 3, 0, 4, 0, 2}),
                  vals({3, 1}, {4.5f, 0, 0})}});
  }
  for (const char* op : {"ReduceSumSquare", "ReduceL1", "ReduceLogSumExp"})
    v.push_back({"ReduceXYGrad",
                 1,
                 {{"reduce", attr_s(op)}, {"axes", attr_ints({1})}},
                 {flt({3, 1, 5}), flt({3, 4, 5}), flt({3, 1, 5})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 op});
  for (const char* op : {"ReduceL2", "ReduceLogSum"})
    v.push_back({"ReduceXYGrad",
                 1,
                 {{"reduce", attr_s(op)}, {"axes", attr_ints({0, 2})}},
                 {flt({1, 4, 1}), flt({3, 4, 5}), pos({1, 4, 1})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 op});
  v.push_back({"GatherElements",
               13,
               {{"axis", attr_i(1)}},
               {flt({3, 4}), ints({0, 3, -1, 2, 1, 1, 0, -4}, {2, 4})}});
  {
    In idx32 = ints({2, 0, 1, -1, 0, 0, 2, 1}, {2, 2, 2});
    idx32.int_type = DType::I32;
    v.push_back({"GatherElements",
                 13,
                 {},
                 {flt({3, 2, 2}), idx32},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "axis 0, int32"});
  }
  v.push_back({"GatherElementsGrad",
               1,
               {{"axis", attr_i(1)}},
               {flt({2, 4}), ints({3, 4}), ints({0, 3, -1, 3, 1, 1, 0, -4}, {2, 4})}});
  v.push_back({"GatherElementsGrad",
               1,
               {},
               {flt({2, 2, 2}), ints({3, 2, 2}), ints({2, 0, 1, -1, 2, 0, 2, 1}, {2, 2, 2})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "axis 0"});
  // ScatterReduce, the internal kernel of the scatters' mul/max/min, with int32 indices too.
  v.push_back({"ScatterReduce",
               1,
               {{"axis", attr_i(1)}, {"reduction", attr_s("max")}},
               {flt({2, 4}), ints({3, 0, -1, 3, 1, 1, 0, -4}, {2, 4}), flt({2, 4})}});
  v.push_back({"ScatterReduce",
               1,
               {{"reduction", attr_s("mul")}},
               {flt({3, 2, 2}), ints({2, 0, 1, -1, 2, 0, 2, 1}, {2, 2, 2}), flt({2, 2, 2})}});
  {
    In idx32 = ints({0, 2, 2, -1, 1, 0}, {2, 3});
    idx32.int_type = DType::I32;
    v.push_back({"ScatterReduce",
                 1,
                 {{"axis", attr_i(0)}, {"reduction", attr_s("min")}},
                 {flt({3, 3}), idx32, flt({2, 3})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "min, int32"});
  }
  v.push_back({"PReluGrad", 1, {}, {flt({2, 3, 4, 5}), flt({2, 3, 4, 5}), flt({3, 1, 1})}, 2});
  v.push_back({"PReluGrad",
               1,
               {},
               {flt({3, 17}), flt({3, 17}), flt({1})},
               2,
               {DType::F32, DType::F16, DType::BF16},
               "one slope"});
  v.push_back({"PReluGrad",
               1,
               {},
               {flt({3, 17}), flt({3, 17}), flt({3, 17})},
               2,
               {DType::F32, DType::F16, DType::BF16},
               "slope per element"});
  v.push_back({"PReluGrad",
               1,
               {{"legacy_slope", attr_i(1)}},
               {flt({2, 3, 4}), flt({2, 3, 4}), flt({3})},
               2,
               {DType::F32, DType::F16, DType::BF16},
               "legacy per-channel slope"});
  v.push_back({"MaxPoolGrad",
               1,
               {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
               {flt({2, 3, 3, 3}), flt({2, 3, 6, 6})},
               1,
               {DType::F32}});
  v.push_back({"AveragePoolGrad",
               1,
               {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}},
               {flt({2, 3, 5, 5}), ints({2, 3, 5, 5})}});
  v.push_back({"AveragePoolGrad",
               1,
               {{"kernel_shape", attr_ints({2, 2})}},
               {flt({0, 3, 4, 4}), ints({0, 3, 5, 5})}});
  // Windows cuDNN cannot express: the own gathers of pool_impl.h (ceil mode, dilation,
  // asymmetric pads). MaxPoolGrad in F32 only, as above: random X has no ties there.
  v.push_back({"MaxPoolGrad",
               1,
               {{"kernel_shape", attr_ints({3, 3})},
                {"strides", attr_ints({2, 2})},
                {"ceil_mode", attr_i(1)}},
               {flt({2, 3, 4, 4}), flt({2, 3, 8, 8})},
               1,
               {DType::F32},
               "ceil mode"});
  v.push_back({"MaxPoolGrad",
               1,
               {{"kernel_shape", attr_ints({2, 2})},
                {"dilations", attr_ints({2, 1})},
                {"pads", attr_ints({1, 0, 0, 1})}},
               {flt({1, 2, 6, 7}), flt({1, 2, 7, 7})},
               1,
               {DType::F32},
               "dilated, asymmetric pads"});
  v.push_back({"AveragePoolGrad",
               1,
               {{"kernel_shape", attr_ints({3, 2})},
                {"pads", attr_ints({0, 1, 2, 0})},
                {"dilations", attr_ints({1, 2})},
                {"ceil_mode", attr_i(1)},
                {"strides", attr_ints({2, 2})},
                {"count_include_pad", attr_i(1)}},
               {flt({1, 2, 4, 3}), ints({1, 2, 7, 6})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "asymmetric pads, dilated, ceil, count_include_pad"});
  v.push_back({"AveragePoolGrad",
               1,
               {{"kernel_shape", attr_ints({2, 2})},
                {"auto_pad", attr_s("SAME_UPPER")},
                {"strides", attr_ints({2, 2})}},
               {flt({2, 3, 3, 3}), ints({2, 3, 5, 5})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "SAME_UPPER, odd total"});
  v.push_back({"GlobalAveragePoolGrad", 1, {}, {flt({2, 3, 1, 1}), ints({2, 3, 5, 4})}});
  v.push_back(
      {"GlobalMaxPoolGrad", 1, {}, {flt({2, 3, 1, 1}), flt({2, 3, 5, 4})}, 1, {DType::F32}});
  v.push_back({"SoftmaxGrad", 1, {{"axis", attr_i(-1)}}, {flt({4, 33}), In{In::Unit, {4, 33}}}});
  v.push_back({"SoftmaxGrad",
               1,
               {{"axis", attr_i(-1)}},
               {flt({37, 600}), In{In::Unit, {37, 600}}},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "block rows"});
  v.push_back({"LogSoftmaxGrad",
               1,
               {{"axis", attr_i(-1)}},
               {flt({45, 7}), flt({45, 7})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "warp rows"});
  v.push_back({"LogSoftmaxGrad", 1, {{"axis", attr_i(1)}}, {flt({2, 5, 3}), flt({2, 5, 3})}});
  v.push_back({"LogSoftmaxGrad",
               1,
               {{"axis", attr_i(1)}, {"coerce_2d", attr_i(1)}},
               {flt({2, 3, 4}), flt({2, 3, 4})}});
  v.push_back({"LayerNormalization", 17, {}, {flt({4, 6, 32}), flt({32}), flt({32})}, 3});
  v.push_back({"LayerNormalization", 17, {{"axis", attr_i(1)}}, {flt({3, 4, 5}), flt({5})}});
  v.push_back({"LayerNormalizationGrad", 1, {}, {flt({4, 6, 32}), flt({4, 6, 32}), flt({32})}, 3});
  v.push_back({"LayerNormalizationGrad",
               1,
               {{"axis", attr_i(1)}},
               {flt({3, 4, 5}), flt({3, 4, 5}), flt({4, 5})},
               3});
  v.push_back({"LayerNormalizationGrad", 1, {}, {flt({0, 32}), flt({0, 32}), flt({32})}, 3});
  // 2048 rows of 48: dScale/dBias split over 32 chunks of 64 rows (norm_impl.cu)
  v.push_back({"LayerNormalizationGrad",
               1,
               {},
               {flt({2048, 48}), flt({2048, 48}), flt({48})},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "split column sums"});
  // LpNormalization(+Grad): p 2 and 1, rows (one block each) and strided columns, a zero lane.
  {
    const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
    const In zero_lane = vals({2, 3}, {0, 0, 0, 1, -2, 2});
    v.push_back({"LpNormalization", 1, {}, {flt({4, 1500})}});
    v.push_back({"LpNormalization",
                 1,
                 {{"axis", attr_i(1)}, {"p", attr_i(1)}},
                 {flt({2, 5, 3})},
                 1,
                 all3,
                 "p = 1, axis 1"});
    v.push_back({"LpNormalization", 1, {}, {zero_lane}, 1, all3, "zero lane"});
    v.push_back({"LpNormalizationGrad", 1, {}, {flt({4, 1500}), flt({4, 1500})}});
    v.push_back({"LpNormalizationGrad",
                 1,
                 {{"axis", attr_i(0)}, {"p", attr_i(1)}},
                 {flt({5, 3}), flt({5, 3})},
                 1,
                 all3,
                 "p = 1, axis 0"});
    v.push_back({"LpNormalizationGrad", 1, {}, {flt({2, 3}), zero_lane}, 1, all3, "zero lane"});
  }
  // losses
  v.push_back({"SoftmaxCrossEntropyLoss", 13, {}, {flt({4, 5}), ints({0, 4, 2, 2})}, 2});
  v.push_back({"SoftmaxCrossEntropyLoss",
               13,
               {{"reduction", attr_s("sum")}, {"ignore_index", attr_i(1)}},
               {flt({3, 4, 2}), ints({1, 0, 3, 1, 2, 2}, {3, 2}), pos({4})}});
  v.push_back({"SoftmaxCrossEntropyLoss",
               13,
               {{"reduction", attr_s("none")}},
               {flt({4, 5}), ints({0, 4, 2, 2})}});
  v.push_back({"NegativeLogLikelihoodLoss", 13, {}, {flt({4, 5}), ints({0, 4, 2, 2}), pos({5})}});
  v.push_back({"SoftmaxCrossEntropyLossGrad",
               1,
               {{"from_scores", attr_i(1)}},
               {flt({}), flt({4, 5}), ints({0, 4, 2, 2})}});
  v.push_back({"SoftmaxCrossEntropyLossGrad",
               1,
               {{"reduction", attr_s("none")}, {"ignore_index", attr_i(2)}},
               {flt({4}), flt({4, 5}), ints({0, 4, 2, 2}), pos({5})}});
  // [N, C, D...] scores (a segmentation map): the gradient kernel's (n, c, d) digits with D > 1.
  v.push_back({"SoftmaxCrossEntropyLossGrad",
               1,
               {{"from_scores", attr_i(1)}, {"ignore_index", attr_i(1)}},
               {flt({}), flt({3, 4, 2, 3}),
                ints({0, 1, 3, 2, 2, 0, 3, 3, 1, 0, 2, 1, 0, 0, 3, 2, 1, 3}, {3, 2, 3}), pos({4})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "spatial"});
  v.push_back({"NegativeLogLikelihoodLossGrad",
               1,
               {{"reduction", attr_s("sum")}},
               {flt({}), ints({4, 5}), ints({0, 4, 2, 2})}});
  v.push_back({"BatchNormalization",
               15,
               {{"training_mode", attr_i(1)}, {"momentum", attr_f(0.8f)}},
               {flt({4, 3, 5, 5}), f32({3}), f32({3}), f32({3}), f32({3}, In::Positive)},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "training"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {{"training_mode", attr_i(1)}},
               {flt({4, 3, 5, 5}), flt({4, 3, 5, 5}), f32({3})},
               3,
               {DType::F32},
               "training"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {},
               {flt({4, 3, 5}), flt({4, 3, 5}), f32({3}), f32({3}), f32({3}, In::Positive)},
               3,
               {DType::F32}});
  // Planes of a multiple of 8 elements: the packed elementwise loops (16-byte packs, one
  // channel per pack) of BatchNorm's apply and dX kernels.
  v.push_back({"BatchNormalization",
               15,
               {{"training_mode", attr_i(1)}, {"momentum", attr_f(0.8f)}},
               {flt({4, 3, 4, 8}), f32({3}), f32({3}), f32({3}), f32({3}, In::Positive)},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "training, packed"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {{"training_mode", attr_i(1)}},
               {flt({4, 3, 4, 8}), flt({4, 3, 4, 8}), f32({3})},
               3,
               {DType::F32},
               "training, packed"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {},
               {flt({4, 3, 16}), flt({4, 3, 16}), f32({3}), f32({3}), f32({3}, In::Positive)},
               3,
               {DType::F32},
               "packed"});
  // fused mixed-precision ops: FP32 masters, gradients in the case dtype
  v.push_back(
      {"UnscaleAndCheck", 1, {}, {f32({}, In::Unit), flt({3, 5}), flt({70000}), flt({1})}, 4});
  v.push_back({"UnscaleAndCheck",
               1,
               {},
               {f32({}, In::Unit), flt({5}), huge({3})},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "overflow in F16"});
  v.push_back({"GlobalNormClip",
               1,
               {},
               {f32({3, 5}), f32({70000}), f32({}, In::Unit)},
               3,
               {DType::F32},
               "clipped"});
  v.push_back(
      {"GlobalNormClip", 1, {}, {f32({3, 5}), f32({}, In::Huge)}, 2, {DType::F32}, "not clipped"});
  v.push_back({"SGDUpdate",
               1,
               {{"momentum", attr_f(0.9f)}, {"weight_decay", attr_f(0.01f)}},
               {f32({40}), f32({40}), f32({40}), f32({}, In::Unit)},
               2,
               {DType::F32}});
  v.push_back({"SGDUpdate",
               1,
               {{"momentum", attr_f(0.9f)}, {"nesterov", attr_i(1)}},
               {f32({40}), f32({40}), f32({40}), f32({}, In::Unit), all_true({})},
               2,
               {DType::F32},
               "skip"});
  v.push_back({"AdamUpdate",
               1,
               {{"weight_decay", attr_f(0.01f)}, {"decoupled", attr_i(1)}},
               {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), f32({}, In::Unit),
                ints({3}, Shape{})},
               3,
               {DType::F32}});
  // The fused working copy (runtime/working_type.h): P' rounded to F16 / BF16 in the update.
  v.push_back({"SGDUpdate",
               1,
               {{"momentum", attr_f(0.9f)}, {"working_type", attr_i(10)}},
               {f32({40}), f32({40}), f32({40}), f32({}, In::Unit)},
               3,
               {DType::F32},
               "working copy F16"});
  v.push_back({"AdamUpdate",
               1,
               {{"working_type", attr_i(16)}},
               {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), f32({}, In::Unit),
                ints({3}, Shape{})},
               4,
               {DType::F32},
               "working copy BF16"});
  v.push_back({"AdamUpdate",
               1,
               {{"working_type", attr_i(10)}},
               {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), f32({}, In::Unit),
                ints({3}, Shape{}), all_true({})},
               4,
               {DType::F32},
               "skip, working copy"});
  // Multi-tensor updates (runtime/multi_update.h): [P, G, V, W] / [P, G, M, V, W] per parameter,
  // one launch on CUDA; sizes across the 4096-element chunks, an empty parameter, W given or not.
  v.push_back({"MultiSGDUpdate",
               1,
               {{"momentum", attr_f(0.9f)}, {"weight_decay", attr_f(0.01f)}, {"working_type", attr_i(10)}},
               {f32({40}), f32({40}), f32({40}), absent(),                       // parameter 1
                f32({3, 3000}), f32({3, 3000}), f32({3, 3000}), f32({3, 3000}),  // 2 (W given)
                f32({0}), f32({0}), f32({0}), absent(),                          // 3: empty
                f32({}, In::Unit), absent()},                                    // lr, no skip
               9,
               {DType::F32},
               "momentum, working copies"});
  v.push_back({"MultiSGDUpdate",
               1,
               {{"momentum", attr_f(0.9f)}, {"nesterov", attr_i(1)}, {"working_type", attr_i(16)}},
               {f32({5000}), f32({5000}), f32({5000}), absent(), f32({7}), f32({7}), f32({7}),
                absent(), f32({}, In::Unit), all_true({})},
               6,
               {DType::F32},
               "skip"});
  v.push_back({"MultiAdamUpdate",
               1,
               {{"weight_decay", attr_f(0.01f)}, {"decoupled", attr_i(1)}, {"working_type", attr_i(10)}},
               {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), absent(),
                f32({9000}), f32({9000}), f32({9000}), f32({9000}, In::Positive), f32({9000}),
                f32({}, In::Unit), ints({3}, Shape{}), absent()},
               8,
               {DType::F32},
               "AdamW, working copies"});
  v.push_back({"MultiAdamUpdate",
               1,
               {{"weight_decay", attr_f(0.01f)}},
               {f32({4097}), f32({4097}), f32({4097}), f32({4097}, In::Positive), absent(),
                f32({3, 5}), f32({3, 5}), f32({3, 5}), f32({3, 5}, In::Positive), absent(),
                f32({}, In::Unit), ints({2}, Shape{}), all_true({})},
               8,
               {DType::F32},
               "L2, skip"});
  // Weight gradients in FP32 (grad_type = 1, runtime/grad_type.h): dB / dC / dW / dB are F32
  // from the FP32 accumulator on both backends (CUDA's conv dW: cuDNN writes F16/BF16, widened).
  const Attribute fp32_grads = attr_i(1);
  const std::vector<DType> low = {DType::F16, DType::BF16};
  v.push_back({"MatMulGrad",
               1,
               {{"grad_type", fp32_grads}},
               {flt({5, 3}), flt({5, 7}), flt({7, 3})},
               2,
               {DType::F32, DType::F16, DType::BF16},
               "grad_type"});
  v.push_back({"MatMulGrad",
               1,
               {{"grad_type", fp32_grads}},
               {flt({2, 5, 3}), flt({2, 5, 7}), flt({7, 3})},
               2,
               low,
               "shared weight, grad_type"});
  v.push_back({"MatMulGrad",
               1,
               {{"grad_type", fp32_grads}},
               {flt({2, 5, 3}), flt({2, 5, 7}), flt({2, 7, 3})},
               2,
               low,
               "batched, grad_type"});
  v.push_back({"MatMulGrad",
               1,
               {{"grad_type", fp32_grads}},
               {flt({2, 3, 5, 3}), flt({3, 5, 7}), flt({2, 1, 7, 3})},
               2,
               low,
               "broadcast weight, grad_type"});
  v.push_back({"GemmGrad",
               1,
               {{"alpha", attr_f(0.5f)}, {"beta", attr_f(2.f)}, {"grad_type", fp32_grads}},
               {flt({5, 3}), flt({5, 7}), flt({7, 3}), flt({3})},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "grad_type"});
  v.push_back({"GemmGrad",
               1,
               {{"transA", attr_i(1)}, {"transB", attr_i(1)}, {"grad_type", fp32_grads}},
               {flt({5, 3}), flt({7, 5}), flt({3, 7}), flt({5, 3})},
               3,
               low,
               "transposed, grad_type"});
  v.push_back({"ConvGrad",
               1,
               {{"pads", attr_ints({1, 1, 1, 1})}, {"grad_type", fp32_grads}},
               {flt({2, 4, 5, 5}), flt({2, 3, 5, 5}), flt({4, 3, 3, 3})},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "grad_type"});
}

}  // namespace oat_agree
