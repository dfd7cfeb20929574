#include "runtime/cpu/kernels/conv_geometry.h"

#include <algorithm>

namespace oat::cpu {

namespace {

std::string ints_str(const std::vector<int64_t>& v) { return shape_str(v); }

}  // namespace

WindowAttrs parse_window_attrs(const Node& node) {
  WindowAttrs a;
  a.kernel_shape = node.attr_ints("kernel_shape");
  a.strides = node.attr_ints("strides");
  a.dilations = node.attr_ints("dilations");
  a.pads = node.attr_ints("pads");
  const std::string ap = node.attr_string("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap.empty()) {
    a.auto_pad = AutoPad::NotSet;
  } else if (ap == "SAME_UPPER") {
    a.auto_pad = AutoPad::SameUpper;
  } else if (ap == "SAME_LOWER") {
    a.auto_pad = AutoPad::SameLower;
  } else if (ap == "VALID") {
    a.auto_pad = AutoPad::Valid;
  } else {
    throw Error(cat(node.describe(), ": unknown auto_pad '", ap, "'"));
  }
  a.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  return a;
}

Shape Window3::out_shape() const {
  Shape s;
  for (int i = 3 - nd; i < 3; ++i) s.push_back(out[i]);
  return s;
}

bool Window3::is_pointwise() const {
  for (int i = 0; i < 3; ++i)
    if (k[i] != 1 || stride[i] != 1 || pad[i] != 0 || pad_end[i] != 0 || in[i] != out[i])
      return false;
  return true;
}

bool Window3::is_plain_2x2() const {
  return nd == 2 && k[1] == 2 && k[2] == 2 && stride[1] == 2 && stride[2] == 2 && dil[1] == 1 &&
         dil[2] == 1 && pad[1] == 0 && pad[2] == 0 && 2 * out[1] <= in[1] && 2 * out[2] <= in[2];
}

Window3 window_from_attrs(const KernelContext& ctx, const WindowAttrs& a, const Shape& x_shape,
                          const std::vector<int64_t>& kernel) {
  const int nd = static_cast<int>(x_shape.size()) - 2;
  if (nd < 1)
    ctx.fail(cat("input must have rank >= 3 (N, C, spatial...), got ", shape_str(x_shape)));
  if (nd > 3)
    throw Unsupported(cat(ctx.node().describe(), ": ", nd, "-D windows are not implemented (input ",
                          shape_str(x_shape), ")"),
                      cat(ctx.node().op_type, "(", nd, "-D)"));
  if (static_cast<int>(kernel.size()) != nd)
    ctx.fail(cat("kernel shape ", ints_str(kernel), " does not match input ", shape_str(x_shape)));
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* what) {
    if (!v.empty() && v.size() != want)
      ctx.fail(cat(what, " ", ints_str(v), " has ", v.size(), " values, expected ", want,
                   " for input ", shape_str(x_shape)));
  };
  check_len(a.strides, nd, "strides");
  check_len(a.dilations, nd, "dilations");
  check_len(a.pads, 2 * nd, "pads");
  Window3 w;
  w.nd = nd;
  for (int i = 0; i < nd; ++i) {
    const int s = 3 - nd + i;
    w.in[s] = x_shape[2 + i];
    w.k[s] = kernel[i];
    w.stride[s] = a.strides.empty() ? 1 : a.strides[i];
    w.dil[s] = a.dilations.empty() ? 1 : a.dilations[i];
    w.pad[s] = a.pads.empty() ? 0 : a.pads[i];
    w.pad_end[s] = a.pads.empty() ? 0 : a.pads[nd + i];
    if (w.k[s] < 1 || w.stride[s] < 1 || w.dil[s] < 1)
      ctx.fail(cat("kernel ", ints_str(kernel), ", strides and dilations must be >= 1 (input ",
                   shape_str(x_shape), ")"));
  }
  return w;
}

void check_conv_ranks(const KernelContext& ctx, const Shape& x, const Shape& w) {
  if (x.size() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(x)));
  if (w.size() != x.size())
    ctx.fail(cat("W ", shape_str(w), " and X ", shape_str(x), " must have the same rank"));
}

void check_conv_groups(const KernelContext& ctx, const Shape& x, const Shape& w, int64_t group) {
  const int64_t C = x[1], M = w[0], G = group;
  if (G < 1 || C % G != 0 || M % G != 0 || w[1] * G != C)
    ctx.fail(cat("X ", shape_str(x), " and W ", shape_str(w), " do not match group=", G,
                 " (need C = W.shape[1] * group, M % group == 0)"));
}

void check_conv_transpose_groups(const KernelContext& ctx, const Shape& x, const Shape& w,
                                 int64_t group) {
  const int64_t C = x[1], G = group;
  if (G < 1 || C % G != 0 || w[0] != C)
    ctx.fail(cat("X ", shape_str(x), " and W ", shape_str(w), " do not match group=", G,
                 " (need W.shape[0] = C, C % group == 0)"));
}

std::vector<int64_t> conv_kernel_of(const KernelContext& ctx,
                                    const std::vector<int64_t>& kernel_shape, const Shape& w) {
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (!kernel_shape.empty() && kernel_shape != kernel)
    ctx.fail(cat("kernel_shape ", shape_str(kernel_shape), " does not match W ", shape_str(w)));
  return kernel;
}

Window3 forward_window(const KernelContext& ctx, const WindowAttrs& a, const Shape& x_shape,
                       const std::vector<int64_t>& kernel) {
  Window3 w = window_from_attrs(ctx, a, x_shape, kernel);
  for (int s = 3 - w.nd; s < 3; ++s) {
    const int64_t in = w.in[s], st = w.stride[s], dk = (w.k[s] - 1) * w.dil[s] + 1;
    switch (a.auto_pad) {
      case AutoPad::NotSet: {
        if (w.pad[s] < 0 || w.pad_end[s] < 0)
          ctx.fail(cat("negative pads ", ints_str(a.pads), " for input ", shape_str(x_shape)));
        const int64_t span = in + w.pad[s] + w.pad_end[s] - dk;
        if (span < 0) {
          w.out[s] = 0;
          break;
        }
        w.out[s] = (a.ceil_mode ? (span + st - 1) / st : span / st) + 1;
        if (a.ceil_mode && (w.out[s] - 1) * st >= in + w.pad[s]) --w.out[s];
        break;
      }
      case AutoPad::SameUpper:
      case AutoPad::SameLower: {
        w.out[s] = (in + st - 1) / st;
        const int64_t total = std::max<int64_t>(0, (w.out[s] - 1) * st + dk - in);
        const int64_t small = total / 2;
        w.pad[s] = a.auto_pad == AutoPad::SameUpper ? small : total - small;
        w.pad_end[s] = total - w.pad[s];
        break;
      }
      case AutoPad::Valid:
        w.pad[s] = w.pad_end[s] = 0;
        w.out[s] = in >= dk ? (in - dk) / st + 1 : 0;
        break;
    }
    if (w.out[s] < 1)
      ctx.fail(cat("input ", shape_str(x_shape), " is smaller than the (dilated, padded) kernel ",
                   ints_str(kernel), " with pads ", ints_str(a.pads), ": empty output"));
  }
  return w;
}

std::vector<TapRange> tap_ranges(const Window3& w, int s) {
  std::vector<TapRange> r(static_cast<size_t>(w.out[s]));
  for (int64_t o = 0; o < w.out[s]; ++o) {
    const int64_t start = o * w.stride[s] - w.pad[s], d = w.dil[s];
    auto taps_below = [&](int64_t limit) {  // number of j in [0, k) with start + j·d < limit
      return limit - start <= 0 ? int64_t{0} : std::min(w.k[s], (limit - start + d - 1) / d);
    };
    const int64_t lo = std::min(w.k[s], start < 0 ? (-start + d - 1) / d : int64_t{0});
    r[o] = {lo, std::max(lo, taps_below(w.in[s])), taps_below(w.in[s] + w.pad_end[s])};
  }
  return r;
}

}  // namespace oat::cpu
