// DFT, STFT and their adjoints DFTGrad / STFTGrad on CUDA (signal_impl.cu: direct sums in double
// over a twiddle table built here). The checks and geometry are the CPU kernels'
// (runtime/cpu/kernels/dft_args.h); dft_length, axis, frame_step and frame_length are read on the
// host (reads_on_host), the data and the window stay on the device.
//   DFT:      Y[k] = scale Σ_n x[n] e^{∓2πi kn/L} (irfft: the conjugate mirror, real part)
//   DFTGrad:  the adjoint, dX[n] = scale m_n Σ_k dY[k] e^{±2πi kn/L} (signs opposite the DFT's)
//   STFT:     Y[b, f, k] = Σ_n x[b, f·s + n] w[n] e^{−2πi kn/L}
//   STFTGrad: dx = Σ over the frames covering a sample of w·A, dw = Σ Re(conj(x) A),
//             A = the unnormalised inverse DFT of each frame's dY
#include <cmath>

#include "runtime/cpu/kernels/dft_args.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/signal_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

auto device_read(const KernelContext& ctx) {
  return [&ctx](int i) { return host_input(ctx, i); };
}

// [len, 2] doubles: (cos, sin)(sign · 2π m / len), on the device.
Tensor twiddles(CudaContext& cc, int64_t len, int sign) {
  Tensor t(DType::F64, {len, 2});
  double* p = t.data<double>();
  for (int64_t m = 0; m < len; ++m) {
    const double a = sign * 2.0 * M_PI * static_cast<double>(m) / static_cast<double>(len);
    p[2 * m] = std::cos(a);
    p[2 * m + 1] = std::sin(a);
  }
  return cc.upload(t);
}

void dft(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool v20 = ctx.node().opset >= 20;
  const cpu::DftGeom g =
      cpu::dft_geom(ctx, x, 1, v20 ? 2 : -1, v20 ? -2 : 1, device_read(ctx));
  Tensor& y = ctx.allocate_output(0, x.dtype(), cpu::dft_output_shape(x, g));
  CudaContext& cc = cuda_context(ctx);
  DftLines p;
  p.outer = g.outer;
  p.inner = g.inner;
  p.len = g.len;
  p.n_src = g.n_in;
  p.c_src = g.c_in;
  p.n_read = g.n_read;
  p.n_sum = g.irfft ? g.len : g.n_read;
  p.mirror = g.irfft;
  p.n_dst = g.n_out;
  p.c_dst = g.c_out;
  p.n_valid = g.n_out;
  p.scale = g.inverse ? 1.0 / static_cast<double>(g.len) : 1.0;
  const Tensor tw = twiddles(cc, g.len, g.inverse ? 1 : -1);
  launch_dft_lines(elem_type(x.dtype()), p, x.raw_data(), tw.data<double>(), y.raw_data(),
                   cc.stream());
}

// DFTGrad(dY, X, dft_length?, axis?) -> dX.
void dft_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const cpu::DftGeom g = cpu::dft_geom(ctx, x, 2, 3, 1, device_read(ctx));
  if (dy.shape() != cpu::dft_output_shape(x, g))
    ctx.fail(cat("dY ", shape_str(dy.shape()), " is not the forward's output shape ",
                 shape_str(cpu::dft_output_shape(x, g))));
  Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
  CudaContext& cc = cuda_context(ctx);
  DftLines p;
  p.outer = g.outer;
  p.inner = g.inner;
  p.len = g.len;
  p.n_src = g.n_out;
  p.c_src = g.c_out;
  p.n_read = g.n_out;
  p.n_sum = g.n_out;
  p.n_dst = g.n_in;
  p.c_dst = g.c_in;
  p.n_valid = g.n_read;
  p.double_bins = g.irfft;
  p.scale = g.inverse ? 1.0 / static_cast<double>(g.len) : 1.0;
  const Tensor tw = twiddles(cc, g.len, g.inverse ? -1 : 1);
  launch_dft_lines(elem_type(x.dtype()), p, dy.raw_data(), tw.data<double>(), dx.raw_data(),
                   cc.stream());
}

StftFrames frames_of(const cpu::StftGeom& g) {
  StftFrames p;
  p.batch = g.batch;
  p.s_len = g.s_len;
  p.c_in = g.c_in;
  p.step = g.step;
  p.len = g.len;
  p.frames = g.frames;
  p.bins = g.bins;
  return p;
}

void stft(KernelContext& ctx) {
  const cpu::StftGeom g = cpu::stft_geom(ctx, 0, device_read(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor* w = ctx.input_or_null(2);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {g.batch, g.frames, g.bins, 2});
  CudaContext& cc = cuda_context(ctx);
  const Tensor tw = twiddles(cc, g.len, -1);
  launch_stft(elem_type(x.dtype()), frames_of(g), x.raw_data(), w ? w->raw_data() : nullptr,
              tw.data<double>(), y.raw_data(), cc.stream());
}

// STFTGrad(dY, signal, frame_step, window?, frame_length?) -> dSignal, dWindow.
void stft_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const cpu::StftGeom g = cpu::stft_geom(ctx, 1, device_read(ctx));
  const Tensor& x = ctx.input(1);
  const Tensor* w = ctx.input_or_null(3);
  if (dy.shape() != Shape{g.batch, g.frames, g.bins, 2})
    ctx.fail(cat("dY ", shape_str(dy.shape()), " is not the forward's output shape ",
                 shape_str(Shape{g.batch, g.frames, g.bins, 2})));
  CudaContext& cc = cuda_context(ctx);
  Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
  Tensor* dw = nullptr;
  if (ctx.output_requested(1)) {
    if (!w) ctx.fail("dWindow asked for, but the STFT has no window input");
    dw = &ctx.allocate_output(1, x.dtype(), {g.len});
  }
  const Tensor tw = twiddles(cc, g.len, 1);
  Tensor a(DType::F64, {g.batch * g.frames * g.len, 2}, Device::CUDA);
  launch_stft_grad(elem_type(x.dtype()), frames_of(g), dy.raw_data(), x.raw_data(),
                   w ? w->raw_data() : nullptr, tw.data<double>(), a.data<double>(),
                   dx.raw_data(), dw ? dw->raw_data() : nullptr, cc.stream());
}

}  // namespace

void register_signal(KernelRegistry& r) {
  add_floats(r, OpId::DFT, function_kernel(dft));
  add_floats(r, OpId::DFTGrad, function_kernel(dft_grad));
  add_floats(r, OpId::STFT, function_kernel(stft));
  add_floats(r, OpId::STFTGrad, function_kernel(stft_grad));
}

}  // namespace oat::cuda
