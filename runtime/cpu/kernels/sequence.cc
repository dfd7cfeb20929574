// Sequences and optionals (ONNX opsets 11-18; values of ValueKind Sequence / Optional, held as
// Tensor objects: runtime/tensor.h). CPU kernels only (a CUDA executor places these ops on the
// host: runtime/cuda/context.cc), no gradients. A sequence is immutable: every op
// makes a new one that shares its items' storage.
//
// SequenceEmpty(; dtype = FLOAT) -> S = []             SequenceConstruct(T₁..Tₙ) -> [T₁..Tₙ]
// SequenceInsert(S, T, pos = n) -> S with T before item pos, pos ∈ [−n, n]
// SequenceAt(S, pos) -> S[pos], pos ∈ [−n, n−1]         SequenceLength(S) -> int64 n
// SequenceErase(S, pos = −1) -> S without item pos, pos ∈ [−n, n−1]
// SplitToSequence(X, split?; axis = 0, keepdims = 1): no split: the slices of length 1 along
//   axis (squeezed unless keepdims); a scalar split: chunks of that length (the last shorter);
//   a 1-D split: chunks of those lengths (summing to the axis' size)
// ConcatFromSequence(S; axis, new_axis = 0): Concat of the items along axis, or with new_axis
//   their Stack on a new axis at `axis` (∈ [−r−1, r]); at least one item
// Optional(V?; type): an optional holding V, or an empty one of `type`
// OptionalHasElement(O?) -> bool: O holds a value (a tensor or sequence given directly: true;
//   no input, opset 18: false)
// OptionalGetElement(O) -> the value O holds (an error when empty); a tensor or sequence itself
//
// Positions are int32 or int64 scalars (or one-element tensors), negative ones count from the end.
#include <optional>

#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"
#include "runtime/onnx_type_code.h"

namespace oat::cpu {

namespace {

const Tensor& sequence_input(const KernelContext& ctx, int i) {
  const Tensor& s = ctx.input(i);
  if (s.kind() != ValueKind::Sequence)
    ctx.fail(
        cat("input ", i, " '", ctx.node().inputs[i], "' must be a sequence, got a ", s.describe()));
  return s;
}

const Tensor& tensor_input(const KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (!t.is_tensor())
    ctx.fail(
        cat("input ", i, " '", ctx.node().inputs[i], "' must be a tensor, got a ", t.describe()));
  return t;
}

// A position input checked against [lo, hi] (after adding n to a negative one).
int64_t position(const KernelContext& ctx, int i, int64_t n, int64_t lo, int64_t hi) {
  const Tensor& p = tensor_input(ctx, i);
  if ((p.dtype() != DType::I64 && p.dtype() != DType::I32) || p.numel() != 1)
    ctx.fail(cat("position must be an int32 or int64 scalar, got ", dtype_name(p.dtype()), " ",
                 shape_str(p.shape())));
  const int64_t raw = p.item_as_int(0);
  const int64_t v = raw < 0 ? raw + n : raw;
  if (v < lo || v > hi)
    ctx.fail(cat("position ", raw, " is out of range for a sequence of ", n, " (allowed [", -n,
                 ", ", hi, "])"));
  return v;
}

DType onnx_attr_dtype(const KernelContext& ctx, int64_t code) {
  const std::optional<DType> t = dtype_of_onnx_code(code);
  if (!t) ctx.fail(cat("dtype ", code, " is not a type this runtime stores"));
  return *t;
}

void sequence_empty(KernelContext& ctx) {
  ctx.set_output(0, Tensor::sequence(onnx_attr_dtype(ctx, ctx.node().attr_int("dtype", 1)), {}));
}

void sequence_construct(KernelContext& ctx) {
  std::vector<Tensor> items;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = tensor_input(ctx, i);
    if (!items.empty() && t.dtype() != items.front().dtype())
      ctx.fail(cat("input ", i, " is ", dtype_name(t.dtype()), ", input 0 ",
                   dtype_name(items.front().dtype()), "; a sequence has one element type"));
    items.push_back(t);
  }
  if (items.empty()) ctx.fail("needs at least one input");
  const DType t = items.front().dtype();
  ctx.set_output(0, Tensor::sequence(t, std::move(items)));
}

void sequence_insert(KernelContext& ctx) {
  const Tensor& s = sequence_input(ctx, 0);
  const Tensor& t = tensor_input(ctx, 1);
  const int64_t n = static_cast<int64_t>(s.items().size());
  const DType elem = s.dtype() == DType::Undefined ? t.dtype() : s.dtype();
  if (t.dtype() != elem)
    ctx.fail(cat("cannot insert a tensor of ", dtype_name(t.dtype()), " into a sequence of ",
                 dtype_name(elem)));
  const int64_t at = ctx.has_input(2) ? position(ctx, 2, n, 0, n) : n;
  std::vector<Tensor> items = s.items();
  items.insert(items.begin() + at, t);
  ctx.set_output(0, Tensor::sequence(elem, std::move(items)));
}

void sequence_at(KernelContext& ctx) {
  const Tensor& s = sequence_input(ctx, 0);
  const int64_t n = static_cast<int64_t>(s.items().size());
  ctx.set_output(0, s.items()[static_cast<size_t>(position(ctx, 1, n, 0, n - 1))]);
}

void sequence_erase(KernelContext& ctx) {
  const Tensor& s = sequence_input(ctx, 0);
  const int64_t n = static_cast<int64_t>(s.items().size());
  if (n == 0) ctx.fail("cannot erase from an empty sequence");
  const int64_t at = ctx.has_input(1) ? position(ctx, 1, n, 0, n - 1) : n - 1;
  std::vector<Tensor> items = s.items();
  items.erase(items.begin() + at);
  ctx.set_output(0, s.inner_kind() == ValueKind::Map  // a sequence of maps stays one when empty
                        ? Tensor::map_sequence(s.key_dtype(), s.dtype(), std::move(items))
                        : Tensor::sequence(s.dtype(), std::move(items)));
}

void sequence_length(KernelContext& ctx) {
  const Tensor& s = sequence_input(ctx, 0);
  ctx.set_output(0, Tensor::scalar<int64_t>(static_cast<int64_t>(s.items().size())));
}

void split_to_sequence(KernelContext& ctx) {
  const Tensor& x = tensor_input(ctx, 0);
  const int r = x.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < -r || axis >= r)
    ctx.fail(cat("axis ", axis, " is out of range for a tensor of rank ", r));
  if (axis < 0) axis += r;
  const int a = static_cast<int>(axis);
  const int64_t dim = x.dim(a);
  std::vector<int64_t> lengths;
  bool squeeze = false;
  if (!ctx.has_input(1)) {
    lengths.assign(static_cast<size_t>(dim), 1);
    squeeze = ctx.node().attr_int("keepdims", 1) == 0;
  } else {
    const Tensor& split = tensor_input(ctx, 1);
    const std::vector<int64_t> v = split.to_int_vector();
    if (split.rank() == 0) {
      if (v[0] <= 0) ctx.fail(cat("split ", v[0], " must be positive"));
      for (int64_t at = 0; at < dim; at += v[0]) lengths.push_back(std::min(v[0], dim - at));
    } else {
      int64_t sum = 0;
      for (int64_t l : v) {
        if (l < 0) ctx.fail(cat("split has a negative length ", l));
        sum += l;
      }
      if (sum != dim) ctx.fail(cat("split lengths sum to ", sum, ", the axis has ", dim));
      lengths = v;
    }
  }
  std::vector<Tensor> items;
  std::vector<Tensor*> pieces;
  items.reserve(lengths.size());
  for (int64_t l : lengths) {
    Shape s = x.shape();
    s[static_cast<size_t>(a)] = l;
    items.emplace_back(x.dtype(), s);
    pieces.push_back(&items.back());
  }
  split_blocks(x, a, lengths, pieces);  // Split's copy (movement.cc)
  if (squeeze)
    for (Tensor& piece : items) {
      Shape s = piece.shape();
      s.erase(s.begin() + a);
      piece = piece.reshaped(s);
    }
  ctx.set_output(0, Tensor::sequence(x.dtype(), std::move(items)));
}

void concat_from_sequence(KernelContext& ctx) {
  const Tensor& s = sequence_input(ctx, 0);
  const auto& items = s.items();
  if (items.empty()) ctx.fail("cannot concatenate an empty sequence");
  const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
  if (!ctx.node().attrs.count("axis")) ctx.fail("attribute 'axis' is required");
  const int r = items.front().rank();
  const int out_rank = r + (new_axis ? 1 : 0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < -out_rank || axis >= out_rank)
    ctx.fail(cat("axis ", axis, " is out of range for ", new_axis ? "stacking" : "concatenating",
                 " tensors of rank ", r));
  if (axis < 0) axis += out_rank;
  const int a = static_cast<int>(axis);
  // Each item as rank out_rank (a new axis of 1 when stacking); all equal except along a.
  std::vector<Tensor> parts;
  Shape out = items.front().shape();
  if (new_axis)
    out.insert(out.begin() + a, 0);
  else
    out[static_cast<size_t>(a)] = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    Shape sh = items[k].shape();
    if (new_axis) sh.insert(sh.begin() + a, 1);
    bool ok = static_cast<int>(sh.size()) == out_rank;
    for (int d = 0; ok && d < out_rank; ++d)
      if (d != a && sh[static_cast<size_t>(d)] != out[static_cast<size_t>(d)]) ok = false;
    if (!ok)
      ctx.fail(cat("item ", k, " has shape ", shape_str(items[k].shape()), ", item 0 ",
                   shape_str(items.front().shape()), " (they must agree except along axis ", axis,
                   ")"));
    out[static_cast<size_t>(a)] += sh[static_cast<size_t>(a)];
    parts.push_back(items[k].reshaped(sh));
  }
  std::vector<const Tensor*> xs;
  for (const Tensor& p : parts) xs.push_back(&p);
  concat_blocks(xs, a, ctx.allocate_output(0, s.dtype(), out));  // Concat's copy (movement.cc)
}

void optional(KernelContext& ctx) {
  if (ctx.has_input(0)) {
    const Tensor& v = ctx.input(0);
    if (v.kind() == ValueKind::Optional)
      ctx.fail("input must be a tensor or a sequence, not an optional");
    ctx.set_output(0, Tensor::optional(v.dtype(), v.kind(), v));
    return;
  }
  const Attribute* type = ctx.node().attr("type");
  if (!type || type->kind != Attribute::Kind::TypeProto)
    ctx.fail("an Optional without an input needs its 'type' attribute");
  if (type->type_kind == ValueKind::Optional) ctx.fail("'type' cannot be an optional");
  ctx.set_output(0, Tensor::optional(type->type_elem, type->type_kind));
}

void optional_has_element(KernelContext& ctx) {
  const Tensor* o = ctx.input_or_null(0);
  const bool has = o && (o->kind() != ValueKind::Optional || !o->items().empty());
  ctx.set_output(0, Tensor::scalar<bool>(has));
}

void optional_get_element(KernelContext& ctx) {
  const Tensor& o = ctx.input(0);
  if (o.kind() != ValueKind::Optional) {
    ctx.set_output(0, o);
    return;
  }
  if (o.items().empty()) ctx.fail(cat("input '", ctx.node().inputs[0], "' is an empty optional"));
  ctx.set_output(0, o.items().front());
}

}  // namespace

void register_sequence(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::SequenceEmpty, cpu, kAnyDType, function_kernel(sequence_empty));
  r.add(OpId::SequenceConstruct, cpu, kAnyDType, function_kernel(sequence_construct));
  r.add(OpId::SequenceInsert, cpu, kAnyDType, function_kernel(sequence_insert));
  r.add(OpId::SequenceAt, cpu, kAnyDType, function_kernel(sequence_at));
  r.add(OpId::SequenceErase, cpu, kAnyDType, function_kernel(sequence_erase));
  r.add(OpId::SequenceLength, cpu, kAnyDType, function_kernel(sequence_length));
  r.add(OpId::SplitToSequence, cpu, kAnyDType, function_kernel(split_to_sequence));
  r.add(OpId::ConcatFromSequence, cpu, kAnyDType, function_kernel(concat_from_sequence));
  r.add(OpId::Optional, cpu, kAnyDType, function_kernel(optional));
  r.add(OpId::OptionalHasElement, cpu, kAnyDType, function_kernel(optional_has_element));
  r.add(OpId::OptionalGetElement, cpu, kAnyDType, function_kernel(optional_get_element));
}

}  // namespace oat::cpu
