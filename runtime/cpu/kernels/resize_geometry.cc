// Resize's sampling rule (resize_geometry.h has the formulas).
#include "runtime/cpu/kernels/resize_geometry.h"

#include <algorithm>
#include <cmath>

namespace oat::cpu {

namespace {

std::vector<double> float_values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.item_as_double(i);
  return v;
}

bool given(const Tensor* t) { return t && t->numel() > 0; }

// Checks the scales (one per axis, each > 0).
void check_scales(const KernelContext& ctx, const std::vector<double>& s, const Shape& x) {
  if (s.size() != x.size())
    ctx.fail(cat("scales has ", s.size(), " values, X ", shape_str(x), " has rank ", x.size()));
  for (size_t d = 0; d < s.size(); ++d)
    if (!(s[d] > 0) || !std::isfinite(s[d]))
      ctx.fail(cat("scales[", d, "] = ", s[d], " must be a positive finite number"));
}

std::vector<double> roi_of(const KernelContext& ctx, const ResizeAttrs& a, const Shape& x,
                           const Tensor* roi) {
  if (a.coord != ResizeCoord::TfCropAndResize) return {};
  if (!given(roi) || roi->numel() != 2 * static_cast<int64_t>(x.size()))
    ctx.fail(cat("tf_crop_and_resize needs roi with 2·rank = ", 2 * x.size(), " values, got ",
                 given(roi) ? roi->numel() : 0));
  return float_values(*roi);
}

// x_original of output o (the coordinate_transformation_mode), see the header.
double original_coordinate(const ResizeAttrs& a, int64_t o, int64_t in, double s, double start,
                           double end) {
  const double W = s * static_cast<double>(in), xo = static_cast<double>(o);
  switch (a.coord) {
    case ResizeCoord::HalfPixel:
      return (xo + 0.5) / s - 0.5;
    case ResizeCoord::PytorchHalfPixel:
      return W == 1 ? -0.5 : (xo + 0.5) / s - 0.5;
    case ResizeCoord::AlignCorners:
      return W == 1 ? 0.0 : xo * (in - 1) / (W - 1);
    case ResizeCoord::Asymmetric:
      return xo / s;
    case ResizeCoord::TfHalfPixelForNn:
      return (xo + 0.5) / s;
    case ResizeCoord::TfCropAndResize: {
      const double span = (end - start) * (in - 1);
      return start * (in - 1) + (W == 1 ? span / 2 : xo * span / (W - 1));
    }
  }
  return 0.0;
}

// Keys' cubic convolution weights of the taps base-1 .. base+2 at ratio t.
void cubic_weights(double t, double A, double* w) {
  const double a = t + 1, b = 1 - t, c = 2 - t;
  w[0] = ((A * a - 5 * A) * a + 8 * A) * a - 4 * A;
  w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  w[2] = ((A + 2) * b - (A + 3)) * b * b + 1;
  w[3] = ((A * c - 5 * A) * c + 8 * A) * c - 4 * A;
}

}  // namespace

std::string resize_mode_name(ResizeMode m) {
  switch (m) {
    case ResizeMode::Nearest:
      return "nearest";
    case ResizeMode::Linear:
      return "linear";
    case ResizeMode::Cubic:
      return "cubic";
  }
  return "nearest";
}

std::string resize_coord_name(ResizeCoord c) {
  switch (c) {
    case ResizeCoord::HalfPixel:
      return "half_pixel";
    case ResizeCoord::PytorchHalfPixel:
      return "pytorch_half_pixel";
    case ResizeCoord::AlignCorners:
      return "align_corners";
    case ResizeCoord::Asymmetric:
      return "asymmetric";
    case ResizeCoord::TfHalfPixelForNn:
      return "tf_half_pixel_for_nn";
    case ResizeCoord::TfCropAndResize:
      return "tf_crop_and_resize";
  }
  return "half_pixel";
}

std::string resize_nearest_name(ResizeNearest n) {
  switch (n) {
    case ResizeNearest::RoundPreferFloor:
      return "round_prefer_floor";
    case ResizeNearest::RoundPreferCeil:
      return "round_prefer_ceil";
    case ResizeNearest::Floor:
      return "floor";
    case ResizeNearest::Ceil:
      return "ceil";
    case ResizeNearest::Simple:
      return "simple";
  }
  return "round_prefer_floor";
}

ResizeAttrs parse_resize_attrs(const Node& n) {
  ResizeAttrs a;
  const bool upsample = n.op == OpId::Upsample;
  const bool grad = n.op == OpId::ResizeGrad;
  const bool legacy = upsample || (n.op == OpId::Resize && n.opset < 11);
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode == "nearest") {
    a.mode = ResizeMode::Nearest;
  } else if (mode == "linear" || (upsample && mode == "bilinear")) {
    a.mode = ResizeMode::Linear;
  } else if (mode == "cubic" && !legacy) {
    a.mode = ResizeMode::Cubic;
  } else {
    throw Error(cat(n.describe(), ": unknown mode '", mode, "' (expected nearest, linear",
                    legacy ? "" : " or cubic", ")"));
  }
  if (legacy) {
    a.coord = ResizeCoord::Asymmetric;
    a.nearest = ResizeNearest::Simple;
    if (upsample && n.opset < 9) {
      a.scales_attr = n.attr_floats("scales");
      if (a.scales_attr.empty()) throw Error(cat(n.describe(), ": needs the scales attribute"));
    } else {
      a.scales_input = 1;
    }
    return a;
  }
  if (grad) {
    a.roi_input = 2, a.scales_input = 3;
    a.scales_attr = n.attr_floats("scales");
  } else {
    a.roi_input = 1, a.scales_input = 2, a.sizes_input = 3;
  }
  const std::string coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
  bool known = false;
  for (ResizeCoord c :
       {ResizeCoord::HalfPixel, ResizeCoord::PytorchHalfPixel, ResizeCoord::AlignCorners,
        ResizeCoord::Asymmetric, ResizeCoord::TfHalfPixelForNn, ResizeCoord::TfCropAndResize})
    if (coord == resize_coord_name(c)) a.coord = c, known = true;
  if (!known)
    throw Error(cat(n.describe(), ": unknown coordinate_transformation_mode '", coord, "'"));
  const std::string nearest = n.attr_string("nearest_mode", "round_prefer_floor");
  known = false;
  for (ResizeNearest m : {ResizeNearest::RoundPreferFloor, ResizeNearest::RoundPreferCeil,
                          ResizeNearest::Floor, ResizeNearest::Ceil, ResizeNearest::Simple})
    if (nearest == resize_nearest_name(m) && (m != ResizeNearest::Simple || grad))
      a.nearest = m, known = true;
  if (!known) throw Error(cat(n.describe(), ": unknown nearest_mode '", nearest, "'"));
  a.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  return a;
}

ResizeGeometry resize_geometry(const KernelContext& ctx, const ResizeAttrs& a, const Shape& x,
                               const Tensor* roi, const Tensor* scales, const Tensor* sizes) {
  ResizeGeometry g;
  g.x = x;
  const int r = static_cast<int>(x.size());
  if (given(scales) && given(sizes)) ctx.fail("only one of scales and sizes may be given");
  if (given(sizes)) {
    const std::vector<int64_t> sz = sizes->to_int_vector();
    if (static_cast<int>(sz.size()) != r)
      ctx.fail(cat("sizes has ", sz.size(), " values, X ", shape_str(x), " has rank ", r));
    g.y = sz;
    for (int d = 0; d < r; ++d) {
      if (sz[d] < 0) ctx.fail(cat("sizes[", d, "] = ", sz[d], " is negative"));
      if (x[d] == 0 && sz[d] > 0)
        ctx.fail(cat("cannot resize the empty axis ", d, " of X ", shape_str(x), " to ", sz[d]));
      g.scales.push_back(x[d] == 0 ? 1.0 : static_cast<double>(sz[d]) / x[d]);
    }
  } else {
    if (given(scales))
      g.scales = float_values(*scales);
    else if (!a.scales_attr.empty())
      g.scales.assign(a.scales_attr.begin(), a.scales_attr.end());
    else
      ctx.fail("needs scales or sizes (both are empty or missing)");
    check_scales(ctx, g.scales, x);
    for (int d = 0; d < r; ++d) {
      const double out = std::floor(g.scales[d] * static_cast<double>(x[d]));
      if (out >= 0x1p63)
        ctx.fail(cat("scales[", d, "] = ", g.scales[d], " resizes axis ", d, " of X ", shape_str(x),
                     " to more than 2^63 elements"));
      g.y.push_back(static_cast<int64_t>(out));
    }
  }
  // The output's element count must be representable (the kernels size index tables by each
  // output dim before the output exists; an allocation that big then fails as out of memory).
  int64_t count = 1;
  for (int64_t d : g.y)
    if (d > 0 && __builtin_mul_overflow(count, d, &count))
      ctx.fail(cat("the output ", shape_str(g.y), " has more than 2^63 elements"));
  g.roi = roi_of(ctx, a, x, roi);
  return g;
}

ResizeGeometry resize_grad_geometry(const KernelContext& ctx, const ResizeAttrs& a, const Shape& x,
                                    const Shape& y, const Tensor* roi, const Tensor* scales) {
  ResizeGeometry g;
  g.x = x;
  g.y = y;
  if (x.size() != y.size())
    ctx.fail(cat("gradient ", shape_str(y), " and X ", shape_str(x), " differ in rank"));
  if (given(scales) || !a.scales_attr.empty()) {
    if (given(scales))
      g.scales = float_values(*scales);
    else
      g.scales.assign(a.scales_attr.begin(), a.scales_attr.end());
    check_scales(ctx, g.scales, x);
    for (size_t d = 0; d < x.size(); ++d)
      if (static_cast<int64_t>(std::floor(g.scales[d] * static_cast<double>(x[d]))) != y[d])
        ctx.fail(
            cat("gradient ", shape_str(y), " is not X ", shape_str(x), " resized by the scales"));
  } else {
    for (size_t d = 0; d < x.size(); ++d) {
      if (x[d] == 0 && y[d] > 0)
        ctx.fail(cat("gradient ", shape_str(y), " cannot come from the empty X ", shape_str(x)));
      g.scales.push_back(x[d] == 0 ? 1.0 : static_cast<double>(y[d]) / x[d]);
    }
  }
  g.roi = roi_of(ctx, a, x, roi);
  return g;
}

std::vector<ResizeAxis> resize_axes(const ResizeAttrs& a, const ResizeGeometry& g) {
  const int r = static_cast<int>(g.x.size());
  std::vector<ResizeAxis> axes(r);
  const int taps = a.mode == ResizeMode::Nearest ? 1 : a.mode == ResizeMode::Linear ? 2 : 4;
  for (int d = 0; d < r; ++d) {
    ResizeAxis& ax = axes[d];
    ax.in = g.x[d];
    ax.out = g.y[d];
    ax.taps = taps;
    ax.idx.assign(static_cast<size_t>(ax.out * taps), 0);
    ax.w.assign(static_cast<size_t>(ax.out * taps), 0.0);
    ax.outside.assign(static_cast<size_t>(ax.out), 0);
    const double s = g.scales[d];
    const double start = g.roi.empty() ? 0.0 : g.roi[d], end = g.roi.empty() ? 1.0 : g.roi[r + d];
    bool one_tap = true;  // every output reads one tap of weight 1
    for (int64_t o = 0; o < ax.out; ++o) {
      int64_t* idx = &ax.idx[static_cast<size_t>(o * taps)];
      double* w = &ax.w[static_cast<size_t>(o * taps)];
      const double x = original_coordinate(a, o, ax.in, s, start, end);
      if (a.coord == ResizeCoord::TfCropAndResize && (x < 0 || x > ax.in - 1)) {
        ax.outside[static_cast<size_t>(o)] = 1;
        one_tap = false;
        continue;
      }
      const double fl = std::floor(x);
      const bool integral = fl == x;
      const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);
      const double ratio = integral ? 1.0 : x - fl;
      if (a.mode == ResizeMode::Nearest) {
        bool up = false;  // base + 1 rather than base
        switch (a.nearest) {
          case ResizeNearest::RoundPreferFloor:
            up = ratio > 0.5;
            break;
          case ResizeNearest::RoundPreferCeil:
            up = ratio >= 0.5;
            break;
          case ResizeNearest::Floor:
            up = integral;
            break;
          case ResizeNearest::Ceil:
            up = true;
            break;
          case ResizeNearest::Simple:
            up = s < 1 || integral;
            break;
        }
        idx[0] = base + (up ? 1 : 0);
        w[0] = 1.0;
      } else if (a.mode == ResizeMode::Linear) {
        idx[0] = base, idx[1] = base + 1;
        w[0] = 1 - ratio, w[1] = ratio;
      } else {
        for (int k = 0; k < 4; ++k) idx[k] = base - 1 + k;
        cubic_weights(ratio, a.cubic_a, w);
      }
      if (a.exclude_outside && a.mode != ResizeMode::Nearest) {
        double sum = 0;
        for (int k = 0; k < taps; ++k) {
          if (idx[k] < 0 || idx[k] >= ax.in) w[k] = 0;
          sum += w[k];
        }
        for (int k = 0; k < taps; ++k) w[k] /= sum;
      }
      int nonzero = 0;
      for (int k = 0; k < taps; ++k) {
        idx[k] = std::min<int64_t>(std::max<int64_t>(idx[k], 0), ax.in - 1);
        if (w[k] != 0) nonzero += w[k] == 1.0 ? 1 : 2;  // 1 only for one tap of weight 1
      }
      if (nonzero != 1) one_tap = false;
    }
    if (one_tap && taps > 1) {  // keep the one tap of weight 1 per output
      for (int64_t o = 0; o < ax.out; ++o)
        for (int k = 0; k < taps; ++k)
          if (ax.w[static_cast<size_t>(o * taps + k)] == 1.0)
            ax.idx[static_cast<size_t>(o)] = ax.idx[static_cast<size_t>(o * taps + k)];
      ax.taps = 1;
      ax.idx.resize(static_cast<size_t>(ax.out));
      ax.w.assign(static_cast<size_t>(ax.out), 1.0);
    }
  }
  return axes;
}

ResizeAxisAdjoint resize_adjoint(const ResizeAxis& ax) {
  ResizeAxisAdjoint adj;
  adj.first.assign(static_cast<size_t>(ax.in + 1), 0);
  const auto live = [&](int64_t o, int k) {
    return !ax.outside[static_cast<size_t>(o)] && ax.w[static_cast<size_t>(o * ax.taps + k)] != 0;
  };
  for (int64_t o = 0; o < ax.out; ++o)
    for (int k = 0; k < ax.taps; ++k)
      if (live(o, k))
        ++adj.first[static_cast<size_t>(ax.idx[static_cast<size_t>(o * ax.taps + k)] + 1)];
  for (int64_t i = 0; i < ax.in; ++i) adj.first[i + 1] += adj.first[i];
  adj.pos.resize(static_cast<size_t>(adj.first[ax.in]));
  adj.w.resize(adj.pos.size());
  std::vector<int64_t> next(adj.first.begin(), adj.first.end() - 1);
  for (int64_t o = 0; o < ax.out; ++o)
    for (int k = 0; k < ax.taps; ++k) {
      if (!live(o, k)) continue;
      const size_t at = static_cast<size_t>(o * ax.taps + k);
      const int64_t j = next[static_cast<size_t>(ax.idx[at])]++;
      adj.pos[static_cast<size_t>(j)] = o;
      adj.w[static_cast<size_t>(j)] = ax.w[at];
    }
  return adj;
}

}  // namespace oat::cpu
