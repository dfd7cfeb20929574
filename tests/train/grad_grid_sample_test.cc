// Gradients of GridSample (its expansion, runtime/composite/grid_sample.cc): double-precision
// finite-difference checks w.r.t. X and grid for every mode × padding_mode × align_corners. The
// derivative jumps where an unnormalised coordinate crosses an integer (bilinear's and bicubic's
// taps, the clamps) or a half-integer (nearest's rounding, reflection's and bicubic border's
// bounds at ±0.5), so grid values near those points are kinks and resampled. nearest has no
// grid gradient (Round passes none, as PyTorch's zero grid gradient): its grid is a fixed input.
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::in;

namespace {

Attribute str1(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

// The grid values whose unnormalised coordinate (size s) is a multiple of 1/2.
std::vector<double> grid_kinks(int64_t s, bool align) {
  std::vector<double> k;
  for (int h = -40; h <= 40; ++h) {
    const double c = h / 2.0;
    k.push_back(align ? 2 * c / (s - 1) - 1 : (2 * c + 1) / s - 1);
  }
  return k;
}

}  // namespace

TEST_CASE("gradients: GridSample w.r.t. X and grid, every mode, padding and align_corners") {
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        const std::string m = mode, p = pad;
        CAPTURE(m);
        CAPTURE(p);
        CAPTURE(align);
        GradCheckCase c;
        c.op = "GridSample";
        c.opset = 16;
        c.attrs = {{"mode", str1(mode)},
                   {"padding_mode", str1(pad)},
                   {"align_corners", train::GradientContext::attr_int(align ? 1 : 0)}};
        // H = W = 4; grid points up to 0.4 outside [-1, 1] (past the clamps and reflections)
        c.kinks = grid_kinks(4, align);
        c.inputs = {in({2, 2, 4, 4}), in({2, 3, 2, 2}, -1.4, 1.4)};
        if (m == "nearest") {  // Round passes no gradient: grid has no path to the loss
          std::mt19937 rng(7);
          c.inputs[1] = oat::test::fixed(
              oat::test::random_tensor({2, 3, 2, 2}, -1.4, 1.4, rng, c.kinks));
        }
        c.declare_shapes = true;  // the expansion reads the ranks
        oat::test::check_gradients(c);
      }
}
