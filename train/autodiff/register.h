// The gradient table: one register_*_gradients per family file under grads/, all called from
// register.cc in one explicit list.
#pragma once

#include "train/autodiff/gradient_builder.h"

namespace oat::train {

void register_gradients(GradientRegistry& r);

void register_elementwise_gradients(GradientRegistry& r);  // grads/elementwise.cc
void register_activation_gradients(GradientRegistry& r);   // grads/activation.cc
void register_matmul_gradients(GradientRegistry& r);       // grads/matmul.cc
void register_conv_gradients(GradientRegistry& r);         // grads/conv.cc (Conv, pools)
void register_norm_gradients(GradientRegistry& r);         // grads/norm.cc
void register_loss_gradients(GradientRegistry& r);         // grads/loss.cc (softmax family, losses)
void register_reduce_gradients(GradientRegistry& r);       // grads/reduce.cc
void register_shape_gradients(GradientRegistry& r);        // grads/shape.cc
void register_quantize_gradients(GradientRegistry& r);     // grads/quantize.cc (fake quantization)
void register_signal_gradients(GradientRegistry& r);       // grads/signal.cc (DFT, STFT)

}  // namespace oat::train
