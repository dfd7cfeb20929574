// Pad: Y.shape[d] = X.shape[d] + pads[d] + pads[r + d]; Y[i] = X[src(i)], where per axis, with
// j = i - pads_begin and n = X.shape[d]:
//   constant: j in [0, n) ? X[j] : value (negative pads crop)
//   reflect:  j mirrored about 0 and n-1 without repeating the edge (numpy 'reflect')
//   edge:     clamp(j, 0, n-1)
//   wrap:     j mod n
// Opset 1 has 'paddings', opset 2-10 'pads' and 'value' attributes; opset 11+ take inputs pads
// and optional constant_value; opset 18 adds the optional axes input (pads then cover only
// those axes).
//
// Each axis gets a source-index map (-1 = fill). Output rows whose leading axes map to -1 are
// filled; other rows copy from one source row through the last axis's map, compressed into
// runs (contiguous copies and fills).
// Registered from register_movement().
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/pad_geometry.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

class PadKernel : public OpKernel {
 public:
  explicit PadKernel(const Node& n)
      : from_attrs_(n.opset < 11),
        pads_attr_(n.attr_ints(n.opset < 2 ? "paddings" : "pads")),
        value_attr_(n.attr_float("value", 0.0f)) {
    mode_ = parse_pad_mode(n);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    std::vector<int64_t> pads = from_attrs_ ? pads_attr_ : ctx.input(1).to_int_vector();
    const std::vector<int64_t> axes =
        from_attrs_ ? std::vector<int64_t>{} : optional_ints(ctx, 3);
    const PadAmounts pa = pad_amounts(ctx, x.shape(), pads, axes);
    const std::vector<int64_t>& begin = pa.begin;
    const Shape out = padded_shape(ctx, x.shape(), pads, pa, mode_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return;

    // The fill value as one element of X's dtype.
    Tensor value = Tensor::zeros(x.dtype(), {});
    if (mode_ == PadMode::Constant) {
      const Tensor* v = from_attrs_ ? nullptr : ctx.input_or_null(2);
      if (v && v->numel() > 0) {
        if (v->dtype() != x.dtype())
          ctx.fail(cat("constant_value is ", dtype_name(v->dtype()), ", data is ",
                       dtype_name(x.dtype())));
        std::memcpy(value.raw_data(), v->raw_data(), dtype_size(x.dtype()));
      } else if (from_attrs_) {
        value = cast_tensor(Tensor::scalar<float>(value_attr_), x.dtype());
      }
    }
    std::vector<std::vector<int64_t>> map(r);
    for (int d = 0; d < r; ++d) map[d] = pad_axis_map(mode_, out[d], x.shape()[d], begin[d]);
    if (r == 0) {
      std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
      return;
    }
    dispatch_word(dtype_size(x.dtype()), [&](auto w) {
      using W = decltype(w);
      run<W>(static_cast<const W*>(x.raw_data()), static_cast<W*>(y.raw_data()),
             *static_cast<const W*>(value.raw_data()), x.shape(), out, map);
    });
  }

 private:

  template <class W>
  static void run(const W* src, W* dst, W value, const Shape& in, const Shape& out,
                  const std::vector<std::vector<int64_t>>& map) {
    const int r = static_cast<int>(in.size());
    // The last axis as runs: (output start, source start or -1, length).
    struct Run {
      int64_t at, from, len;
    };
    std::vector<Run> runs;
    const std::vector<int64_t>& last = map[r - 1];
    for (int64_t i = 0; i < out[r - 1]; ++i) {
      const int64_t s = last[i];
      if (!runs.empty()) {
        Run& b = runs.back();
        const int64_t prev = last[i - 1];
        if ((s < 0 && prev < 0) || (s >= 0 && prev >= 0 && s == prev + 1)) {
          ++b.len;
          continue;
        }
      }
      runs.push_back({i, s, 1});
    }
    const std::vector<int64_t> in_st = contiguous_strides(in);
    const int64_t row_len = out[r - 1];
    int64_t rows = 1;
    for (int d = 0; d < r - 1; ++d) rows *= out[d];
    const int64_t bytes = numel(out) * static_cast<int64_t>(sizeof(W));
    parallel_chunks(rows, bytes >= kParallelBytes, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        W* d = dst + row * row_len;
        int64_t rem = row, off = 0;
        bool fill = false;
        for (int a = r - 2; a >= 0 && !fill; --a) {
          const int64_t s = map[a][rem % out[a]];
          rem /= out[a];
          if (s < 0) fill = true;
          off += s * in_st[a];
        }
        if (fill) {
          std::fill(d, d + row_len, value);
          continue;
        }
        for (const Run& run : runs) {
          if (run.from < 0) {
            std::fill(d + run.at, d + run.at + run.len, value);
          } else {
            std::memcpy(d + run.at, src + off + run.from, static_cast<size_t>(run.len) * sizeof(W));
          }
        }
      }
    });
  }

  bool from_attrs_;
  std::vector<int64_t> pads_attr_;
  float value_attr_;
  PadMode mode_ = PadMode::Constant;
};

}  // namespace

void register_pad(KernelRegistry& r) {
  r.add(OpId::Pad, Device::CPU, kAnyDType, kernel_factory<PadKernel>());
}

}  // namespace oat::cpu
