// The CUDA kernel table: each family file under kernels/ defines one register_* function and
// register.cc calls them all in one explicit list (as runtime/cpu/register.h).
#pragma once

#include "runtime/registry.h"

namespace oat::cuda {

void register_elementwise(KernelRegistry& r);  // kernels/elementwise.cc: binary, unary, Cast
void register_matmul(KernelRegistry& r);       // kernels/matmul.cc: MatMul Gemm (cuBLAS)
void register_shape(KernelRegistry& r);        // kernels/shape.cc: views, Shape, Size
void register_dropout(KernelRegistry& r);      // kernels/dropout.cc: Dropout
void register_random(KernelRegistry& r);       // kernels/random.cc: unseeded Random* (Philox)
void register_movement(KernelRegistry& r);     // kernels/movement.cc: Transpose Concat Expand ...
void register_pad(KernelRegistry& r);          // kernels/pad.cc: Pad
void register_resize(KernelRegistry& r);       // kernels/resize.cc: Resize Upsample ResizeGrad
void register_softmax(KernelRegistry& r);      // kernels/softmax.cc: Softmax LogSoftmax
void register_reduce(KernelRegistry& r);       // kernels/reduce.cc: Reduce*
void register_conv(KernelRegistry& r);         // kernels/conv.cc: Conv, ConvGrad (cuDNN)
void register_conv_transpose(KernelRegistry& r);  // kernels/conv_transpose.cc: ConvTranspose(+Grad)
void register_pool(KernelRegistry& r);         // kernels/pool.cc: pooling (cuDNN)
void register_batch_norm(KernelRegistry& r);   // kernels/batch_norm.cc: BatchNormalization(+Grad)
void register_optimizer(KernelRegistry& r);    // kernels/optimizer.cc: fused AMP kernels
// Gradient kernels (internal domain, training graphs).
void register_grad_activation(KernelRegistry& r);  // kernels/grad_activation.cc: ReluGrad ...
void register_grad_reduce(KernelRegistry& r);      // kernels/grad_reduce.cc: SumToShape ReduceGrad
void register_grad_matmul(KernelRegistry& r);      // kernels/grad_matmul.cc: MatMulGrad GemmGrad
void register_grad_pool(KernelRegistry& r);        // kernels/grad_pool.cc: pooling gradients
void register_grad_movement(KernelRegistry& r);    // kernels/grad_movement.cc: Slice/Concat/Tile/Dropout
void register_layer_norm(KernelRegistry& r);  // kernels/layer_norm.cc: LayerNormalization(+Grad)
void register_loss(KernelRegistry& r);  // kernels/loss.cc: NLL, SoftmaxCrossEntropy and grads
void register_topk(KernelRegistry& r);  // kernels/topk.cc: TopK (CUB segmented sort)
void register_lp_norm(KernelRegistry& r);  // kernels/lp_norm.cc: LpNormalization(+Grad)
// kernels/quantize.cc: QuantizeLinear DequantizeLinear QuantizeLinearGrad (device kernels);
// DynamicQuantizeLinear MatMulInteger ConvInteger QLinearMatMul QLinearConv (host kernels)
void register_quantize(KernelRegistry& r);
// detection and index ops (NonMaxSuppression, Compress, Unique, Det run on the host: context.cc)
void register_roi_align(KernelRegistry& r);   // kernels/roi_align.cc: RoiAlign
void register_signal(KernelRegistry& r);      // kernels/signal.cc: DFT, STFT and their adjoints
void register_scatter_reduce(KernelRegistry& r);  // kernels/scatter_reduce.cc: ScatterReduce
void register_index_ops(KernelRegistry& r);   // kernels/index_ops.cc: MaxUnpool BitShift

}  // namespace oat::cuda
