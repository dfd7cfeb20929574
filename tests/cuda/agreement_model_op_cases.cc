// Agreement cases (agreement_case.h): Einsum, Resize/Upsample, quantization, detection and
// selection, signal processing.
#include "tests/cuda/agreement_case.h"

namespace oat_agree {

void add_model_op_cases(std::vector<Case>& v) {
  // ONNX's optimizer ops (runtime/composite/training_ops.cc: Greater/Where on T, Pow, Sqrt and
  // the arithmetic on each backend); float32 only (their type constraint is float | double). R
  // and T are scalars; T = 3 exercises the T > 0 branches (decay, β, bias correction).
  {
    const char* domain = "ai.onnx.preview.training";
    In t = ints({3});
    t.shape = {};
    auto add = [&](const char* op, std::map<std::string, Attribute> attrs, std::vector<In> in,
                   int outputs, const char* label) {
      v.push_back({op, 1, std::move(attrs), std::move(in), outputs, {DType::F32}, label});
      v.back().domain = domain;
    };
    add("Adagrad", {{"decay_factor", attr_f(0.1f)}, {"norm_coefficient", attr_f(0.01f)}},
        {pos({}), t, flt({2, 3}), flt({4}), flt({2, 3}), flt({4}), pos({2, 3}), pos({4})}, 4,
        "two tensors");
    for (const char* mode : {"standard", "nesterov"})
      add("Momentum",
          {{"alpha", attr_f(0.9f)},
           {"beta", attr_f(0.5f)},
           {"mode", attr_s(mode)},
           {"norm_coefficient", attr_f(0.01f)}},
          {pos({}), t, flt({5}), flt({5}), flt({5})}, 2, mode);
    add("Adam", {{"norm_coefficient", attr_f(0.01f)}, {"norm_coefficient_post", attr_f(0.1f)}},
        {pos({}), t, flt({3, 4}), flt({3, 4}), flt({3, 4}), pos({3, 4})}, 3, "post decay");
  }
  // Einsum, a composite op: its expansion (Transpose, Reshape, MatMul, Mul, Unsqueeze,
  // ReduceSum, Slice) on each backend. These graphs declare no shapes, so the reshape targets
  // come from Shape/ReduceProd/Concat at run time (host-side int64 on CUDA).
  for (const auto& [eq, shapes] : std::vector<std::pair<std::string, std::vector<Shape>>>{
           {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
           {"bhqd,bhkd->bhqk", {{2, 3, 4, 8}, {2, 3, 5, 8}}},
           {"abc,cd->abd", {{2, 3, 16}, {16, 5}}},
           {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},
           {"i,j->ij", {{3}, {4}}},
           {"ij->", {{5, 7}}},
           {"bii->bi", {{2, 4, 4}}},
           {"ij,ij->ij", {{1, 4}, {3, 4}}}}) {
    std::vector<In> ins;
    for (const Shape& s : shapes) ins.push_back(flt(s));
    v.push_back({"Einsum",
                 12,
                 {{"equation", attr_s(eq)}},
                 ins,
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 eq});
    v.back().declare_shapes = false;
  }
  // Resize / Upsample / ResizeGrad (runtime/cpu/kernels/resize_geometry.h): every mode, scales
  // and sizes, the legacy forms; roi and scales stay F32 (an empty tensor: not given).
  {
    const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
    auto f32v = [](Shape s, std::vector<float> v) {
      In i = vals(std::move(s), std::move(v));
      i.keep_f32 = true;
      return i;
    };
    const In none = f32({0});
    v.push_back({"Resize",
                 13,
                 {{"mode", attr_s("linear")}},
                 {flt({2, 3, 5, 6}), none, f32v({4}, {1, 1, 1.5f, 2.f})},
                 1,
                 all3,
                 "linear"});
    v.push_back({"Resize",
                 13,
                 {{"mode", attr_s("nearest")},
                  {"nearest_mode", attr_s("floor")},
                  {"coordinate_transformation_mode", attr_s("align_corners")}},
                 {flt({2, 3, 5, 6}), none, none, ints({2, 3, 9, 4})},
                 1,
                 all3,
                 "nearest sizes"});
    v.push_back({"Resize",
                 11,
                 {{"mode", attr_s("cubic")},
                  {"exclude_outside", attr_i(1)},
                  {"cubic_coeff_a", attr_f(-0.5f)}},
                 {flt({1, 2, 7, 9}), none, f32v({4}, {1, 1, 0.6f, 1.8f})},
                 1,
                 all3,
                 "cubic"});
    v.push_back({"Resize",
                 13,
                 {{"mode", attr_s("linear")},
                  {"coordinate_transformation_mode", attr_s("tf_crop_and_resize")},
                  {"extrapolation_value", attr_f(2.5f)}},
                 {flt({1, 2, 5, 6}), f32v({8}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f}), none,
                  ints({1, 2, 6, 5})},
                 1,
                 all3,
                 "tf_crop_and_resize"});
    v.push_back({"Resize",
                 10,
                 {{"mode", attr_s("nearest")}},
                 {flt({1, 2, 4, 5}), f32v({4}, {1, 1, 0.6f, 2.f})},
                 1,
                 all3,
                 "opset 10"});
    v.push_back({"Upsample",
                 9,
                 {{"mode", attr_s("linear")}},
                 {flt({1, 2, 3, 4}), f32v({4}, {1, 1, 2.f, 3.f})}});
    v.push_back({"Upsample",
                 7,
                 {{"scales", oat_test::attr_floats({1, 1, 3, 2})}},
                 {flt({1, 2, 3, 4})},
                 1,
                 all3,
                 "scales attribute"});
    v.push_back({"ResizeGrad",
                 1,
                 {{"mode", attr_s("linear")}},
                 {flt({2, 3, 7, 12}), ints({2, 3, 5, 6}), none, f32v({4}, {1, 1, 1.5f, 2.f})},
                 1,
                 all3,
                 "linear"});
    v.push_back({"ResizeGrad",
                 1,
                 {{"mode", attr_s("nearest")}, {"nearest_mode", attr_s("round_prefer_ceil")}},
                 {flt({1, 2, 3, 9}), ints({1, 2, 7, 4})},
                 1,
                 all3,
                 "nearest sizes"});
    v.push_back(
        {"ResizeGrad",
         1,
         {{"mode", attr_s("cubic")},
          {"coordinate_transformation_mode", attr_s("tf_crop_and_resize")}},
         {flt({1, 1, 6, 4}), ints({1, 1, 5, 6}), f32v({8}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f})},
         1,
         all3,
         "cubic tf_crop_and_resize"});
  }
  // Quantization (runtime/cuda/kernels/quantize.cc): QuantizeLinear, DequantizeLinear and the
  // STE gradient are device kernels (x, scale and dY in the case dtype; zero points uint8 /
  // int8); the integer ops are the CPU kernels run through the CUDA registration's host kernel.
  {
    const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
    auto q8 = [](std::vector<int64_t> v, Shape s, DType t) {
      In i = ints(std::move(v), std::move(s));
      i.int_type = t;
      return i;
    };
    const In zp_u8 = q8({128}, Shape{}, DType::U8);
    const In zp_axis = q8({0, 128, 255}, {3}, DType::U8);
    const In zp_i8 = q8({-3, 0, 5}, {3}, DType::I8);
    const In scale_axis = vals({3}, {0.05f, 0.5f, 0.125f});
    v.push_back({"QuantizeLinear",
                 13,
                 {},
                 {flt({2, 3, 4}), vals({}, {0.03125f}), zp_u8},
                 1,
                 all3,
                 "per tensor, saturating"});
    v.push_back({"QuantizeLinear",
                 13,
                 {{"axis", attr_i(1)}},
                 {flt({2, 3, 4}), scale_axis, zp_axis},
                 1,
                 all3,
                 "per axis uint8"});
    v.push_back({"QuantizeLinear",
                 13,
                 {{"axis", attr_i(-2)}},
                 {flt({2, 3, 4}), scale_axis, zp_i8},
                 1,
                 all3,
                 "per axis int8"});
    v.push_back({"QuantizeLinear", 10, {}, {flt({5, 7}), pos({})}, 1, all3, "no zero point"});
    v.push_back({"DequantizeLinear",
                 13,
                 {},
                 {q8({0, 3, 128, 200, 255, 17}, {2, 3}, DType::U8), pos({}), zp_u8},
                 1,
                 all3,
                 "per tensor"});
    v.push_back({"DequantizeLinear",
                 13,
                 {},
                 {q8({-128, -1, 0, 7, 127, 64}, {2, 3}, DType::I8), scale_axis, zp_i8},
                 1,
                 all3,
                 "per axis int8"});
    v.push_back({"DequantizeLinear",
                 13,
                 {},
                 {q8({-70000, 5, 123456}, {3}, DType::I32), pos({})},
                 1,
                 all3,
                 "int32"});
    v.push_back({"QuantizeLinearGrad",
                 1,
                 {},
                 {flt({2, 3, 4}), flt({2, 3, 4}), vals({}, {0.03125f}), zp_u8},
                 1,
                 all3,
                 "per tensor"});
    v.push_back({"QuantizeLinearGrad",
                 1,
                 {{"axis", attr_i(1)}},
                 {flt({2, 3, 4}), flt({2, 3, 4}), scale_axis, zp_i8},
                 1,
                 all3,
                 "per axis"});
    v.push_back({"DynamicQuantizeLinear", 11, {}, {flt({3, 5})}, 3, all3});
    const std::vector<DType> one = {DType::F32};  // integer operands: the dtype is not used
    v.push_back(
        {"MatMulInteger",
         10,
         {},
         {q8({1, 2, 3, 4, 5, 6}, {2, 3}, DType::U8), q8({7, 8, 9, 10, 11, 12}, {3, 2}, DType::I8),
          q8({2}, Shape{}, DType::U8), q8({-1, 1}, {2}, DType::I8)},
         1,
         one});
    v.push_back({"ConvInteger",
                 10,
                 {{"pads", attr_ints({1, 1, 1, 1})}},
                 {q8({2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 1, 3, 3}, DType::U8),
                  q8({1, 1, 1, 1}, {1, 1, 2, 2}, DType::U8), q8({1}, Shape{}, DType::U8)},
                 1,
                 one});
    v.push_back({"QLinearMatMul",
                 10,
                 {},
                 {q8({208, 236, 0, 238, 3, 214}, {2, 3}, DType::U8), f32({}, In::Positive),
                  q8({113}, Shape{}, DType::U8), q8({152, 51, 244, 60, 26, 255}, {3, 2}, DType::U8),
                  f32({}, In::Positive), q8({114}, Shape{}, DType::U8), f32({}, In::Positive),
                  q8({118}, Shape{}, DType::U8)},
                 1,
                 one});
    v.push_back(
        {"QLinearConv",
         10,
         {},
         {q8({255, 174, 162, 25, 203, 168, 58, 15, 59}, {1, 1, 3, 3}, DType::U8),
          f32({}, In::Positive), q8({127}, Shape{}, DType::U8),
          q8({3, 250, 1, 7}, {1, 1, 2, 2}, DType::I8), f32({}, In::Positive),
          q8({0}, Shape{}, DType::I8), f32({}, In::Positive), q8({128}, Shape{}, DType::U8)},
         1,
         one});
  }
  // Detection and data-dependent selection. NonMaxSuppression runs on the host in a CUDA
  // executor (its inputs downloaded): these cases check that path.
  {
    const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
    auto f32s = [](float x) {
      In i = vals({}, {x});
      i.keep_f32 = true;
      return i;
    };
    v.push_back({"NonMaxSuppression",
                 11,
                 {},
                 {flt({2, 7, 4}), flt({2, 3, 7}), ints({3}), f32s(0.4f), f32s(-0.5f)}});
    v.push_back({"NonMaxSuppression",
                 11,
                 {{"center_point_box", attr_i(1)}},
                 {pos({1, 9, 4}), flt({1, 2, 9}), ints({9}, Shape{}), f32s(0.2f)},
                 1,
                 all3,
                 "center boxes"});
    // Compress, Unique and Det are host-placed too.
    v.push_back({"Compress", 11, {{"axis", attr_i(0)}}, {flt({4, 3}), bools({4})}});
    v.push_back({"Compress", 11, {}, {flt({2, 3}), bools({5})}, 1, all3, "no axis"});
    v.push_back({"Unique", 11, {}, {vals({2, 4}, {1, -2, 1, 0.5f, 3, -2, 0.5f, 1})}, 4});
    v.push_back({"Unique",
                 11,
                 {{"axis", attr_i(1)}, {"sorted", attr_i(0)}},
                 {vals({2, 4}, {1, 2, 1, 0, 3, 4, 3, 0})},
                 4,
                 all3,
                 "columns"});
    v.push_back({"Det", 11, {}, {flt({2, 3, 3})}});
    v.push_back({"NonZero", 13, {}, {vals({2, 3}, {0, 1, -0.f, 2.5f, 0, -3})}});
    // Random generators. Seeded: host-placed with the CPU kernel's per-node generator, so the
    // node draws the same numbers under both executors (each run_on builds a new kernel from
    // the seed). Unseeded: Philox keyed by the process seed and the node, computed on the device
    // by the CUDA kernel; both executors' first draw is draw 0 of the same key. Both agree
    // element-wise (runtime/cpu/kernels/random.cc).
    for (DType dt : all3) {
      const int64_t code = dt == DType::F32 ? 1 : dt == DType::F16 ? 10 : 16;
      v.push_back({"RandomNormal",
                   1,
                   {{"shape", attr_ints({7, 9})},
                    {"mean", attr_f(1)},
                    {"scale", attr_f(2)},
                    {"dtype", attr_i(code)}},
                   {},
                   1,
                   {dt},
                   "unseeded (Philox)"});
      v.push_back({"RandomUniform",
                   1,
                   {{"shape", attr_ints({5, 13})},
                    {"low", attr_f(0.99f)},
                    {"high", attr_f(1.0001f)},
                    {"dtype", attr_i(code)}},
                   {},
                   1,
                   {dt},
                   "unseeded (Philox), high not representable"});
    }
    v.push_back({"RandomNormalLike", 1, {}, {flt({3, 11})}, 1, all3, "unseeded (Philox)"});
    v.push_back({"RandomUniformLike",
                 1,
                 {{"low", attr_f(-2)}, {"high", attr_f(3)}},
                 {flt({4, 9})},
                 1,
                 all3,
                 "unseeded (Philox)"});
    for (DType dt : all3) {
      const int64_t code = dt == DType::F32 ? 1 : dt == DType::F16 ? 10 : 16;
      v.push_back({"RandomNormal",
                   1,
                   {{"shape", attr_ints({3, 5})},
                    {"mean", attr_f(1)},
                    {"scale", attr_f(2)},
                    {"seed", attr_f(4)},
                    {"dtype", attr_i(code)}},
                   {},
                   1,
                   {dt}});
      v.push_back({"RandomUniform",
                   1,
                   {{"shape", attr_ints({4, 3})},
                    {"low", attr_f(-1)},
                    {"high", attr_f(2)},
                    {"seed", attr_f(5)},
                    {"dtype", attr_i(code)}},
                   {},
                   1,
                   {dt}});
    }
    v.push_back({"RandomNormalLike", 1, {{"seed", attr_f(6)}}, {flt({2, 3, 4})}});
    v.push_back(
        {"RandomUniformLike", 1, {{"seed", attr_f(7)}, {"high", attr_f(3)}}, {flt({5, 4})}});
    v.push_back({"Bernoulli",
                 15,
                 {{"seed", attr_f(8)}},
                 {vals({2, 4}, {0, 0.25f, 0.5f, 1, 0.9f, 0.1f, 0.75f, 0})}});
    v.push_back({"Multinomial",
                 7,
                 {{"seed", attr_f(9)}, {"sample_size", attr_i(6)}},
                 {vals({2, 3}, {0, 1, -1, 2, 0.5f, -3})}});
    // RoiAlign, MaxUnpool and BitShift have CUDA kernels.
    v.push_back({"RoiAlign",
                 16,
                 {{"output_height", attr_i(3)}, {"output_width", attr_i(2)}},
                 {flt({2, 3, 6, 5}), vals({3, 4}, {0, 0, 4, 5, 1.5f, 0.5f, 3, 2.5f, -1, 2, 6, 7}),
                  ints({1, 0, 1})}});
    v.push_back(
        {"RoiAlign",
         10,
         {{"mode", attr_s("max")}, {"sampling_ratio", attr_i(2)}, {"spatial_scale", attr_f(0.5f)}},
         {flt({1, 2, 5, 5}), vals({2, 4}, {0, 0, 8, 8, 2, 1, 5, 9}), ints({0, 0})},
         1,
         all3,
         "max, opset 10"});
    v.push_back({"RoiAlignGrad",
                 1,
                 {{"output_height", attr_i(3)},
                  {"output_width", attr_i(2)},
                  {"coordinate_transformation_mode", attr_s("output_half_pixel")}},
                 {flt({3, 3, 3, 2}), ints({2, 3, 6, 5}),
                  vals({3, 4}, {0, 0, 4, 5, 1.5f, 0.5f, 3, 2.5f, -1, 2, 6, 7}), ints({1, 0, 1})}});
    v.push_back({"MaxUnpool",
                 11,
                 {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
                 {flt({1, 2, 2, 2}), ints({5, 7, 13, 15, 16, 19, 25, 31}, {1, 2, 2, 2})}});
    v.push_back({"MaxUnpool",
                 11,
                 {{"kernel_shape", attr_ints({2})}},
                 {flt({1, 1, 3}), ints({0, 2, 3}, {1, 1, 3}), ints({1, 1, 5})},
                 1,
                 all3,
                 "output_shape"});
    In sx = ints({16, 4, 1, 200, 255, 3}, {2, 3}), sy = ints({1, 2, 9});
    sx.int_type = sy.int_type = DType::U8;
    v.push_back({"BitShift", 11, {{"direction", attr_s("LEFT")}}, {sx, sy}, 1, {DType::U8}});
    v.push_back(
        {"BitShift", 11, {{"direction", attr_s("RIGHT")}}, {sx, sy}, 1, {DType::U8}, "right"});
    // The wider unsigned types have no device element type: host-placed under CUDA.
    for (DType dt : {DType::U16, DType::U32, DType::U64}) {
      In wx = ints({16, 4, 1, 200, 65535, 3}, {2, 3}), wy = ints({1, 2, 9});
      wx.int_type = wy.int_type = dt;
      v.push_back({"BitShift", 11, {{"direction", attr_s("LEFT")}}, {wx, wy}, 1, {dt}});
    }
    // TfIdfVectorizer: integer token rows in, float counts out; no device kernel (host-placed
    // as an integer node: runtime/cuda/context.cc placement).
    v.push_back({"TfIdfVectorizer",
                 9,
                 {{"mode", attr_s("TFIDF")},
                  {"min_gram_length", attr_i(1)},
                  {"max_gram_length", attr_i(2)},
                  {"max_skip_count", attr_i(1)},
                  {"pool_int64s", attr_ints({2, 3, 5, 5, 6, 7, 8})},
                  {"ngram_counts", attr_ints({0, 3})},
                  {"ngram_indexes", attr_ints({0, 1, 2, 3, 4})},
                  {"weights", oat_test::attr_floats({0.5f, 1, 2, 3, 4})}},
                 {ints({2, 3, 5, 6, 2, 7, 0, 8, 5, 6}, {2, 5})},
                 1,
                 {DType::I64}});
  }
  // Signal processing (opset 17): DFT, STFT and their adjoints run on the device as direct
  // sums (runtime/cuda/kernels/signal.cc); the CPU's FFT (radix-2 or Bluestein) is the
  // reference. The window and mel generators are host-only (host scalars in), as Range.
  {
    const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
    v.push_back({"DFT", 17, {}, {flt({2, 8, 1})}});
    v.push_back({"DFT",
                 17,
                 {{"axis", attr_i(2)}, {"inverse", attr_i(1)}},
                 {flt({2, 3, 6, 2})},
                 1,
                 all3,
                 "inverse, axis 2"});
    v.push_back({"DFT",
                 17,
                 {{"onesided", attr_i(1)}},
                 {flt({3, 12, 1}), ints({10}, Shape{})},
                 1,
                 all3,
                 "onesided, dft_length 10"});
    v.push_back({"STFT", 17, {}, {flt({2, 32, 1}), ints({4}, Shape{}), flt({8})}});
    v.push_back({"DFTGrad", 1, {{"axis", attr_i(1)}}, {flt({2, 8, 2}), flt({2, 8, 1})}});
    v.push_back({"DFTGrad",
                 1,
                 {{"axis", attr_i(1)}, {"onesided", attr_i(1)}},
                 {flt({3, 6, 2}), flt({3, 12, 1}), ints({10}, Shape{})},
                 1,
                 all3,
                 "onesided, dft_length 10"});
    v.push_back(
        {"STFTGrad", 1, {}, {flt({2, 7, 5, 2}), flt({2, 32, 1}), ints({4}, Shape{}), flt({8})}, 2});
    // irfft (inverse + onesided), a complex onesided forward, opset 20's axis input, STFT of
    // a complex signal without a window, the adjoints of the inverse and of irfft.
    v.push_back({"DFT",
                 17,
                 {{"inverse", attr_i(1)}, {"onesided", attr_i(1)}},
                 {flt({2, 5, 2})},
                 1,
                 all3,
                 "irfft"});
    v.push_back({"DFT",
                 17,
                 {{"onesided", attr_i(1)}},
                 {flt({2, 9, 2})},
                 1,
                 all3,
                 "complex onesided, odd length"});
    v.push_back({"DFT",
                 20,
                 {},
                 {flt({3, 7, 2, 2}), ints({6}, Shape{}), ints({1}, Shape{})},
                 1,
                 all3,
                 "opset 20, axis input 1, dft_length 6"});
    v.push_back({"STFT",
                 17,
                 {{"onesided", attr_i(0)}},
                 {flt({1, 20, 2}), ints({3}, Shape{}), absent(), ints({6}, Shape{})},
                 1,
                 all3,
                 "complex, no window, frame_length 6"});
    v.push_back({"DFTGrad",
                 1,
                 {{"axis", attr_i(1)}, {"inverse", attr_i(1)}},
                 {flt({2, 6, 2}), flt({2, 6, 2})},
                 1,
                 all3,
                 "inverse"});
    v.push_back({"DFTGrad",
                 1,
                 {{"axis", attr_i(1)}, {"inverse", attr_i(1)}, {"onesided", attr_i(1)}},
                 {flt({2, 8, 1}), flt({2, 5, 2})},
                 1,
                 all3,
                 "irfft"});
    v.push_back(
        {"STFTGrad",
         1,
         {{"onesided", attr_i(0)}},
         {flt({1, 5, 6, 2}), flt({1, 20, 2}), ints({3}, Shape{}), absent(), ints({6}, Shape{})},
         1,
         all3,
         "complex, no window"});
  }
}

}  // namespace oat_agree
