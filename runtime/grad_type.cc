// The weight-gradient ops' `grad_type` attribute (see grad_type.h).
#include "runtime/grad_type.h"

#include "runtime/error.h"

namespace oat {

namespace {

// The first weight/bias output and the number of them: MatMulGrad 1 (dB); the others 2.
int weight_outputs(const Node& n) {
  if (n.domain != kInternalDomain) return 0;
  if (n.op_type == "MatMulGrad") return 1;
  if (n.op_type == "GemmGrad" || n.op_type == "ConvGrad" || n.op_type == "ConvTransposeGrad")
    return 2;
  return 0;
}

}  // namespace

bool has_weight_grad_outputs(const Node& n) { return weight_outputs(n) > 0; }

bool is_weight_grad_output(const Node& n, size_t k) {
  const int count = weight_outputs(n);
  return k >= 1 && k <= static_cast<size_t>(count);
}

bool weight_grads_in_fp32(const Node& n) {
  if (!has_weight_grad_outputs(n) || !n.has_attr(kGradTypeAttr)) return false;
  const int64_t code = n.attr_int(kGradTypeAttr, 0);  // throws on a non-int attribute
  if (code != kGradTypeFloat)
    throw Error(cat(n.describe(), ": grad_type ", code,
                    " is not supported; the only value is 1 (FLOAT: weight and bias gradients in "
                    "float32), absent means the operands' dtype"));
  return true;
}

void set_weight_grads_fp32(Node& n) {
  if (!has_weight_grad_outputs(n))
    throw Error(cat(n.describe(), ": grad_type applies to MatMulGrad, GemmGrad, ConvGrad and "
                    "ConvTransposeGrad (internal domain), not to ", n.op_type));
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = kGradTypeFloat;
  n.attrs[kGradTypeAttr] = a;
}

}  // namespace oat
