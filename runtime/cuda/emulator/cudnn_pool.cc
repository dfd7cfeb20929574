// cuDNN emulator: pooling forward and backward, 1-D to 3-D. Per spatial dim
//   out = (in + 2·pad − window) / stride + 1      (floor; at least 1: else BAD_PARAM)
//   window o covers i = o·stride − pad + j, j = 0..window−1; positions outside [0, in) are
//   padding: never the maximum, zeros in the average.
//   MAX, MAX_DETERMINISTIC: y = max over the window's inputs. CUDNN_PROPAGATE_NAN: a NaN in the
//     window gives NaN; CUDNN_NOT_PROPAGATE_NAN: NaNs are skipped. A window with no candidate
//     (all padding or all skipped NaNs) gives -inf.
//   AVERAGE_COUNT_INCLUDE_PADDING: y = Σ / Π window;  AVERAGE_COUNT_EXCLUDE_PADDING: y = Σ / (the
//     number of in-range positions).
// Backward: dx = α·g + β·dx, where for max g[argmax_o] += dy[o], argmax_o being the FIRST maximum
// of x in window order (the first NaN under PROPAGATE_NAN), recomputed from x (y is checked but not
// read); for averages g[i] += dy[o] / divisor_o over the windows o holding i (x and y are not
// read and may be null). All in double, one rounding (cudnn_internal.h).
// OAT_EMU_CUDNN_NO_BF16_POOL=1: both refuse BF16 tensors (NOT_SUPPORTED_DATA_TYPE, nothing
// queued), as a cuDNN that does not pool BF16 would (the backend's fallback; pool_window.h).
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "runtime/cuda/emulator/cudnn_internal.h"

using namespace oat_emu::dnn;

namespace {

bool refuse_bf16() {
  const char* e = std::getenv("OAT_EMU_CUDNN_NO_BF16_POOL");
  return e && *e && *e != '0';
}

struct PoolGeom {
  int N = 1, C = 1;
  int in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, win[3] = {1, 1, 1};
  int pad[3] = {0, 0, 0}, str[3] = {1, 1, 1};
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  bool propagate = false;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  bool is_max() const { return mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC; }
};

bool same_dims(const cudnnTensorStruct& a, const cudnnTensorStruct& b) {
  if (a.nb != b.nb || a.dtype != b.dtype) return false;
  for (int d = 0; d < a.nb; ++d)
    if (a.dims[d] != b.dims[d]) return false;
  return true;
}

cudnnStatus_t make_geom(const cudnnPoolingStruct* p, const cudnnTensorStruct* x,
                        const cudnnTensorStruct* y, PoolGeom* g) {
  if (!p || !x || !y || !p->set || !x->set || !y->set) return CUDNN_STATUS_BAD_PARAM;
  const int nb = x->nb;
  if (y->nb != nb || p->nsp + 2 != nb || y->dtype != x->dtype) return CUDNN_STATUS_BAD_PARAM;
  if (nb > 5 || !computable(x->dtype)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) return CUDNN_STATUS_BAD_PARAM;
  PoolGeom r;
  r.N = x->dims[0];
  r.C = x->dims[1];
  for (int d = 0; d < p->nsp; ++d) {
    const int s = 3 - p->nsp + d;
    r.in[s] = x->dims[2 + d];
    r.win[s] = p->window[d];
    r.pad[s] = p->pad[d];
    r.str[s] = p->stride[d];
    const int64_t span = int64_t{r.in[s]} + 2 * int64_t{r.pad[s]} - r.win[s];
    if (span < 0) return CUDNN_STATUS_BAD_PARAM;
    r.out[s] = static_cast<int>(span / r.str[s] + 1);
    if (y->dims[2 + d] != r.out[s]) return CUDNN_STATUS_BAD_PARAM;
  }
  r.mode = p->mode;
  r.propagate = p->nan == CUDNN_PROPAGATE_NAN;
  r.dtype = x->dtype;
  *g = r;
  return CUDNN_STATUS_SUCCESS;
}

// Calls f(yi, window) for every output (logical index yi) with the logical x indices of the
// window's in-range positions in window order, and the average's divisor.
template <class F>
void for_each_window(const PoolGeom& g, F&& f) {
  const int64_t xsp = int64_t{g.in[0]} * g.in[1] * g.in[2];
  const int64_t full = int64_t{g.win[0]} * g.win[1] * g.win[2];
  std::vector<int64_t> idx;
  int64_t yi = 0;
  for (int64_t nc = 0; nc < int64_t{g.N} * g.C; ++nc)
    for (int o0 = 0; o0 < g.out[0]; ++o0)
      for (int o1 = 0; o1 < g.out[1]; ++o1)
        for (int o2 = 0; o2 < g.out[2]; ++o2, ++yi) {
          idx.clear();
          for (int j0 = 0; j0 < g.win[0]; ++j0) {
            const int i0 = o0 * g.str[0] - g.pad[0] + j0;
            if (i0 < 0 || i0 >= g.in[0]) continue;
            for (int j1 = 0; j1 < g.win[1]; ++j1) {
              const int i1 = o1 * g.str[1] - g.pad[1] + j1;
              if (i1 < 0 || i1 >= g.in[1]) continue;
              for (int j2 = 0; j2 < g.win[2]; ++j2) {
                const int i2 = o2 * g.str[2] - g.pad[2] + j2;
                if (i2 < 0 || i2 >= g.in[2]) continue;
                idx.push_back(nc * xsp + (int64_t{i0} * g.in[1] + i1) * g.in[2] + i2);
              }
            }
          }
          const int64_t divisor =
              g.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? full
                                                                     : static_cast<int64_t>(idx.size());
          f(yi, idx, divisor);
        }
}

// The position (into idx) of the window's maximum as documented above; -1 if none.
int argmax(const PoolGeom& g, const std::vector<double>& xv, const std::vector<int64_t>& idx) {
  int best = -1;
  for (size_t j = 0; j < idx.size(); ++j) {
    const double v = xv[idx[j]];
    if (std::isnan(v)) {
      if (g.propagate) return static_cast<int>(j);
      continue;
    }
    if (best < 0 || v > xv[idx[best]]) best = static_cast<int>(j);
  }
  return best;
}

std::vector<double> gather(const void* p, cudnnDataType_t t, const Layout& l) {
  std::vector<double> v(static_cast<size_t>(l.numel()));
  for (int64_t i = 0; i < l.numel(); ++i) v[i] = load(p, t, l.offset(i));
  return v;
}

}  // namespace

cudnnStatus_t CUDNNWINAPI cudnnPoolingForward(cudnnHandle_t handle,
                                              const cudnnPoolingDescriptor_t poolingDesc,
                                              const void* alpha,
                                              const cudnnTensorDescriptor_t xDesc, const void* x,
                                              const void* beta,
                                              const cudnnTensorDescriptor_t yDesc, void* y) {
  return guard([&] {
    if (!handle || !alpha || !beta || !x || !y) return CUDNN_STATUS_BAD_PARAM;
    PoolGeom g;
    const cudnnStatus_t st = make_geom(poolingDesc, xDesc, yDesc, &g);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (g.dtype == CUDNN_DATA_BFLOAT16 && refuse_bf16()) return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
    const double a = scalar(alpha, g.dtype), b = scalar(beta, g.dtype);
    const Layout lx = layout_of(*xDesc), ly = layout_of(*yDesc);
    oat_emu::enqueue(handle->stream, "cudnnPoolingForward", [=] {
      const std::vector<double> xv = gather(x, g.dtype, lx);
      std::vector<double> acc(static_cast<size_t>(ly.numel()));
      for_each_window(g, [&](int64_t yi, const std::vector<int64_t>& idx, int64_t divisor) {
        if (g.is_max()) {
          const int j = argmax(g, xv, idx);
          acc[yi] = j < 0 ? -std::numeric_limits<double>::infinity() : xv[idx[j]];
        } else {
          double s = 0;
          for (int64_t i : idx) s += xv[i];
          acc[yi] = divisor > 0 ? s / static_cast<double>(divisor) : 0.0;
        }
      });
      for (int64_t i = 0; i < ly.numel(); ++i) blend(y, g.dtype, ly.offset(i), a, b, acc[i]);
    });
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t CUDNNWINAPI cudnnPoolingBackward(
    cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
    const cudnnTensorDescriptor_t yDesc, const void* y, const cudnnTensorDescriptor_t dyDesc,
    const void* dy, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
    const cudnnTensorDescriptor_t dxDesc, void* dx) {
  return guard([&] {
    if (!handle || !alpha || !beta || !dy || !dx) return CUDNN_STATUS_BAD_PARAM;
    if (!yDesc || !dyDesc || !xDesc || !dxDesc || !dyDesc->set || !dxDesc->set)
      return CUDNN_STATUS_BAD_PARAM;
    PoolGeom g;
    const cudnnStatus_t st = make_geom(poolingDesc, xDesc, yDesc, &g);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (g.dtype == CUDNN_DATA_BFLOAT16 && refuse_bf16()) return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
    if (!same_dims(*yDesc, *dyDesc) || !same_dims(*xDesc, *dxDesc)) return CUDNN_STATUS_BAD_PARAM;
    if (g.is_max() && (!x || !y)) return CUDNN_STATUS_BAD_PARAM;
    const double a = scalar(alpha, g.dtype), b = scalar(beta, g.dtype);
    const Layout lx = layout_of(*xDesc), ldy = layout_of(*dyDesc), ldx = layout_of(*dxDesc);
    oat_emu::enqueue(handle->stream, "cudnnPoolingBackward", [=] {
      const std::vector<double> dyv = gather(dy, g.dtype, ldy);
      const std::vector<double> xv = g.is_max() ? gather(x, g.dtype, lx) : std::vector<double>();
      std::vector<double> acc(static_cast<size_t>(ldx.numel()), 0.0);
      for_each_window(g, [&](int64_t yi, const std::vector<int64_t>& idx, int64_t divisor) {
        if (g.is_max()) {
          const int j = argmax(g, xv, idx);
          if (j >= 0) acc[idx[j]] += dyv[yi];
        } else if (divisor > 0) {
          for (int64_t i : idx) acc[i] += dyv[yi] / static_cast<double>(divisor);
        }
      });
      for (int64_t i = 0; i < ldx.numel(); ++i) blend(dx, g.dtype, ldx.offset(i), a, b, acc[i]);
    });
    return CUDNN_STATUS_SUCCESS;
  });
}
