// What a cuDNN emulator call captures when its work runs later (a CUDA graph replayed after the
// call): alpha and beta by value at call time, descriptors as they were at call time, device
// pointers as pointers (the data is read when the work runs). Emulated build only.
#include <cudnn.h>
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#ifdef OAT_CUDA_EMULATED
#include <cuda_runtime_api.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

TEST_CASE("cudnn emulator: deferred work keeps the call's scalars and descriptors") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudnnHandle_t h;
  REQUIRE(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetStream(h, s) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);

  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  REQUIRE(cudnnCreateTensorDescriptor(&xd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateTensorDescriptor(&yd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateFilterDescriptor(&wd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateConvolutionDescriptor(&cd) == CUDNN_STATUS_SUCCESS);
  const int xdims[4] = {1, 1, 1, 3}, xstr[4] = {3, 3, 3, 1};
  const int ydims[4] = {1, 1, 1, 2}, ystr[4] = {2, 2, 2, 1};
  const int wdims[4] = {1, 1, 1, 2}, pad[2] = {0, 0}, one[2] = {1, 1};
  REQUIRE(cudnnSetTensorNdDescriptor(xd, CUDNN_DATA_FLOAT, 4, xdims, xstr) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetTensorNdDescriptor(yd, CUDNN_DATA_FLOAT, 4, ydims, ystr) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetFilterNdDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wdims) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetConvolutionNdDescriptor(cd, 2, pad, one, one, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS);
  float x[3] = {1, 2, 3}, w[2] = {1, 1}, y[2] = {7, 7};
  float alpha = 1, beta = 0;
  REQUIRE(cudnnConvolutionForward(h, &alpha, xd, x, wd, w, cd,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta, yd,
                                  y) == CUDNN_STATUS_SUCCESS);
  float bias[1] = {10};
  cudnnTensorDescriptor_t bd;
  REQUIRE(cudnnCreateTensorDescriptor(&bd) == CUDNN_STATUS_SUCCESS);
  const int bdims[4] = {1, 1, 1, 1}, bstr[4] = {1, 1, 1, 1};
  REQUIRE(cudnnSetTensorNdDescriptor(bd, CUDNN_DATA_FLOAT, 4, bdims, bstr) == CUDNN_STATUS_SUCCESS);
  const float beta_one = 1;
  REQUIRE(cudnnAddTensor(h, &alpha, bd, bias, &beta_one, yd, y) == CUDNN_STATUS_SUCCESS);
  CHECK(y[0] == 7);  // nothing ran yet
  CHECK(y[1] == 7);

  alpha = 100;  // the call read 1
  beta = 1;     // the call read 0: y's old 7s must not leak in
  x[2] = 5;     // data is read when the work runs
  const int other[4] = {1, 1, 1, 2}, ostr[4] = {2, 2, 2, 1};
  REQUIRE(cudnnSetTensorNdDescriptor(xd, CUDNN_DATA_FLOAT, 4, other, ostr) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnDestroyFilterDescriptor(wd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnDestroyConvolutionDescriptor(cd) == CUDNN_STATUS_SUCCESS);

  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  cudaGraphExec_t e = nullptr;
  REQUIRE(cudaGraphInstantiate(&e, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(e, s) == cudaSuccess);
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
  CHECK(y[0] == 1 + 2 + 10);
  CHECK(y[1] == 2 + 5 + 10);

  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(bd);
  cudnnDestroy(h);
  cudaStreamDestroy(s);
}

#endif  // OAT_CUDA_EMULATED
