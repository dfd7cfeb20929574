#include "runtime/cpu/kernels/grad_conv_backward.h"

namespace oat::cpu {

Window3 conv_transpose_window(const KernelContext& ctx, const WindowAttrs& a,
                              const std::vector<int64_t>& output_padding,
                              const std::vector<int64_t>& output_shape, const Shape& x_shape,
                              const std::vector<int64_t>& kernel) {
  Window3 w = window_from_attrs(ctx, a, x_shape, kernel);
  const int nd = w.nd;
  if (!output_padding.empty() && static_cast<int>(output_padding.size()) != nd)
    ctx.fail(cat("output_padding ", shape_str(output_padding), " does not match input ",
                 shape_str(x_shape)));
  // output_shape may list the spatial dims only, or all of (N, C, spatial...).
  if (!output_shape.empty() && static_cast<int>(output_shape.size()) != nd &&
      static_cast<int>(output_shape.size()) != nd + 2)
    ctx.fail(cat("output_shape ", shape_str(output_shape), " does not match input ",
                 shape_str(x_shape)));
  const bool same = a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower;
  for (int i = 0; i < nd; ++i) {
    const int s = 3 - nd + i;
    const int64_t in = w.in[s], st = w.stride[s], dk = (w.k[s] - 1) * w.dil[s] + 1;
    const int64_t op = output_padding.empty() ? 0 : output_padding[i];
    const int64_t natural = st * (in - 1) + op + dk;
    int64_t out;
    if (!output_shape.empty() || same) {
      out = !output_shape.empty() ? output_shape[output_shape.size() - nd + i] : in * st;
      const int64_t total = natural - out;
      if (total < 0) {
        w.pad[s] = 0;
        w.pad_end[s] = total;
      } else {
        w.pad[s] = a.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
        w.pad_end[s] = total - w.pad[s];
      }
    } else {
      if (a.auto_pad == AutoPad::Valid) w.pad[s] = w.pad_end[s] = 0;
      out = natural - w.pad[s] - w.pad_end[s];
    }
    if (out < 1)
      ctx.fail(cat("output size ", out, " along spatial axis ", i, " for input ",
                   shape_str(x_shape), " and kernel ", shape_str(kernel)));
    w.out[s] = in;
    w.in[s] = out;
  }
  return w;
}

BackwardTiles backward_tiles(int64_t N, int64_t P, int64_t K, int64_t rows, int64_t groups,
                             int64_t threads) {
  const int64_t target =
      std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(K + rows, 1), 256, 8192);
  BackwardTiles t;
  if (P >= target || N == 1) {
    const int64_t pieces = (P + target - 1) / target;
    t.width = (P + pieces - 1) / pieces;
    t.chunks = N;
    return t;
  }
  int64_t chunks = (N + target / P - 1) / (target / P);
  if (threads > 1) {  // enough tasks for every thread, and a multiple of the thread count
    chunks = std::max(chunks, (threads + groups - 1) / groups);
    while ((groups * chunks) % threads != 0 && chunks < N) ++chunks;
  }
  t.images = (N + chunks - 1) / chunks;
  t.chunks = (N + t.images - 1) / t.images;
  t.width = t.images * P;
  return t;
}

}  // namespace oat::cpu
