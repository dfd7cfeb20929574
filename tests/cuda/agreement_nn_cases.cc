// Agreement cases (agreement_case.h): convolution, pooling, normalisation.
#include "tests/cuda/agreement_case.h"

namespace oat_agree {

void add_nn_cases(std::vector<Case>& v) {
  // convolution, pooling, normalisation
  v.push_back({"Conv",
               11,
               {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}},
               {flt({2, 3, 8, 8}), flt({4, 3, 3, 3}), flt({4})}});
  v.push_back({"Conv",
               11,
               {{"group", attr_i(2)}, {"kernel_shape", attr_ints({3, 3})}},
               {flt({1, 4, 6, 6}), flt({6, 2, 3, 3})}});
  v.push_back({"Conv", 11, {{"dilations", attr_ints({2})}}, {flt({2, 3, 9}), flt({2, 3, 3})}});
  v.push_back({"ConvGrad",
               1,
               {{"pads", attr_ints({1, 1, 1, 1})}},
               {flt({2, 4, 5, 5}), flt({2, 3, 5, 5}), flt({4, 3, 3, 3})},
               3});
  // Asymmetric padding (cuDNN pads both ends alike): X padded by the excess first, the gradient
  // of X cropped back. TF 'same' at stride 2 on an even input (0 before, 1 after), explicit
  // pads, and 1-D.
  v.push_back({"Conv",
               11,
               {{"auto_pad", attr_s("SAME_UPPER")}, {"strides", attr_ints({2, 2})}},
               {flt({2, 3, 8, 8}), flt({4, 3, 3, 3}), flt({4})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "SAME_UPPER, stride 2, asymmetric"});
  v.push_back({"Conv",
               11,
               {{"pads", attr_ints({2, 0, 1, 1})}, {"dilations", attr_ints({1, 2})}},
               {flt({1, 2, 6, 7}), flt({3, 2, 3, 2})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "explicit asymmetric pads, dilated"});
  v.push_back({"Conv",
               11,
               {{"pads", attr_ints({0, 2})}, {"strides", attr_ints({2})}},
               {flt({2, 3, 9}), flt({2, 3, 3})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "1-D asymmetric"});
  v.push_back({"ConvGrad",
               1,
               {{"auto_pad", attr_s("SAME_UPPER")}, {"strides", attr_ints({2, 2})}},
               {flt({2, 4, 4, 4}), flt({2, 3, 8, 8}), flt({4, 3, 3, 3})},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "SAME_UPPER, stride 2, asymmetric"});
  v.push_back({"ConvGrad",
               1,
               {{"pads", attr_ints({2, 0, 1, 1})}, {"dilations", attr_ints({1, 2})}},
               {flt({1, 3, 7, 6}), flt({1, 2, 6, 7}), flt({3, 2, 3, 2})},
               3,
               {DType::F32, DType::F16, DType::BF16},
               "explicit asymmetric pads, dilated"});
  // empty operands skip cuDNN (0 dims are CUDNN_STATUS_BAD_PARAM): Y = B, zero gradients
  v.push_back({"Conv",
               11,
               {{"pads", attr_ints({1, 1, 1, 1})}},
               {flt({2, 0, 5, 5}), flt({4, 0, 3, 3}), flt({4})}});
  v.push_back({"ConvGrad",
               1,
               {{"pads", attr_ints({1, 1, 1, 1})}},
               {flt({0, 4, 5, 5}), flt({0, 3, 5, 5}), flt({4, 3, 3, 3})},
               3});
  v.push_back({"MaxPool",
               12,
               {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
               {flt({2, 3, 6, 6})}});
  v.push_back({"AveragePool",
               11,
               {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}},
               {flt({2, 3, 5, 5})}});
  v.push_back({"AveragePool",
               11,
               {{"kernel_shape", attr_ints({3, 3})},
                {"pads", attr_ints({1, 1, 1, 1})},
                {"count_include_pad", attr_i(1)}},
               {flt({2, 3, 5, 5})}});
  v.push_back({"GlobalAveragePool", 1, {}, {flt({2, 3, 5, 4})}});
  v.push_back({"AveragePool", 11, {{"kernel_shape", attr_ints({2, 2})}}, {flt({0, 3, 5, 5})}});
  v.push_back({"GlobalMaxPool", 1, {}, {flt({2, 3, 5, 4})}});
  // Windows cuDNN cannot express, through the own kernels (pool_impl.h): ceil mode (SqueezeNet),
  // SAME_UPPER with an odd total, dilation, asymmetric pads with count_include_pad.
  v.push_back({"MaxPool",
               12,
               {{"kernel_shape", attr_ints({3, 3})},
                {"strides", attr_ints({2, 2})},
                {"ceil_mode", attr_i(1)}},
               {flt({2, 3, 8, 8})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "ceil mode"});
  v.push_back({"MaxPool",
               12,
               {{"kernel_shape", attr_ints({2, 2})}, {"dilations", attr_ints({2, 2})}},
               {flt({1, 2, 6, 7})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "dilated"});
  v.push_back({"AveragePool",
               11,
               {{"kernel_shape", attr_ints({2, 2})},
                {"auto_pad", attr_s("SAME_UPPER")},
                {"strides", attr_ints({2, 2})}},
               {flt({2, 3, 5, 5})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "SAME_UPPER, odd total"});
  v.push_back({"AveragePool",
               19,
               {{"kernel_shape", attr_ints({3, 2})},
                {"pads", attr_ints({0, 1, 2, 0})},
                {"dilations", attr_ints({1, 2})},
                {"ceil_mode", attr_i(1)},
                {"strides", attr_ints({2, 2})},
                {"count_include_pad", attr_i(1)}},
               {flt({1, 2, 7, 6})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "asymmetric pads, dilated, ceil, count_include_pad"});
  v.push_back(
      {"AveragePool",
       11,
       {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}, {"ceil_mode", attr_i(1)}},
       {flt({2, 2, 8})},
       1,
       {DType::F32, DType::F16, DType::BF16},
       "1-D ceil"});
  v.push_back({"BatchNormalization",
               15,
               {},
               {flt({2, 3, 4, 4}), f32({3}), f32({3}), f32({3}), f32({3}, In::Positive)}});
  // ConvTranspose(+Grad), InstanceNormalization and its gradient (BatchNormalizationGrad with
  // instance = 1), BatchNormalization spatial = 0 (opset < 9), MaxPool's Indices
  const std::vector<DType> all = {DType::F32, DType::F16, DType::BF16};
  const std::map<std::string, Attribute> ct_pads = {{"strides", attr_ints({2, 2})},
                                                    {"pads", attr_ints({1, 1, 1, 1})},
                                                    {"output_padding", attr_ints({1, 1})}};
  const std::map<std::string, Attribute> ct_group = {
      {"group", attr_i(2)}, {"dilations", attr_ints({2})}, {"strides", attr_ints({3})}};
  const std::map<std::string, Attribute> ct_shape = {{"strides", attr_ints({2, 2})},
                                                     {"output_shape", attr_ints({8, 7})}};
  v.push_back({"ConvTranspose", 11, ct_pads, {flt({2, 4, 3, 3}), flt({4, 3, 3, 3}), flt({3})}});
  v.push_back({"ConvTranspose",
               11,
               ct_group,
               {flt({2, 4, 5}), flt({4, 2, 3})},
               1,
               all,
               "group, dilated 1-D"});
  v.push_back({"ConvTranspose",
               11,
               ct_shape,
               {flt({1, 2, 3, 3}), flt({2, 3, 3, 3})},
               1,
               all,
               "output_shape"});
  v.push_back({"ConvTranspose",
               11,
               {{"auto_pad", attr_s("SAME_LOWER")}, {"strides", attr_ints({2, 2})}},
               {flt({1, 2, 3, 3}), flt({2, 3, 3, 3}), flt({3})},
               1,
               all,
               "SAME_LOWER"});
  // End padding beyond what cuDNN's symmetric padding expresses: Y computed longer, cropped.
  const std::map<std::string, Attribute> ct_same = {{"auto_pad", attr_s("SAME_UPPER")},
                                                    {"strides", attr_ints({2, 2})}};
  const std::map<std::string, Attribute> ct_end = {{"pads", attr_ints({0, 1, 2, 1})},
                                                   {"strides", attr_ints({2, 2})}};
  v.push_back({"ConvTranspose",
               11,
               ct_same,
               {flt({1, 2, 3, 3}), flt({2, 3, 3, 3}), flt({3})},
               1,
               all,
               "SAME_UPPER, odd total"});
  v.push_back({"ConvTranspose",
               11,
               ct_end,
               {flt({2, 2, 4, 4}), flt({2, 3, 3, 3})},
               1,
               all,
               "larger end pads"});
  v.push_back({"ConvTransposeGrad",
               1,
               ct_same,
               {flt({1, 3, 6, 6}), flt({1, 2, 3, 3}), flt({2, 3, 3, 3})},
               3,
               all,
               "SAME_UPPER, odd total"});
  v.push_back({"ConvTransposeGrad",
               1,
               ct_end,
               {flt({2, 3, 7, 7}), flt({2, 2, 4, 4}), flt({2, 3, 3, 3})},
               3,
               all,
               "larger end pads"});
  v.push_back({"ConvTranspose",
               11,
               {{"pads", attr_ints({0, 1, 0, 0, 1, 0})}},
               {flt({1, 2, 2, 3, 3}), flt({2, 2, 2, 2, 2})},
               1,
               all,
               "3-D"});
  v.push_back({"ConvTransposeGrad",
               1,
               ct_pads,
               {flt({2, 3, 6, 6}), flt({2, 4, 3, 3}), flt({4, 3, 3, 3})},
               3});
  v.push_back({"ConvTransposeGrad",
               1,
               ct_group,
               {flt({2, 4, 17}), flt({2, 4, 5}), flt({4, 2, 3})},
               3,
               all,
               "group, dilated 1-D"});
  v.push_back({"ConvTransposeGrad",
               1,
               ct_shape,
               {flt({1, 3, 8, 7}), flt({1, 2, 3, 3}), flt({2, 3, 3, 3})},
               3,
               all,
               "output_shape"});
  {
    // grad_type = 1: dW, dB in F32 (CUDA's dW: cuDNN writes F16/BF16, then widened).
    auto attrs = ct_pads;
    attrs["grad_type"] = attr_i(1);
    v.push_back({"ConvTransposeGrad",
                 1,
                 attrs,
                 {flt({2, 3, 6, 6}), flt({2, 4, 3, 3}), flt({4, 3, 3, 3})},
                 3,
                 all,
                 "grad_type"});
  }
  v.push_back({"InstanceNormalization", 6, {}, {flt({2, 3, 4, 5}), flt({3}), flt({3})}});
  v.push_back({"InstanceNormalization",
               6,
               {{"epsilon", attr_f(1e-3f)}},
               {flt({2, 3, 7}), flt({3}), flt({3})},
               1,
               all,
               "1-D"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {{"instance", attr_i(1)}, {"training_mode", attr_i(1)}},
               {flt({2, 3, 4, 5}), flt({2, 3, 4, 5}), f32({3})},
               3,
               all,
               "instance"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {{"instance", attr_i(1)}},
               {flt({2, 3, 6}), flt({2, 3, 6}), flt({3})},
               3,
               all,
               "instance, scale in dtype"});
  v.push_back({"BatchNormalization",
               7,
               {{"spatial", attr_i(0)}},
               {flt({2, 3, 4}), f32({3, 4}), f32({3, 4}), f32({3, 4}), f32({3, 4}, In::Positive)},
               1,
               all,
               "spatial=0"});
  v.push_back({"BatchNormalization",
               7,
               {{"spatial", attr_i(0)}, {"momentum", attr_f(0.8f)}},
               {flt({4, 3, 2, 2}), f32({3, 2, 2}), f32({3, 2, 2}), f32({3, 2, 2}),
                f32({3, 2, 2}, In::Positive)},
               5,
               all,
               "spatial=0, training"});
  v.push_back({"BatchNormalizationGrad",
               1,
               {{"spatial", attr_i(0)}, {"training_mode", attr_i(1)}},
               {flt({4, 3, 2, 2}), flt({4, 3, 2, 2}), f32({3, 2, 2})},
               3,
               all,
               "spatial=0, training"});
  v.push_back(
      {"BatchNormalizationGrad",
       1,
       {{"spatial", attr_i(0)}},
       {flt({4, 3, 5}), flt({4, 3, 5}), f32({3, 5}), f32({3, 5}), f32({3, 5}, In::Positive)},
       3,
       all,
       "spatial=0"});
  v.push_back({"MaxPool",
               12,
               {{"kernel_shape", attr_ints({3, 3})},
                {"strides", attr_ints({2, 2})},
                {"pads", attr_ints({1, 1, 1, 1})}},
               {flt({2, 3, 7, 7})},
               2,
               all,
               "Indices"});
  v.push_back({"MaxPool",
               12,
               {{"kernel_shape", attr_ints({2, 3})},
                {"dilations", attr_ints({2, 1})},
                {"strides", attr_ints({2, 2})},
                {"pads", attr_ints({0, 1, 1, 0})},
                {"ceil_mode", attr_i(1)},
                {"storage_order", attr_i(1)}},
               {flt({1, 2, 7, 6})},
               2,
               all,
               "Indices, column-major, dilated, ceil"});
  v.push_back({"MaxPool",
               12,
               {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}},
               {flt({2, 2, 9})},
               2,
               all,
               "Indices 1-D"});
}

}  // namespace oat_agree
