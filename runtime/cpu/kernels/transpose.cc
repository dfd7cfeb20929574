// Transpose: Y[i_0, .., i_(r-1)] = X[j] with j[perm[k]] = i_k; perm defaults to reversed axes.
//
// The permutation is first simplified: size-1 dims are dropped and input axes that stay adjacent
// and in order are merged (NCHW -> NHWC becomes [N, C, HW] with perm [0, 2, 1]). Then either
//  - the last axis stays last: each output row is one memcpy of a contiguous input run, or
//  - it moves: every (outer index) is a 2-D transpose between the input's contiguous axis and the
//    output's contiguous axis, done in cache-sized tiles (8 x 8 AVX2 register transposes for
//    32-bit elements).
// Registered from register_movement().
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/transpose_block.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

constexpr int64_t kTile = 32;

class TransposeKernel : public OpKernel {
 public:
  explicit TransposeKernel(const Node& n)
      : perm_(n.attr_ints("perm")), has_perm_(n.has_attr("perm")) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(r);
      for (int i = 0; i < r; ++i) perm[i] = r - 1 - i;
    }
    if (static_cast<int>(perm.size()) != r)
      ctx.fail(cat("perm ", shape_str(perm), " does not match input ", shape_str(x.shape())));
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      p = normalize_axis(ctx, p, r, "perm entry");
      if (seen[p]) ctx.fail(cat("perm ", shape_str(perm_), " is not a permutation"));
      seen[p] = true;
    }
    Shape out(r);
    for (int i = 0; i < r; ++i) out[i] = x.shape()[perm[i]];
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return;

    // Simplify: drop size-1 input dims, renumber, merge output-adjacent runs of input axes.
    std::vector<int> newid(r, -1);
    Shape s;
    for (int d = 0; d < r; ++d)
      if (x.shape()[d] != 1) {
        newid[d] = static_cast<int>(s.size());
        s.push_back(x.shape()[d]);
      }
    std::vector<int> p;
    for (int i = 0; i < r; ++i)
      if (newid[perm[i]] >= 0) p.push_back(newid[perm[i]]);
    // Merge: groups of output positions whose input axes are consecutive.
    std::vector<std::vector<int>> groups;  // input axes, in order
    for (int a : p) {
      if (!groups.empty() && groups.back().back() + 1 == a) {
        groups.back().push_back(a);
      } else {
        groups.push_back({a});
      }
    }
    // The merged input: groups sorted by their first input axis.
    std::vector<int> order(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) order[g] = static_cast<int>(g);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return groups[a].front() < groups[b].front(); });
    const int mr = static_cast<int>(groups.size());
    Shape ms(mr);             // merged input shape
    std::vector<int> mp(mr);  // merged perm
    for (int k = 0; k < mr; ++k) {
      int64_t size = 1;
      for (int a : groups[order[k]]) size *= s[a];
      ms[k] = size;
      mp[order[k]] = k;
    }
    dispatch_word(dtype_size(x.dtype()), [&](auto w) {
      using W = decltype(w);
      run<W>(static_cast<const W*>(x.raw_data()), static_cast<W*>(y.raw_data()), ms, mp,
             static_cast<int64_t>(y.nbytes()));
    });
  }

 private:
  template <class W>
  static void run(const W* src, W* dst, const Shape& s, const std::vector<int>& p, int64_t bytes) {
    const int r = static_cast<int>(s.size());
    if (r <= 1) {
      std::memcpy(dst, src, static_cast<size_t>(bytes));
      return;
    }
    const std::vector<int64_t> in_st = contiguous_strides(s);
    Shape out(r);
    std::vector<int64_t> st(r);  // input stride of each output axis
    for (int i = 0; i < r; ++i) {
      out[i] = s[p[i]];
      st[i] = in_st[p[i]];
    }
    if (p[r - 1] == r - 1) {
      const int64_t inner = out[r - 1];
      for_each_row(out, st, 0, bytes, [&](int64_t row, int64_t off) {
        std::memcpy(dst + row * inner, src + off, static_cast<size_t>(inner) * sizeof(W));
      });
      return;
    }
    // Tiled 2-D: output axis q holds the input's contiguous axis (length M, output stride os_q);
    // the output's contiguous axis is input axis p[r-1] (length N, input stride is_n).
    const std::vector<int64_t> out_st = contiguous_strides(out);
    int q = 0;
    while (p[q] != r - 1) ++q;
    const int64_t M = out[q], N = out[r - 1], os_q = out_st[q], is_n = st[r - 1];
    std::vector<int> outer_axes;
    for (int i = 0; i < r - 1; ++i)
      if (i != q) outer_axes.push_back(i);
    int64_t outer = 1;
    for (int i : outer_axes) outer *= out[i];
    const int64_t mblocks = (M + kTile - 1) / kTile;
    parallel_chunks(outer * mblocks, bytes >= kParallelBytes, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        int64_t o = u / mblocks, i0 = (u % mblocks) * kTile;
        int64_t in_off = 0, out_off = 0;
        for (int k = static_cast<int>(outer_axes.size()) - 1; k >= 0; --k) {
          const int a = outer_axes[k];
          const int64_t idx = o % out[a];
          o /= out[a];
          in_off += idx * st[a];
          out_off += idx * out_st[a];
        }
        const int64_t i1 = std::min(M, i0 + kTile);
        for (int64_t j0 = 0; j0 < N; j0 += kTile) {
          const int64_t j1 = std::min(N, j0 + kTile);
          int64_t i = i0;
#ifdef __AVX2__
          if constexpr (sizeof(W) == 4) {
            for (; i + 8 <= i1; i += 8) {
              int64_t j = j0;
              for (; j + 8 <= j1; j += 8)
                transpose8x8(src + in_off + i + j * is_n, is_n, dst + out_off + i * os_q + j, os_q);
              for (int64_t ii = i; ii < i + 8; ++ii)
                for (int64_t jj = j; jj < j1; ++jj)
                  dst[out_off + ii * os_q + jj] = src[in_off + ii + jj * is_n];
            }
          }
#endif
          for (; i < i1; ++i) {
            W* d = dst + out_off + i * os_q;
            const W* sp = src + in_off + i;
            for (int64_t j = j0; j < j1; ++j) d[j] = sp[j * is_n];
          }
        }
      }
    });
  }

  std::vector<int64_t> perm_;
  bool has_perm_;
};

}  // namespace

void register_transpose(KernelRegistry& r) {
  r.add(OpId::Transpose, Device::CPU, kAnyDType, kernel_factory<TransposeKernel>());
}

}  // namespace oat::cpu
