// GridSample (opsets 16 and 20) as an expansion (runtime/composite.h), 4-D only:
// X (N, C, H, W), grid (N, Ho, Wo, 2) holding (x, y) normalised to [-1, 1], Y (N, C, Ho, Wo).
// Attributes: mode bilinear (opset 20: linear, default) | nearest | bicubic (opset 20: cubic),
// padding_mode zeros (default) | border | reflection, align_corners 0 (default) | 1.
// The semantics are those of ONNX's reference implementation (onnx/reference/ops/op_grid_sample.py),
// which the ONNX backend test data follow, except bicubic with border padding: there we do what
// PyTorch (whose grid_sample such models come from) and ONNX Runtime 1.31 do, leave the
// coordinate unclamped and clamp only the taps; the reference first clamps an out-of-bounds
// coordinate (no ONNX test case covers the combination). ONNX Runtime agrees to 7e-7 in F32.
//
// Per axis (x with size s = W, y with s = H), in F64 for an F64 grid, else in F32 (a half grid is
// cast: FP16 and BF16 hold too few integers exactly for pixel indices):
//   unnormalise:  align_corners 1: c = (g + 1)/2 · (s − 1);   0: c = ((g + 1)·s − 1)/2
//   nearest:      c = Round(c)                 (half to even, as the reference's np.rint)
//   borders:      [lo, hi] = [0, s − 1] (align_corners 1), [−0.5, s − 0.5] (0)
//   border:       c = clamp(c, 0, s − 1)       (bicubic: not clamped; its taps are, below)
//   reflection:   c = reflect(c), then (bilinear, nearest) clamp(c, 0, s − 1), where
//                 reflect(c) = f even ? lo + e : hi − e,  d = |c − lo|, f = ⌊d / r⌋, e = d − f·r,
//                 r = hi − lo (1 when hi = lo: size 1 with align_corners 1, then clamped to 0),
//                 the identity inside [lo, hi] and the reference's reflection outside.
// Taps and weights (t = c − ⌊c⌋; Floor and Round pass no gradient, so d/dgrid flows through the
// weights, which is PyTorch's grid gradient):
//   nearest:  tap c, weight 1
//   bilinear: taps ⌊c⌋, ⌊c⌋ + 1, weights 1 − t, t
//   bicubic:  taps ⌊c⌋ − 1 .. ⌊c⌋ + 2, Keys' weights with A = −0.75:
//     w0 = ((A(t+1) − 5A)(t+1) + 8A)(t+1) − 4A,   w1 = ((A+2)t − (A+3))t² + 1,
//     w2 = ((A+2)(1−t) − (A+3))(1−t)² + 1,        w3 = ((A(2−t) − 5A)(2−t) + 8A)(2−t) − 4A
// A tap k reads pixel k when 0 ≤ k ≤ s − 1; otherwise zeros: 0 (weight times an in-range mask),
// border: clamp(k, 0, s − 1), reflection: clamp(reflect(k), 0, s − 1) (the reference's pixel
// reflection). The index is then clamped to [0, s − 1] in every mode (so masked taps read a valid
// pixel) and
//   Y[n, c, p] = Σ_{taps (ky, kx)} wy·wx · Xflat[n, c, iy·W + ix],   Xflat = X as (N, C, H·W)
// with one GatherElements on axis 2 per tap pair (indices (N, 1, Ho·Wo) expanded over C). The
// flat index iy·W + ix is computed in the coordinate type and cast to int64 (the CUDA backend
// has no int64 device arithmetic), so H·W must stay below 2^24 with F32 coordinates. The weights
// are cast to X's type; the sum runs in X's type.
#include "runtime/composite/expanders.h"
#include "runtime/error.h"
#include "runtime/onnx_type_code.h"

namespace oat::composite {

namespace {

struct GS {
  Expansion& e;
  DType gt;  // the coordinates' type (F32, or F64 for an F64 grid)
  DType xt;  // X's type

  std::string op(const std::string& type, const std::vector<std::string>& in,
                 const std::string& tag, DType t, std::map<std::string, Attribute> attrs = {}) {
    std::string v = e.add1(type, in, tag, std::move(attrs));
    e.set_info(v, t);
    return v;
  }
  std::string f(const std::string& type, const std::vector<std::string>& in,
                const std::string& tag) {
    return op(type, in, tag, gt);
  }
  std::string k(double v, const std::string& tag) {
    return e.constant_tensor(cast_tensor(Tensor::scalar<double>(v), gt), tag);
  }
};

// One axis's sizes: s as a float scalar and as an int64 scalar.
struct Axis {
  std::string name;  // "x" or "y"
  std::string s, s_i64, s_minus_1;
};

}  // namespace

void expand_grid_sample(Expansion& e) {
  const Node& n = e.node();
  std::string mode = n.attr_string("mode", n.opset >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    e.fail(cat("unknown mode '", n.attr_string("mode", ""), "'"));
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    e.fail(cat("unknown padding_mode '", pad, "'"));
  const bool align = n.attr_int("align_corners", 0) != 0;

  const std::string& x = e.input(0);
  const std::string& grid = e.input(1);
  const ValueInfo* xi = e.info(x);
  const ValueInfo* gi = e.info(grid);
  if (!xi || !xi->shape) e.fail(cat("the rank of X '", x, "' must be known (4-D X is sampled)"));
  if (!gi || !gi->shape)
    e.fail(cat("the rank of grid '", grid, "' must be known (4-D grid (N, Ho, Wo, 2))"));
  if (xi->shape->size() == 5 && gi->shape->size() == 5)
    e.unsupported("volumetric (5-D) sampling is not supported (4-D X and grid are)", "5-D");
  if (xi->shape->size() != 4)
    e.fail(cat("X '", x, "' must be 4-D (N, C, H, W), got rank ", xi->shape->size()));
  if (gi->shape->size() != 4)
    e.fail(cat("grid '", grid, "' must be 4-D (N, Ho, Wo, 2), got rank ", gi->shape->size()));
  const Dim& last = gi->shape->back();
  if (last.fixed() && last.value != 2)
    e.fail(cat("the last dim of grid '", grid, "' must be 2 (x, y), got ", last.value));
  GS g{e, e.dtype(grid), e.dtype(x)};
  if (g.xt == DType::Undefined) g.xt = DType::F32;
  DType grid_t = g.gt == DType::Undefined ? g.xt : g.gt;
  if (!is_floating(g.xt))
    e.unsupported(cat("X '", x, "' is ", dtype_name(g.xt), "; only float X is supported"),
                  dtype_name(g.xt));
  if (!is_floating(grid_t)) e.fail(cat("grid '", grid, "' must be a float type"));
  // Coordinates, weights and flat indices in F64 for an F64 grid, else F32: FP16 holds integers
  // exactly only up to 2048 (BF16: 256), too few for pixel indices.
  g.gt = grid_t == DType::F64 ? DType::F64 : DType::F32;
  const auto& xs = *xi->shape;
  if (g.gt == DType::F32 && xs[2].fixed() && xs[3].fixed() && xs[2].value * xs[3].value > (1 << 24))
    e.unsupported(cat("X '", x, "' has ", xs[2].value * xs[3].value,
                      " pixels per channel; flat indices are computed in FP32, exact up to 2^24"),
                  "H*W>2^24");
  std::string grid_c = grid;
  if (grid_t != g.gt)
    grid_c =
        g.op("Cast", {grid}, "grid_coord_type", g.gt, {{"to", int_attribute(onnx_code_of(g.gt))}});

  // Sizes: Shape(X)[axis] as int64 and grid-typed scalars.
  const std::string xshape = g.op("Shape", {x}, "x_shape", DType::I64);
  auto axis = [&](const std::string& name, int64_t a) {
    Axis ax;
    ax.name = name;
    ax.s_i64 = g.op("Gather", {xshape, e.ints({a}, name + "_axis", true)}, name + "_size_i64",
                    DType::I64);
    ax.s =
        g.op("Cast", {ax.s_i64}, name + "_size", g.gt, {{"to", int_attribute(onnx_code_of(g.gt))}});
    ax.s_minus_1 = g.f("Sub", {ax.s, g.k(1, name + "_one")}, name + "_size_minus_1");
    return ax;
  };
  const Axis ax = axis("x", 3), ay = axis("y", 2);

  // grid (N, Ho, Wo, 2) -> gx, gy (N, 1, Ho·Wo)
  const auto parts = e.add("Split", {grid_c, e.ints({1, 1}, "split_sizes")}, "grid_xy", 2,
                           {{"axis", int_attribute(3)}});
  for (const std::string& p : parts) e.set_info(p, g.gt);
  const std::string flat_shape = e.ints({0, 1, -1}, "coord_shape");

  const std::string lo_v = g.k(align ? 0.0 : -0.5, "lo");
  const std::string zero = g.k(0, "zero");
  auto clamp = [&](const std::string& v, const Axis& a, const std::string& tag) {
    return g.f("Max", {g.f("Min", {v, a.s_minus_1}, tag + "_min"), zero}, tag);
  };
  auto hi_of = [&](const Axis& a) {
    return align ? a.s_minus_1 : g.f("Sub", {a.s, g.k(0.5, a.name + "_half")}, a.name + "_hi");
  };
  auto reflect = [&](const std::string& c, const Axis& a, const std::string& tag) {
    const std::string hi = hi_of(a);
    const std::string r0 = g.f("Sub", {hi, lo_v}, tag + "_range0");
    // r = hi − lo, or 1 when it is 0 (a single pixel with align_corners 1)
    const std::string degenerate =
        g.op("LessOrEqual", {r0, zero}, tag + "_degenerate", DType::Bool);
    const std::string rr = g.f("Where", {degenerate, g.k(1, tag + "_unit"), r0}, tag + "_range");
    const std::string d = g.f("Abs", {g.f("Sub", {c, lo_v}, tag + "_from_lo")}, tag + "_dist");
    const std::string fl = g.f("Floor", {g.f("Div", {d, rr}, tag + "_ratio")}, tag + "_flips");
    const std::string ex = g.f("Sub", {d, g.f("Mul", {fl, rr}, tag + "_whole")}, tag + "_extra");
    const std::string half = g.f("Floor", {g.f("Mul", {fl, g.k(0.5, tag + "_h")}, tag + "_fh")},
                                 tag + "_half_flips");
    const std::string even = g.op(
        "Equal", {g.f("Add", {half, half}, tag + "_twice"), fl}, tag + "_even", DType::Bool);
    return g.f("Where",
               {even, g.f("Add", {lo_v, ex}, tag + "_up"), g.f("Sub", {hi, ex}, tag + "_down")},
               tag);
  };

  // The coordinate of one axis, after the mode's rounding and the padding's coordinate step.
  auto coord = [&](const std::string& gv, const Axis& a) {
    const std::string t = a.name;
    const std::string gc = g.f("Reshape", {gv, flat_shape}, t + "_grid");
    const std::string g1 = g.f("Add", {gc, g.k(1, t + "_one_g")}, t + "_g_plus_1");
    std::string c;
    if (align)  // (g + 1)/2 · (s − 1)
      c = g.f("Mul", {g.f("Mul", {g1, g.k(0.5, t + "_half_g")}, t + "_g_half"), a.s_minus_1},
              t + "_coord");
    else  // ((g + 1)·s − 1)/2
      c = g.f("Mul",
              {g.f("Sub", {g.f("Mul", {g1, a.s}, t + "_g_times_s"), g.k(1, t + "_one_c")},
                   t + "_g_minus"),
               g.k(0.5, t + "_half_c")},
              t + "_coord");
    if (mode == "nearest") c = g.f("Round", {c}, t + "_rounded");
    if (pad == "border") {
      // Bicubic: the coordinate stays unclamped and each tap is clamped (PyTorch, ONNX Runtime).
      if (mode != "bicubic") c = clamp(c, a, t + "_border");
    } else if (pad == "reflection") {
      c = reflect(c, a, t + "_reflected");
      if (mode != "bicubic") c = clamp(c, a, t + "_reflect_clamped");
    }
    return c;
  };
  const std::string cx = coord(parts[0], ax), cy = coord(parts[1], ay);

  // Taps of one axis: (integer index as int64, weight in grid's type, in-range mask or "").
  struct Tap {
    std::string idx, w, valid;
  };
  auto taps = [&](const std::string& c, const Axis& a) {
    const std::string t = a.name;
    std::vector<std::string> pos, w;
    if (mode == "nearest") {
      pos = {c};
      w = {""};
    } else {
      const std::string f0 = g.f("Floor", {c}, t + "_floor");
      const std::string fr = g.f("Sub", {c, f0}, t + "_frac");
      if (mode == "bilinear") {
        pos = {f0, g.f("Add", {f0, g.k(1, t + "_p1")}, t + "_tap1")};
        w = {g.f("Sub", {g.k(1, t + "_one_w"), fr}, t + "_w0"), fr};
      } else {
        const double A = -0.75;
        for (int j = -1; j <= 2; ++j)
          pos.push_back(j == 0 ? f0
                               : g.f("Add", {f0, g.k(j, cat(t, "_off", j + 1))},
                                     cat(t, "_tap", j + 1)));
        // u = t + 1, t, 1 − t, 2 − t: w0, w3 = ((A·u − 5A)·u + 8A)·u − 4A;
        // w1, w2 = ((A + 2)·u − (A + 3))·u² + 1
        auto outer = [&](const std::string& u, const std::string& tag) {
          std::string p = g.f("Sub", {g.f("Mul", {u, g.k(A, tag + "_a")}, tag + "_au"),
                                      g.k(5 * A, tag + "_5a")},
                              tag + "_p1");
          p = g.f("Add", {g.f("Mul", {p, u}, tag + "_p2"), g.k(8 * A, tag + "_8a")}, tag + "_p3");
          return g.f("Sub", {g.f("Mul", {p, u}, tag + "_p4"), g.k(4 * A, tag + "_4a")}, tag);
        };
        auto inner = [&](const std::string& u, const std::string& tag) {
          std::string p = g.f("Sub", {g.f("Mul", {u, g.k(A + 2, tag + "_a2")}, tag + "_au"),
                                      g.k(A + 3, tag + "_a3")},
                              tag + "_p1");
          p = g.f("Mul", {g.f("Mul", {p, u}, tag + "_p2"), u}, tag + "_p3");
          return g.f("Add", {p, g.k(1, tag + "_one")}, tag);
        };
        const std::string one_minus = g.f("Sub", {g.k(1, t + "_one_u"), fr}, t + "_1mt");
        w = {outer(g.f("Add", {fr, g.k(1, t + "_one_t")}, t + "_tp1"), t + "_w0"),
             inner(fr, t + "_w1"), inner(one_minus, t + "_w2"),
             outer(g.f("Sub", {g.k(2, t + "_two_u"), fr}, t + "_2mt"), t + "_w3")};
      }
    }
    std::vector<Tap> out;
    for (size_t i = 0; i < pos.size(); ++i) {
      const std::string tag = cat(t, "_t", i);
      Tap tp;
      tp.w = w[i];
      std::string p = pos[i];
      if (pad == "zeros") {
        const std::string ge = g.op("GreaterOrEqual", {p, zero}, tag + "_ge0", DType::Bool);
        const std::string le = g.op("LessOrEqual", {p, a.s_minus_1}, tag + "_le", DType::Bool);
        tp.valid = g.op("And", {ge, le}, tag + "_valid", DType::Bool);
      } else if (pad == "reflection" && mode == "bicubic") {
        p = reflect(p, a, tag + "_pix_reflect");
      }
      tp.idx = clamp(p, a, tag + "_clamped");  // an integer, in the coordinate type
      out.push_back(tp);
    }
    return out;
  };
  const std::vector<Tap> tx = taps(cx, ax), ty = taps(cy, ay);

  // X as (N, C, H·W); [1, C, 1] to expand the (N, 1, P) indices over C.
  const std::string xflat = g.op("Reshape", {x, e.ints({0, 0, -1}, "x_flat_shape")}, "x_flat", g.xt);
  const std::string c_dim = g.op(
      "Slice", {xshape, e.ints({1}, "c_begin"), e.ints({2}, "c_end")}, "c_dim", DType::I64);
  const std::string ones1 = e.ints({1}, "one_dim");
  const std::string expand_shape =
      g.op("Concat", {ones1, c_dim, ones1}, "expand_shape", DType::I64,
           {{"axis", int_attribute(0)}});
  std::string acc;
  for (size_t iy = 0; iy < ty.size(); ++iy)
    for (size_t ix = 0; ix < tx.size(); ++ix) {
      const std::string tag = cat("tap", iy, ix);
      const Tap& a = ty[iy];
      const Tap& b = tx[ix];
      // iy·W + ix in the coordinate type (exact below 2^24 in F32), then int64: the CUDA backend
      // has no int64 arithmetic on the device, where these values live.
      const std::string lin_f =
          g.f("Add", {g.f("Mul", {a.idx, ax.s}, tag + "_row"), b.idx}, tag + "_lin_f");
      const std::string lin =
          g.op("Cast", {lin_f}, tag + "_lin", DType::I64, {{"to", int_attribute(7)}});
      const std::string lin_c = g.op("Expand", {lin, expand_shape}, tag + "_lin_c", DType::I64);
      const std::string v = g.op("GatherElements", {xflat, lin_c}, tag + "_value", g.xt,
                                 {{"axis", int_attribute(2)}});
      // weight = wy · wx (· mask), in grid's type, then cast to X's
      std::string w;
      if (!a.w.empty() && !b.w.empty())
        w = g.f("Mul", {a.w, b.w}, tag + "_w");
      else if (!a.w.empty())
        w = a.w;
      else if (!b.w.empty())
        w = b.w;
      if (!a.valid.empty()) {
        const std::string ok = g.op("And", {a.valid, b.valid}, tag + "_valid", DType::Bool);
        const std::string m =
            g.op("Cast", {ok}, tag + "_mask", g.gt, {{"to", int_attribute(onnx_code_of(g.gt))}});
        w = w.empty() ? m : g.f("Mul", {w, m}, tag + "_w_masked");
      }
      std::string term = v;
      if (!w.empty()) {
        if (g.gt != g.xt)
          w = g.op("Cast", {w}, tag + "_w_x", g.xt, {{"to", int_attribute(onnx_code_of(g.xt))}});
        term = g.op("Mul", {v, w}, tag + "_term", g.xt);
      }
      acc = acc.empty() ? term : g.op("Add", {acc, term}, tag + "_sum", g.xt);
    }
  // (N, C, Ho·Wo) -> (N, C, Ho, Wo)
  const std::string gshape = g.op("Shape", {grid}, "grid_shape", DType::I64);
  const std::string nc = g.op("Slice", {xshape, e.ints({0}, "nc_begin"), e.ints({2}, "nc_end")},
                              "nc_dims", DType::I64);
  const std::string hw = g.op(
      "Slice", {gshape, e.ints({1}, "hw_begin"), e.ints({3}, "hw_end")}, "out_hw", DType::I64);
  const std::string yshape =
      g.op("Concat", {nc, hw}, "y_shape", DType::I64, {{"axis", int_attribute(0)}});
  e.add_to("Reshape", {acc, yshape}, {e.output(0)}, "grid_sample");
}

}  // namespace oat::composite
