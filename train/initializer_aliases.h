// Untying the parameters that an exporter merged because their values were equal.
//
// torch.onnx (in its default eval mode) writes one initializer for parameters that merely START
// with equal values — the layers of an nn.TransformerEncoder are deep copies of one layer, every
// zero bias and every LayerNorm weight of ones is equal to the others, a BatchNorm's zero
// running_mean equals its zero bias — and turns each other one into an Identity node of it
// (`b.weight = Identity(a.weight)`). PyTorch trains them as separate parameters: a module used
// twice (true sharing) is exported as one initializer read twice, never as an Identity. Training
// the merged file as it is would tie them (one gradient sum, one value), and a BatchNorm whose
// running statistic is such an Identity could not update it.
//
// tf2onnx (its merge_duplication pass) does the same without Identity nodes: every read of an
// equal-valued tensor names one initializer. A Keras model at its initial values has all its
// BatchNorm scales and running variances (ones) in one initializer and all its BatchNorm
// offsets, running means and zero biases in another.
//
// So training unties them:
//   1. each Identity whose input is a float initializer (not a graph input, which a caller may
//      override) and whose output is not a graph output becomes an initializer of its own holding
//      a copy of the value; chains (Identity of such an Identity) untie too;
//   2. a float initializer read more than once (by several nodes, or at several inputs of one)
//      is split into one initializer per read when
//        - some read is a BatchNormalization's running mean or var (input 3 or 4): that is state
//          the training step overwrites, and must not be what another input reads; or
//        - it has more than one element, all equal (a constant fill such as zeros or ones: the
//          values exporters merge at initialisation), and the producer is not "pytorch" (which
//          marks merged parameters with Identity nodes, so one initializer read twice there is a
//          truly shared module).
//      The first read keeps the name; input k of node N gets
//      onnx_loader::untied_read_name(name, N, k).
// onnx_loader::save_model writes the trained values back the same way: the Identity node is
// replaced by an initializer of that name; an untied read becomes a new initializer that the
// node's input then names (onnx_loader/model.h).
#pragma once

#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::train {

// `g` with its initializer aliases and merged reads untied; `untied` (optional) receives the new
// initializers' names (the Identity copies in graph order, then the read copies).
Graph untie_initializer_aliases(const Graph& g, std::vector<std::string>* untied = nullptr);

}  // namespace oat::train
