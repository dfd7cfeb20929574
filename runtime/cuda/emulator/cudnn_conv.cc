// cuDNN emulator: convolutions (1-D to 3-D, groups, pads, strides, dilations, either mode), their
// algorithm and workspace queries. With X [N, C, in...], W [K, C/G, k...], Y [N, K, out...],
// group g(k) = k / (K/G), input channel c_x = g(k)·(C/G) + c and, per spatial dim,
//   out = (in + 2·pad − dil·(k − 1) − 1) / stride + 1        (floor; at least 1)
//   i(o, j) = o·stride − pad + j·dil                          (out-of-range i reads 0)
//   j' = j (CUDNN_CROSS_CORRELATION) or k − 1 − j (CUDNN_CONVOLUTION: the flipped kernel)
// the three directions are the same sum read three ways:
//   forward          Y[n,k,o]   = α·Σ_{c,j} X[n,c_x,i(o,j)]·W[k,c,j'] + β·Y
//   backward data    dX[n,c_x,i] = α·Σ_{k,o,j: i(o,j)=i} dY[n,k,o]·W[k,c,j'] + β·dX
//   backward filter  dW[k,c,j'] = α·Σ_{n,o} X[n,c_x,i(o,j)]·dY[n,k,o] + β·dW
// accumulated in double and rounded once (cudnn_internal.h). The result does not depend on the
// algorithm; the algorithms offered and their workspace sizes only mimic cuDNN's so that callers'
// planning (ranking, workspace checks) is exercised.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "runtime/cuda/emulator/cudnn_internal.h"
#include "runtime/cuda/emulator/launch.h"

using namespace oat_emu::dnn;

namespace {

struct ConvGeom {
  int N = 1, C = 1, K = 1, G = 1;
  int in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int pad[3] = {0, 0, 0}, str[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
  bool flip = false;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  Layout x, w, y;  // x, y strided as their descriptors; w packed
  int64_t kernel_numel() const { return int64_t{k[0]} * k[1] * k[2]; }
  int64_t out_numel() const { return int64_t{out[0]} * out[1] * out[2]; }
};

// The compute types cuDNN accepts per data type (others: NOT_SUPPORTED).
bool compute_ok(cudnnDataType_t data, cudnnDataType_t compute) {
  switch (data) {
    case CUDNN_DATA_FLOAT: return compute == CUDNN_DATA_FLOAT;
    case CUDNN_DATA_DOUBLE: return compute == CUDNN_DATA_DOUBLE;
    case CUDNN_DATA_HALF: return compute == CUDNN_DATA_HALF || compute == CUDNN_DATA_FLOAT;
    case CUDNN_DATA_BFLOAT16: return compute == CUDNN_DATA_FLOAT;
    default: return false;
  }
}

// The checks every direction shares, and its geometry. x, w, y are the forward's roles (for
// backward data x is dX, for backward filter w is dW; y is Y or dY).
cudnnStatus_t make_geom(const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                        const cudnnConvolutionStruct* c, const cudnnTensorStruct* y,
                        ConvGeom* g) {
  if (!x || !w || !c || !y || !x->set || !w->set || !c->set || !y->set)
    return CUDNN_STATUS_BAD_PARAM;
  const int nb = x->nb;
  if (w->nb != nb || y->nb != nb || c->nsp + 2 != nb) return CUDNN_STATUS_BAD_PARAM;
  if (w->dtype != x->dtype || y->dtype != x->dtype) return CUDNN_STATUS_BAD_PARAM;
  if (nb > 5 || !computable(x->dtype) || !compute_ok(x->dtype, c->compute))
    return CUDNN_STATUS_NOT_SUPPORTED;
  const int G = c->groups;
  if (x->dims[1] != w->dims[1] * G || w->dims[0] % G != 0) return CUDNN_STATUS_BAD_PARAM;
  if (y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0]) return CUDNN_STATUS_BAD_PARAM;
  ConvGeom r;
  r.N = x->dims[0];
  r.C = x->dims[1];
  r.K = w->dims[0];
  r.G = G;
  const int nsp = c->nsp;
  for (int d = 0; d < nsp; ++d) {
    const int s = 3 - nsp + d;  // right-aligned in the 3 normalised spatial dims
    r.in[s] = x->dims[2 + d];
    r.k[s] = w->dims[2 + d];
    r.pad[s] = c->pad[d];
    r.str[s] = c->stride[d];
    r.dil[s] = c->dil[d];
    const int64_t span = int64_t{r.in[s]} + 2 * int64_t{r.pad[s]} -
                         int64_t{r.dil[s]} * (r.k[s] - 1) - 1;
    if (span < 0) return CUDNN_STATUS_BAD_PARAM;  // the dilated kernel overhangs the padded input
    r.out[s] = static_cast<int>(span / r.str[s] + 1);
    if (y->dims[2 + d] != r.out[s]) return CUDNN_STATUS_BAD_PARAM;
  }
  r.flip = c->mode == CUDNN_CONVOLUTION;
  r.dtype = x->dtype;
  r.x = layout_of(*x);
  r.w = layout_of(*w);
  r.y = layout_of(*y);
  *g = r;
  return CUDNN_STATUS_SUCCESS;
}

// Calls f(xi, wi, yi) with logical (row-major) indices for every product term X·W of Y, in the
// order: n, k, output position, then c, kernel position (so each Y element's terms are adjacent).
template <class F>
void for_each_term(const ConvGeom& g, F&& f) {
  const int Cg = g.C / g.G, Kg = g.K / g.G;
  const int64_t xsp = int64_t{g.in[0]} * g.in[1] * g.in[2];
  const int64_t ksp = g.kernel_numel();
  for (int n = 0; n < g.N; ++n)
    for (int k = 0; k < g.K; ++k) {
      const int grp = k / Kg;
      for (int o0 = 0; o0 < g.out[0]; ++o0)
        for (int o1 = 0; o1 < g.out[1]; ++o1)
          for (int o2 = 0; o2 < g.out[2]; ++o2) {
            const int64_t yi = ((int64_t{n} * g.K + k) * g.out[0] + o0) * g.out[1] * g.out[2] +
                               int64_t{o1} * g.out[2] + o2;
            for (int c = 0; c < Cg; ++c) {
              const int64_t xbase = (int64_t{n} * g.C + grp * Cg + c) * xsp;
              const int64_t wbase = (int64_t{k} * Cg + c) * ksp;
              for (int j0 = 0; j0 < g.k[0]; ++j0) {
                const int i0 = o0 * g.str[0] - g.pad[0] + j0 * g.dil[0];
                if (i0 < 0 || i0 >= g.in[0]) continue;
                for (int j1 = 0; j1 < g.k[1]; ++j1) {
                  const int i1 = o1 * g.str[1] - g.pad[1] + j1 * g.dil[1];
                  if (i1 < 0 || i1 >= g.in[1]) continue;
                  for (int j2 = 0; j2 < g.k[2]; ++j2) {
                    const int i2 = o2 * g.str[2] - g.pad[2] + j2 * g.dil[2];
                    if (i2 < 0 || i2 >= g.in[2]) continue;
                    const int64_t xi = xbase + (int64_t{i0} * g.in[1] + i1) * g.in[2] + i2;
                    int64_t widx = (int64_t{j0} * g.k[1] + j1) * g.k[2] + j2;
                    if (g.flip) widx = ksp - 1 - widx;  // every spatial index reversed
                    f(xi, wbase + widx, yi);
                  }
                }
              }
            }
          }
    }
}

std::vector<double> gather(const void* p, cudnnDataType_t t, const Layout& l) {
  std::vector<double> v(static_cast<size_t>(l.numel()));
  for (int64_t i = 0; i < l.numel(); ++i) v[i] = load(p, t, l.offset(i));
  return v;
}

void write_out(void* p, cudnnDataType_t t, const Layout& l, const std::vector<double>& acc,
               double alpha, double beta) {
  for (int64_t i = 0; i < l.numel(); ++i) blend(p, t, l.offset(i), alpha, beta, acc[i]);
}

enum class Dir { Forward, BackwardData, BackwardFilter };

int elem_bytes(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2;
}

// The algorithms offered per direction, ranked best first (values of the direction's enum), and
// each one's workspace. Other algorithms: NOT_SUPPORTED.
struct Offer {
  int algo;
  bool deterministic;
};
const std::vector<Offer>& offers(Dir d) {
  static const std::vector<Offer> fwd = {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, true},
                                         {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, true},
                                         {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, true}};
  static const std::vector<Offer> data = {{CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, true},
                                          {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, false}};
  static const std::vector<Offer> filter = {{CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, true},
                                            {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, false},
                                            {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, false}};
  return d == Dir::Forward ? fwd : d == Dir::BackwardData ? data : filter;
}

int algo_count(Dir d) {
  if (d == Dir::Forward) return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  if (d == Dir::BackwardData) return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
}

// Workspace bytes of `algo` (an offered one; *ok = false otherwise): the first-ranked algorithm
// of each direction and the explicit GEMM need one, the others none.
size_t workspace_of(Dir d, int algo, const ConvGeom& g, bool* ok) {
  *ok = false;
  if (algo < 0 || algo >= algo_count(d)) return 0;
  for (const Offer& o : offers(d))
    if (o.algo == algo) *ok = true;
  if (!*ok) return 0;
  const size_t cols = static_cast<size_t>(g.C / g.G) * g.kernel_numel();  // one im2col row
  const size_t eb = elem_bytes(g.dtype);
  if (d == Dir::Forward) {
    if (algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) return 64 + sizeof(int) * cols;
    if (algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM) return eb * cols * g.out_numel();
    return 0;
  }
  if (d == Dir::BackwardData)
    return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 ? 64 + sizeof(int) * cols : 0;
  if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1) return 64 + sizeof(float) * cols;
  if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) return sizeof(float) * cols * (g.K / g.G);
  return 0;
}

// cudnnGet*Algorithm_v7: descriptor errors fail the call; a data/compute-type combination cuDNN
// rejects yields entries with status NOT_SUPPORTED (as cuDNN reports per algorithm).
template <class Perf, class Algo>
cudnnStatus_t rank(Dir d, cudnnHandle_t h, const cudnnTensorStruct* x,
                   const cudnnFilterStruct* w, const cudnnConvolutionStruct* c,
                   const cudnnTensorStruct* y, int requested, int* returned, Perf* perf) {
  if (!h || !returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  ConvGeom g;
  const cudnnStatus_t st = make_geom(x, w, c, y, &g);
  if (st != CUDNN_STATUS_SUCCESS && st != CUDNN_STATUS_NOT_SUPPORTED) return st;
  const std::vector<Offer>& list = offers(d);
  const int n = std::min<int>(requested, static_cast<int>(list.size()));
  for (int i = 0; i < n; ++i) {
    Perf p{};
    p.algo = static_cast<Algo>(list[i].algo);
    p.status = st;
    bool ok = false;
    p.memory = st == CUDNN_STATUS_SUCCESS ? workspace_of(d, list[i].algo, g, &ok) : 0;
    p.time = st == CUDNN_STATUS_SUCCESS ? 0.01f * static_cast<float>(i + 1) : -1.f;
    p.determinism = list[i].deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
    p.mathType = c->math;
    perf[i] = p;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t workspace_query(Dir d, cudnnHandle_t h, const cudnnTensorStruct* x,
                              const cudnnFilterStruct* w, const cudnnConvolutionStruct* c,
                              const cudnnTensorStruct* y, int algo, size_t* bytes) {
  if (!h || !bytes) return CUDNN_STATUS_BAD_PARAM;
  ConvGeom g;
  const cudnnStatus_t st = make_geom(x, w, c, y, &g);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (algo < 0 || algo >= algo_count(d)) return CUDNN_STATUS_BAD_PARAM;
  bool ok = false;
  const size_t n = workspace_of(d, algo, g, &ok);
  if (!ok) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = n;
  return CUDNN_STATUS_SUCCESS;
}

// The checks of a convolution call beyond make_geom: handle, scalars, data pointers, algorithm
// and workspace (too small, or null while one is needed: BAD_PARAM).
cudnnStatus_t check_call(Dir d, cudnnHandle_t h, const void* alpha, const void* beta,
                         const void* a, const void* b, const void* out, int algo,
                         const void* ws, size_t ws_bytes, const ConvGeom& g) {
  if (!h || !alpha || !beta || !a || !b || !out) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= algo_count(d)) return CUDNN_STATUS_BAD_PARAM;
  bool ok = false;
  const size_t need = workspace_of(d, algo, g, &ok);
  if (!ok) return CUDNN_STATUS_NOT_SUPPORTED;
  if (ws_bytes < need || (need > 0 && !ws)) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  return guard([&] {
    return rank<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        Dir::Forward, handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount,
        returnedAlgoCount, perfResults);
  });
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  return guard([&] {
    return rank<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
        Dir::BackwardData, handle, gradDesc, filterDesc, convDesc, diffDesc, requestedAlgoCount,
        returnedAlgoCount, perfResults);
  });
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  return guard([&] {
    return rank<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
        Dir::BackwardFilter, handle, srcDesc, gradDesc, convDesc, diffDesc, requestedAlgoCount,
        returnedAlgoCount, perfResults);
  });
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
    const cudnnFilterDescriptor_t wDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  return guard([&] {
    return workspace_query(Dir::Forward, handle, xDesc, wDesc, convDesc, yDesc, algo,
                           sizeInBytes);
  });
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
    const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t dxDesc, cudnnConvolutionBwdDataAlgo_t algo,
    size_t* sizeInBytes) {
  return guard([&] {
    return workspace_query(Dir::BackwardData, handle, dxDesc, wDesc, convDesc, dyDesc, algo,
                           sizeInBytes);
  });
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    size_t* sizeInBytes) {
  return guard([&] {
    return workspace_query(Dir::BackwardFilter, handle, xDesc, gradDesc, convDesc, dyDesc, algo,
                           sizeInBytes);
  });
}

namespace {

// One convolution direction, the three sharing everything but which tensor is accumulated:
//   Forward         y[yi]  += x[xi] · w[wi]     (in0 = x,  in1 = w,  out = y)
//   BackwardData    dx[xi] += dy[yi] · w[wi]    (in0 = dy, in1 = w,  out = dx)
//   BackwardFilter  dw[wi] += x[xi] · dy[yi]    (in0 = x,  in1 = dy, out = dw)
// over every (xi, wi, yi) term of the geometry; then out = alpha·acc + beta·out.
cudnnStatus_t convolution(Dir d, const char* name, cudnnHandle_t handle, const void* alpha,
                          const void* beta, const cudnnTensorDescriptor_t xDesc,
                          const cudnnFilterDescriptor_t wDesc,
                          const cudnnConvolutionDescriptor_t convDesc,
                          const cudnnTensorDescriptor_t yDesc, const void* in0, const void* in1,
                          void* out, int algo, void* workSpace, size_t workSpaceSizeInBytes) {
  return guard([&] {
    ConvGeom g;
    cudnnStatus_t st = make_geom(xDesc, wDesc, convDesc, yDesc, &g);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    st = check_call(d, handle, alpha, beta, in0, in1, out, algo, workSpace, workSpaceSizeInBytes,
                    g);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    const double a = scalar(alpha, g.dtype), b = scalar(beta, g.dtype);
    oat_emu::enqueue(handle->stream, name, [=] {
      const auto& s0 = d == Dir::BackwardData ? g.y : g.x;
      const auto& s1 = d == Dir::Forward ? g.w : d == Dir::BackwardData ? g.w : g.y;
      const auto& so = d == Dir::Forward ? g.y : d == Dir::BackwardData ? g.x : g.w;
      const std::vector<double> v0 = gather(in0, g.dtype, s0), v1 = gather(in1, g.dtype, s1);
      std::vector<double> acc(static_cast<size_t>(so.numel()), 0.0);
      for_each_term(g, [&](int64_t xi, int64_t wi, int64_t yi) {
        if (d == Dir::Forward) acc[yi] += v0[xi] * v1[wi];
        else if (d == Dir::BackwardData) acc[xi] += v0[yi] * v1[wi];
        else acc[wi] += v0[xi] * v1[yi];
      });
      write_out(out, g.dtype, so, acc, a, b);
    });
    return CUDNN_STATUS_SUCCESS;
  });
}

}  // namespace

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(
    cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
    const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  return convolution(Dir::Forward, "cudnnConvolutionForward", handle, alpha, beta, xDesc, wDesc,
                     convDesc, yDesc, x, w, y, algo, workSpace, workSpaceSizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
    void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
    const cudnnTensorDescriptor_t dxDesc, void* dx) {
  return convolution(Dir::BackwardData, "cudnnConvolutionBackwardData", handle, alpha, beta,
                     dxDesc, wDesc, convDesc, dyDesc, dy, w, dx, algo, workSpace,
                     workSpaceSizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
    const cudnnFilterDescriptor_t dwDesc, void* dw) {
  return convolution(Dir::BackwardFilter, "cudnnConvolutionBackwardFilter", handle, alpha, beta,
                     xDesc, dwDesc, convDesc, dyDesc, x, dy, dw, algo, workSpace,
                     workSpaceSizeInBytes);
}

// cudnnFind*AlgorithmEx: the ranking of cudnnGet*Algorithm_v7 (the emulator has no timings),
// after what a timed search does to its arguments: it waits for the handle's stream (so during
// a CUDA-graph capture it invalidates the capture, as the synchronisation would on a GPU), reads
// both inputs, overwrites the output (here with NaN: a caller that hands it a live tensor sees
// it), and reports candidates needing more workspace than it was given as not run.
namespace {

std::atomic<uint64_t> g_find_calls{0};

template <class Perf, class Algo>
cudnnStatus_t find(Dir d, const char* name, cudnnHandle_t h, const cudnnTensorStruct* x,
                   const cudnnFilterStruct* w, const cudnnConvolutionStruct* c,
                   const cudnnTensorStruct* y, const void* in0, const void* in1, void* out,
                   int requested, int* returned, Perf* perf, void* ws, size_t ws_bytes) {
  ++g_find_calls;
  return guard([&] {
    const cudnnStatus_t st = rank<Perf, Algo>(d, h, x, w, c, y, requested, returned, perf);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!in0 || !in1 || !out || (ws_bytes > 0 && !ws)) return CUDNN_STATUS_BAD_PARAM;
    if (cudaStreamSynchronize(h->stream) != cudaSuccess) return CUDNN_STATUS_EXECUTION_FAILED;
    ConvGeom g;
    if (make_geom(x, w, c, y, &g) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_SUCCESS;
    for (int i = 0; i < *returned; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory > ws_bytes) {
        perf[i].status = CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        perf[i].time = -1.f;
      }
    oat_emu::enqueue(h->stream, name, [=] {
      const auto& s0 = d == Dir::BackwardData ? g.y : g.x;
      const auto& s1 = d == Dir::BackwardFilter ? g.y : g.w;
      const auto& so = d == Dir::Forward ? g.y : d == Dir::BackwardData ? g.x : g.w;
      gather(in0, g.dtype, s0);
      gather(in1, g.dtype, s1);
      const std::vector<double> nan(static_cast<size_t>(so.numel()), std::nan(""));
      write_out(out, g.dtype, so, nan, 1.0, 0.0);
    });
    return cudaStreamSynchronize(h->stream) == cudaSuccess ? CUDNN_STATUS_SUCCESS
                                                          : CUDNN_STATUS_EXECUTION_FAILED;
  });
}

}  // namespace

uint64_t oat_emu::cudnn_find_calls() { return g_find_calls; }

cudnnStatus_t CUDNNWINAPI cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void* y, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults, void* workSpace,
    size_t workSpaceSizeInBytes) {
  return find<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      Dir::Forward, "cudnnFindConvolutionForwardAlgorithmEx", handle, xDesc, wDesc, convDesc,
      yDesc, x, w, y, requestedAlgoCount, returnedAlgoCount, perfResults, workSpace,
      workSpaceSizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void* w,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void* dx,
    const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t* perfResults, void* workSpace,
    size_t workSpaceSizeInBytes) {
  return find<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      Dir::BackwardData, "cudnnFindConvolutionBackwardDataAlgorithmEx", handle, dxDesc, wDesc,
      convDesc, dyDesc, dy, w, dx, requestedAlgoCount, returnedAlgoCount, perfResults, workSpace,
      workSpaceSizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnTensorDescriptor_t dyDesc, const void* y,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void* dw,
    const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfResults, void* workSpace,
    size_t workSpaceSizeInBytes) {
  return find<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      Dir::BackwardFilter, "cudnnFindConvolutionBackwardFilterAlgorithmEx", handle, xDesc,
      dwDesc, convDesc, dyDesc, x, y, dw, requestedAlgoCount, returnedAlgoCount, perfResults,
      workSpace, workSpaceSizeInBytes);
}
