// NonMaxSuppression (opsets 10, 11): greedy per-class suppression of overlapping boxes, as the
// detection exports of SSD, YOLO and torchvision write it, with ONNX Runtime's rules.
//
//   boxes  [B, S, 4] float: center_point_box = 0 (default): two opposite corners [y1, x1, y2, x2]
//          in either order (flipped coordinates are allowed); 1: [x_center, y_center, w, h].
//   scores [B, C, S] float.
//   max_output_boxes_per_class (2, optional int64 scalar or [1]): default 0 = select nothing.
//   iou_threshold (3, optional float scalar, in [0, 1]): default 0.
//   score_threshold (4, optional float scalar): when given, only boxes with score > it count.
//   selected_indices [num_selected, 3] int64: (batch, class, box), by batch, then class, then in
//          selection order (highest score first).
//
// For each (b, c): candidates (score > score_threshold when given) are visited by descending score,
// equal scores by ascending box index; a candidate is kept unless its IoU with a box already kept
// exceeds iou_threshold; at most max_output_boxes_per_class are kept.
//   corners: ymin = min(y1, y2), ymax = max(y1, y2) (x likewise);
//            center form: ymin = yc − h/2, ymax = yc + h/2, xmin = xc − w/2, xmax = xc + w/2
//   inter  = max(0, min(ymax_a, ymax_b) − max(ymin_a, ymin_b)) · max(0, min(xmax..) − max(xmin..))
//   IoU    = inter / (area_a + area_b − inter); inter ≤ 0, a zero area or a zero union never
//            suppresses (ONNX Runtime's SuppressByIOU).
//
// The output's length depends on the values, so it has no static shape. Inference only: the output
// is integer, autodiff treats the node as it treats ArgMax (no gradient flows through it,
// train/autodiff/grads/shape.cc). F16/BF16 boxes and scores run on FP32 copies (in_fp32; the
// thresholds are float in the spec and stay so). On CUDA the node runs on the host (its inputs are
// downloaded, runtime/cuda/context.cc host_placed).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

struct Box {
  float ymin, xmin, ymax, xmax, area;
};

// Whether a and b overlap by more than `threshold` (ONNX Runtime's SuppressByIOU).
bool suppresses(const Box& a, const Box& b, float threshold) {
  const float ih = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  const float iw = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  if (ih <= 0.0f || iw <= 0.0f) return false;
  const float inter = ih * iw;
  const float uni = a.area + b.area - inter;
  if (a.area <= 0.0f || b.area <= 0.0f || uni <= 0.0f) return false;
  return inter / uni > threshold;
}

// A float scalar input (or [1]); `def` when omitted.
float scalar_input(const KernelContext& ctx, int i, const char* what, float def) {
  const Tensor* t = ctx.input_or_null(i);
  if (!t) return def;
  if (!is_floating(t->dtype()))
    ctx.fail(cat(what, " (input ", i, ") must be float, got ", dtype_name(t->dtype())));
  if (t->numel() != 1)
    ctx.fail(cat(what, " (input ", i, ") must hold one value, got shape ", shape_str(t->shape())));
  return static_cast<float>(t->item_as_double());
}

void non_max_suppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.dtype() != DType::F32 || scores.dtype() != DType::F32)
    ctx.fail(cat("boxes and scores must be float, got ", dtype_name(boxes.dtype()), " and ",
                 dtype_name(scores.dtype())));
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    ctx.fail(cat("boxes must be [num_batches, spatial_dimension, 4], got ",
                 shape_str(boxes.shape())));
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    ctx.fail(cat("scores must be [num_batches, num_classes, spatial_dimension] = [", boxes.dim(0),
                 ", C, ", boxes.dim(1), "] for boxes ", shape_str(boxes.shape()), ", got ",
                 shape_str(scores.shape())));
  int64_t max_out = 0;
  if (const Tensor* m = ctx.input_or_null(2)) {
    if (m->dtype() != DType::I64 && m->dtype() != DType::I32)
      ctx.fail(cat("max_output_boxes_per_class (input 2) must be int64, got ",
                   dtype_name(m->dtype())));
    if (m->numel() != 1)
      ctx.fail(cat("max_output_boxes_per_class (input 2) must hold one value, got shape ",
                   shape_str(m->shape())));
    max_out = m->item_as_int();
    if (max_out < 0)
      ctx.fail(cat("max_output_boxes_per_class must not be negative, got ", max_out));
  }
  const float iou_threshold = scalar_input(ctx, 3, "iou_threshold", 0.0f);
  if (!(iou_threshold >= 0.0f && iou_threshold <= 1.0f))
    ctx.fail(cat("iou_threshold must lie in [0, 1], got ", iou_threshold));
  const bool has_score_threshold = ctx.has_input(4);
  const float score_threshold = scalar_input(ctx, 4, "score_threshold", 0.0f);
  const int64_t center = ctx.node().attr_int("center_point_box", 0);
  if (center != 0 && center != 1)
    ctx.fail(cat("center_point_box must be 0 or 1, got ", center));

  const int64_t nb = boxes.dim(0), ns = boxes.dim(1), nc = scores.dim(1);
  const float* bp = boxes.data<float>();
  const float* sp = scores.data<float>();
  std::vector<int64_t> selected;  // flat (b, c, box) triples
  std::vector<Box> bx(static_cast<size_t>(ns));
  std::vector<int64_t> order;
  std::vector<const Box*> kept;
  for (int64_t b = 0; b < nb && max_out > 0; ++b) {
    for (int64_t s = 0; s < ns; ++s) {
      const float* q = bp + (b * ns + s) * 4;
      Box& r = bx[static_cast<size_t>(s)];
      if (center == 0) {
        r.ymin = std::min(q[0], q[2]);
        r.ymax = std::max(q[0], q[2]);
        r.xmin = std::min(q[1], q[3]);
        r.xmax = std::max(q[1], q[3]);
      } else {
        r.xmin = q[0] - q[2] / 2.0f;
        r.xmax = q[0] + q[2] / 2.0f;
        r.ymin = q[1] - q[3] / 2.0f;
        r.ymax = q[1] + q[3] / 2.0f;
      }
      r.area = (r.ymax - r.ymin) * (r.xmax - r.xmin);
    }
    for (int64_t c = 0; c < nc; ++c) {
      const float* sc = sp + (b * nc + c) * ns;
      order.clear();
      for (int64_t s = 0; s < ns; ++s)
        if (!has_score_threshold || sc[s] > score_threshold) order.push_back(s);
      // Descending score, ties by ascending index (stable on the index order).
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      kept.clear();
      for (int64_t s : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box& cand = bx[static_cast<size_t>(s)];
        bool keep = true;
        for (const Box* k : kept)
          if (suppresses(*k, cand, iou_threshold)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(&cand);
        selected.insert(selected.end(), {b, c, s});
      }
    }
  }
  const int64_t n = static_cast<int64_t>(selected.size()) / 3;
  Tensor& y = ctx.allocate_output(0, DType::I64, {n, 3});
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
}

}  // namespace

void register_nms(KernelRegistry& r) {
  r.add(OpId::NonMaxSuppression, Device::CPU, DType::F32, function_kernel(non_max_suppression));
  r.add(OpId::NonMaxSuppression, Device::CPU, kLowFloats,
        in_fp32(function_kernel(non_max_suppression), Fp32Io::of({3, 4}, {})));
}

}  // namespace oat::cpu
