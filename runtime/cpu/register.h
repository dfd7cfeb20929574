// The CPU kernel table. Each family file under kernels/ defines one register_* function;
// register.cc calls them all, in one explicit list (no static initialisers).
#pragma once

#include "runtime/registry.h"

namespace oat::cpu {

void register_kernels(KernelRegistry& r);

void register_binary(KernelRegistry& r);      // kernels/binary.cc: Add Sub Mul Div Pow Sum Max Min Mod
void register_unary(KernelRegistry& r);       // kernels/unary.cc: Sqrt Exp Log Neg Abs Reciprocal ...
void register_activation(KernelRegistry& r);  // kernels/activation.cc: Relu LeakyRelu Sigmoid ...
void register_compare(KernelRegistry& r);     // kernels/compare.cc: Equal Less ... Not And Or Where
void register_matmul(KernelRegistry& r);      // kernels/matmul.cc: MatMul Gemm
void register_conv(KernelRegistry& r);        // kernels/conv.cc, conv_transpose.cc
void register_pool(KernelRegistry& r);        // kernels/pool.cc
void register_norm(KernelRegistry& r);        // kernels/norm.cc: BatchNormalization LayerNormalization
void register_softmax(KernelRegistry& r);     // kernels/softmax.cc
void register_reduce(KernelRegistry& r);      // kernels/reduce.cc
void register_shape(KernelRegistry& r);       // kernels/shape.cc: Reshape Flatten Squeeze ... Shape
void register_movement(KernelRegistry& r);    // kernels/movement.cc: Transpose Concat Split Slice ...
void register_generator(KernelRegistry& r);   // kernels/generator.cc: Constant Cast Range Dropout ...
void register_control_flow(KernelRegistry& r);  // kernels/control_flow.cc: If Loop Scan SequenceMap
// kernels/quantize.cc: QuantizeLinear DequantizeLinear DynamicQuantizeLinear MatMulInteger
// ConvInteger QLinearMatMul QLinearConv, and QuantizeLinearGrad (fake quantization's STE)
void register_quantize(KernelRegistry& r);
// detection and data-dependent selection
void register_nms(KernelRegistry& r);           // kernels/nms.cc: NonMaxSuppression
void register_roi_align(KernelRegistry& r);     // kernels/roi_align.cc: RoiAlign
void register_max_unpool(KernelRegistry& r);    // kernels/max_unpool.cc: MaxUnpool
void register_selection(KernelRegistry& r);     // kernels/selection.cc: Compress Unique NonZero
void register_det(KernelRegistry& r);           // kernels/det.cc: Det
void register_bitshift(KernelRegistry& r);      // kernels/bitshift.cc: BitShift
void register_tfidf(KernelRegistry& r);         // kernels/tfidf.cc: TfIdfVectorizer
void register_string_normalizer(KernelRegistry& r);  // kernels/string_normalizer.cc
// ai.onnx.ml (classical ML models)
void register_ml_features(KernelRegistry& r);  // kernels/ml_features.cc: Scaler Normalizer ...
void register_ml_encoders(KernelRegistry& r);  // kernels/ml_encoders.cc: LabelEncoder ...
void register_ml_linear(KernelRegistry& r);    // kernels/ml_linear.cc: LinearRegressor/Classifier
void register_ml_svm(KernelRegistry& r);       // kernels/ml_svm.cc: SVMRegressor SVMClassifier
void register_ml_trees(KernelRegistry& r);     // kernels/ml_trees.cc: TreeEnsemble*
void register_ml_maps(KernelRegistry& r);      // kernels/ml_maps.cc: ZipMap DictVectorizer CastMap
// kernels/random.cc: RandomNormal RandomUniform RandomNormalLike RandomUniformLike Bernoulli
// Multinomial
void register_random(KernelRegistry& r);
// signal processing (opset 17)
void register_signal_window(KernelRegistry& r);  // kernels/signal_window.cc: Hann/Hamming/BlackmanWindow MelWeightMatrix
void register_dft(KernelRegistry& r);            // kernels/dft.cc: DFT STFT DFTGrad STFTGrad
void register_sequence(KernelRegistry& r);       // kernels/sequence.cc: Sequence*, Optional*
// fused inference kernels (the CPU Executor's lowering of composite ops)
void register_rnn_sequence(KernelRegistry& r);  // kernels/rnn_sequence.cc: LSTMSequence GRUSequence

// Gradient kernels (internal domain, training graphs only).
void register_grad_reduce(KernelRegistry& r);      // kernels/grad_reduce.cc: SumToShape ReduceGrad
void register_grad_activation(KernelRegistry& r);  // kernels/grad_activation.cc: ReluGrad ...
void register_grad_loss(KernelRegistry& r);        // kernels/grad_loss.cc: SoftmaxGrad ... losses
void register_grad_matmul(KernelRegistry& r);      // kernels/grad_matmul.cc: MatMulGrad GemmGrad
void register_grad_conv(KernelRegistry& r);        // kernels/grad_conv.cc: ConvGrad, pool grads
void register_grad_norm(KernelRegistry& r);        // kernels/grad_norm.cc: BatchNorm/LayerNorm grads
void register_grad_movement(KernelRegistry& r);    // kernels/grad_movement.cc: Gather/Slice/Pad grads
void register_scatter_reduce(KernelRegistry& r);   // kernels/scatter_reduce.cc: ScatterReduce
void register_optimizer(KernelRegistry& r);        // kernels/optimizer.cc: SGD/Adam updates, scaler

}  // namespace oat::cpu
