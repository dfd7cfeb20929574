// Gradients of convolution, pooling and resampling (Resize, Upsample). Each is one dedicated
// gradient op that takes the forward node's attributes (the window geometry) and recomputes what
// it needs; the math is in the kernels' header comments (runtime/cpu/kernels/grad_conv.cc,
// grad_conv_transpose.cc, grad_pool.cc, resize.cc).
#include "runtime/cpu/kernels/resize_geometry.h"
#include "runtime/cpu/kernels/roi_align_args.h"
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;
using Attrs = std::map<std::string, Attribute>;

// The window attributes every windowed op shares, plus `extra`, copied from the forward node.
Attrs window_attrs(const Node& n, std::initializer_list<const char*> extra = {}) {
  Attrs a;
  for (const char* k : {"kernel_shape", "strides", "pads", "dilations", "auto_pad"})
    if (const Attribute* v = n.attr(k)) a[k] = *v;
  for (const char* k : extra)
    if (const Attribute* v = n.attr(k)) a[k] = *v;
  return a;
}

// One multi-output gradient op (dX, dW, dB) = op(dY, X, W), computing only the wanted outputs.
void conv_like_grad(G& c, const char* op, std::initializer_list<const char*> extra) {
  const std::vector<bool> wanted = {c.needs_GI(0), c.needs_GI(1), c.needs_GI(2)};
  auto outs =
      c.emit_grad_op_outputs(op, {c.GO(0), c.I(0), c.I(1)}, window_attrs(c.node(), extra), wanted);
  for (int i = 0; i < 3; ++i)
    if (wanted[i]) c.set_GI(i, outs[i]);
}

// Conv:  (dX, dW, dB) = ConvGrad(dY, X, W)
//   dX_ng = col2im(W_gᵀ · dY_ng),  dW_g = Σ_n dY_ng · im2col(X_ng)ᵀ,  dB = Σ_{n, o} dY
void conv_grad(G& c) { conv_like_grad(c, "ConvGrad", {"group"}); }

// ConvTranspose:  (dX, dW, dB) = ConvTransposeGrad(dY, X, W)
//   col = im2col(dY_ng),  dX_ng = W_g · col,  dW_g = Σ_n X_ng · colᵀ,  dB = Σ_{n, o} dY
void conv_transpose_grad(G& c) {
  conv_like_grad(c, "ConvTransposeGrad", {"group", "output_padding", "output_shape"});
}

// MaxPool:  dX = MaxPoolGrad(dY, X):  dX[argmax of window o] += dY[o]  (first maximum on ties).
// The Indices output is an integer and carries no gradient.
void max_pool_grad(G& c) {
  if (c.GO(0).empty()) return;
  c.set_GI(0,
           c.emit_grad_op("MaxPoolGrad", {c.GO(0), c.I(0)}, window_attrs(c.node(), {"ceil_mode"})));
}

// AveragePool:  dX = AveragePoolGrad(dY, shape(X)):  dX[t] += dY[o] / count_o for each tap t of
// window o inside the input (count_o as the forward divides by).
void average_pool_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("AveragePoolGrad", {c.GO(0), c.shape_of(c.I(0))},
                             window_attrs(c.node(), {"ceil_mode", "count_include_pad"})));
}

// GlobalAveragePool:  dX[n, c, ...] = dY[n, c] / (number of positions)
void global_average_pool_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("GlobalAveragePoolGrad", {c.GO(0), c.shape_of(c.I(0))}));
}

// GlobalMaxPool:  dX[n, c, ...] = dY[n, c] at the plane's first maximum, 0 elsewhere
void global_max_pool_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("GlobalMaxPoolGrad", {c.GO(0), c.I(0)}));
}

// MaxUnpool:  Y.flat[I.flat[j]] = X.flat[j]  ->  dX.flat[j] = dY.flat[I.flat[j]]:
//   dX = Reshape(Gather(Flatten(dY, 0), I, axis 1), shape(X))
// as PyTorch's max_unpool backward (a gather): an index two elements share (overlapping pooling
// windows) gives the gradient to both, though only the later one's value reached Y. I and
// output_shape are integers.
void max_unpool_grad(G& c) {
  if (c.GO(0).empty()) return;
  const std::string flat = c.emit1("Flatten", {c.GO(0)}, {{"axis", G::attr_int(0)}});
  const std::string picked = c.emit1("Gather", {flat, c.I(1)}, {{"axis", G::attr_int(1)}});
  c.set_GI(0, c.emit1("Reshape", {picked, c.shape_of(c.I(0))}));
}

Attribute string_attr(const std::string& v) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = v;
  return a;
}

// Resize, Upsample:  Y[o] = Σ over the taps of Π_d w_d · X[idx]  (resize_geometry.h)
//   ⇒  dX = ResizeGrad(dY, shape(X), roi, scales):
//      dX[j] = Σ_{taps of o reading j} Π_d w_d · dY[o],
// the adjoint with the forward's weights (PyTorch's upsample backward), for every mode. The
// forward's rule goes into explicit attributes (Resize-10 and Upsample: asymmetric, "simple"
// nearest), its scales as they were given (input, or Upsample-7's attribute); with sizes,
// ResizeGrad takes s = dY.shape / shape(X). roi, scales and sizes get no gradient.
void resize_grad(G& c) {
  const Node& n = c.node();
  const cpu::ResizeAttrs a = cpu::parse_resize_attrs(n);
  Attrs attrs;
  attrs["mode"] = string_attr(cpu::resize_mode_name(a.mode));
  attrs["coordinate_transformation_mode"] = string_attr(cpu::resize_coord_name(a.coord));
  attrs["nearest_mode"] = string_attr(cpu::resize_nearest_name(a.nearest));
  attrs["cubic_coeff_a"] = G::attr_float(static_cast<float>(a.cubic_a));
  attrs["exclude_outside"] = G::attr_int(a.exclude_outside ? 1 : 0);
  attrs["extrapolation_value"] = G::attr_float(a.extrapolation);
  if (!a.scales_attr.empty()) {
    Attribute s;
    s.kind = Attribute::Kind::Floats;
    s.floats = a.scales_attr;
    attrs["scales"] = s;
  }
  std::vector<std::string> ins = {c.GO(0), c.shape_of(c.I(0)),
                                  a.roi_input >= 0 ? c.I(a.roi_input) : std::string(),
                                  a.scales_input >= 0 ? c.I(a.scales_input) : std::string()};
  while (ins.back().empty()) ins.pop_back();
  c.set_GI(0, c.emit_grad_op("ResizeGrad", ins, attrs));
}

// RoiAlign (avg mode): Y = Σ taps w·X / count is linear in X, so dX = RoiAlignGrad(dY, shape(X),
// rois, batch_indices) with the forward's attributes (coordinate_transformation_mode spelt out:
// opset 10's default differs). rois and batch_indices get no gradient (as torchvision's
// roi_align). Max mode (ONNX Runtime's largest weighted tap) has none: refused.
void roi_align_grad(G& c) {
  const Node& n = c.node();
  const cpu::RoiAlignArgs a = cpu::roi_align_args(n);
  if (a.max_mode)
    throw Error(cat(n.describe(), ": RoiAlign with mode \"max\" has no gradient (only \"avg\" "
                    "trains); it lies between the parameters and the loss"));
  Attrs attrs;
  attrs["mode"] = string_attr("avg");
  attrs["coordinate_transformation_mode"] =
      string_attr(a.half_pixel ? "half_pixel" : "output_half_pixel");
  attrs["output_height"] = G::attr_int(a.out_h);
  attrs["output_width"] = G::attr_int(a.out_w);
  attrs["sampling_ratio"] = G::attr_int(a.sampling_ratio);
  attrs["spatial_scale"] = G::attr_float(a.spatial_scale);
  c.set_GI(0, c.emit_grad_op("RoiAlignGrad", {c.GO(0), c.shape_of(c.I(0)), c.I(1), c.I(2)},
                             attrs));
}

}  // namespace

void register_conv_gradients(GradientRegistry& r) {
  r.add(OpId::RoiAlign, {roi_align_grad, {1, 2}});
  r.add(OpId::Conv, {conv_grad, {}});
  r.add(OpId::ConvTranspose, {conv_transpose_grad, {}});
  r.add(OpId::MaxPool, {max_pool_grad, {}});
  r.add(OpId::MaxUnpool, {max_unpool_grad, {1, 2}});
  r.add(OpId::AveragePool, {average_pool_grad, {}});
  r.add(OpId::GlobalAveragePool, {global_average_pool_grad, {}});
  r.add(OpId::GlobalMaxPool, {global_max_pool_grad, {}});
  r.add(OpId::Resize, {resize_grad, {1, 2, 3}});
  r.add(OpId::Upsample, {resize_grad, {1}});
}

}  // namespace oat::train
