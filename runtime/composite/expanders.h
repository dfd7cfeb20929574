// The built-in composite ops (runtime/composite.h): one expander per op family, one file each.
#pragma once

#include <map>
#include <string>

#include "runtime/composite.h"

namespace oat::composite {

// norm.cc
void expand_lrn(Expansion& e);
void expand_mean_variance_normalization(Expansion& e);
void expand_group_normalization(Expansion& e);

// op type -> expander, for every composite op this build knows.
std::map<std::string, Expander> builtin_expanders();

// Einsum (opset 12) as Transpose, Reshape, MatMul, Mul, Unsqueeze, ReduceSum and Slice (einsum.cc).
void expand_einsum(Expansion& e);
// RNN, GRU and LSTM (opsets 7 and 14) unrolled over their fixed sequence length (rnn.cc).
void expand_rnn(Expansion& e);
void expand_gru(Expansion& e);
void expand_lstm(Expansion& e);
// OneHot, EyeLike, GatherND, ScatterElements/Scatter, ScatterND and ReverseSequence as int64 index
// arithmetic, Gather/GatherElements and the scatter-adds GatherGrad/GatherElementsGrad
// (indexing.cc).
void expand_one_hot(Expansion& e);
void expand_eye_like(Expansion& e);
void expand_gather_nd(Expansion& e);
void expand_scatter_elements(Expansion& e);  // also the deprecated Scatter
void expand_scatter_nd(Expansion& e);
void expand_reverse_sequence(Expansion& e);
// GridSample (opsets 16, 20; 4-D) as coordinate arithmetic, GatherElements and weighted sums
// (grid_sample.cc).
void expand_grid_sample(Expansion& e);

// ONNX's optimizers of domain ai.onnx.preview.training (keys "ai.onnx.preview.training.Adagrad",
// ...) as elementwise ops (training_ops.cc).
void expand_adagrad(Expansion& e);
void expand_momentum(Expansion& e);
void expand_adam(Expansion& e);

}  // namespace oat::composite
