// Multi-tensor optimizer updates (internal domain): every parameter's SGDUpdate / AdamUpdate of
// a training graph in ONE node, so a device runs the whole optimizer step as one launch (apex's
// multi_tensor_apply, torch.optim's fused=True) instead of one per parameter.
//
//   MultiSGDUpdate ([P, G, V, W] × n, lr, skip)        -> ([P', V', W'] × n)
//   MultiAdamUpdate([P, G, M, V, W] × n, lr, step, skip) -> ([P', M', V', W'] × n)
//
// Group k is exactly SGDUpdate(P, G, V, lr, skip) -> (P', V', W') or AdamUpdate(P, G, M, V, lr,
// step, skip) -> (P', M', V', W') (runtime/cpu/kernels/optimizer.cc has the formulas; the
// attributes, working_type included, are the node's and hold for every group). Optional slots
// are "" as in the single ops: V without momentum, W and W' without a working copy, skip without
// loss scaling (or the trailing skip left out). W is the current working copy (the state W' replaces): no kernel reads it; it is
// an input so that a caller that donates it (Executor::run_resident) lets the update write W'
// into its storage, as it writes P', M', V' into theirs.
#pragma once

#include "runtime/graph.h"

namespace oat {

struct MultiUpdateLayout {
  OpId single;     // SGDUpdate or AdamUpdate
  int in_group;    // inputs per parameter: 4 (P, G, V, W) or 5 (P, G, M, V, W)
  int out_group;   // outputs per parameter: 3 (P', V', W') or 4 (P', M', V', W')
  int scalars;     // trailing inputs: 2 (lr, skip) or 3 (lr, step, skip)
  int working_in;  // index of W in a group
};

// The layout of MultiSGDUpdate / MultiAdamUpdate; throws Error for any other op.
MultiUpdateLayout multi_update_layout(OpId op);

// How many parameters the node updates (its first scalar, lr, is input groups·in_group);
// throws Error naming the node when its input or output count does not fit the layout.
int multi_update_groups(const Node& multi);

// Group k as the single-tensor node (SGDUpdate / AdamUpdate, the multi node's attributes and
// domain, named "<multi>[<P>]"), W left out of its inputs.
Node multi_update_part(const Node& multi, int k);

}  // namespace oat
