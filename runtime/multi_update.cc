#include "runtime/multi_update.h"

#include "runtime/error.h"
#include "runtime/ops.h"

namespace oat {

MultiUpdateLayout multi_update_layout(OpId op) {
  if (op == OpId::MultiSGDUpdate) return {OpId::SGDUpdate, 4, 3, 2, 3};
  if (op == OpId::MultiAdamUpdate) return {OpId::AdamUpdate, 5, 4, 3, 4};
  throw Error(cat("internal: ", op_name(op), " is not a multi-tensor update"));
}

int multi_update_groups(const Node& multi) {
  const MultiUpdateLayout l = multi_update_layout(multi.op);
  // The trailing skip may be left out, as ONNX's trailing optional inputs: in_group·n + scalars
  // or in_group·n + scalars − 1 inputs (never both, as in_group > 2).
  const int total = static_cast<int>(multi.inputs.size());
  int n = 0;
  for (int scalars : {l.scalars, l.scalars - 1}) {
    const int ins = total - scalars;
    if (ins > 0 && ins % l.in_group == 0) {
      n = ins / l.in_group;
      break;
    }
  }
  if (n == 0)
    throw Error(cat(multi.describe(), ": ", total, " inputs; expected ", l.in_group,
                    " per parameter and ", l.scalars, " scalars after them (the last, skip, ",
                    "may be left out)"));
  if (static_cast<int>(multi.outputs.size()) != n * l.out_group)
    throw Error(cat(multi.describe(), ": ", multi.outputs.size(), " outputs for ", n,
                    " parameters; expected ", l.out_group, " per parameter"));
  return n;
}

Node multi_update_part(const Node& multi, int k) {
  const MultiUpdateLayout l = multi_update_layout(multi.op);
  const size_t in0 = static_cast<size_t>(k * l.in_group);
  const size_t out0 = static_cast<size_t>(k * l.out_group);
  const size_t scalars = static_cast<size_t>(multi_update_groups(multi) * l.in_group);
  Node part;
  part.op = l.single;
  part.op_type = op_name(l.single);
  part.domain = multi.domain;
  part.opset = multi.opset;
  part.attrs = multi.attrs;
  part.name = cat(multi.name, "[", multi.inputs[in0], "]");
  // P, G, V (SGD) / P, G, M, V (Adam): the group without W.
  for (int i = 0; i < l.working_in; ++i) part.inputs.push_back(multi.inputs[in0 + i]);
  for (size_t i = scalars; i < multi.inputs.size(); ++i) part.inputs.push_back(multi.inputs[i]);
  for (int o = 0; o < l.out_group; ++o) part.outputs.push_back(multi.outputs[out0 + o]);
  return part;
}

}  // namespace oat
