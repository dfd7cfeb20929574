#include "train/data/batches.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

namespace oat::train {

namespace {

// "bool", "integer" or "float": the kinds of data an input of type `t` accepts.
const char* kind_of(DType t) {
  return t == DType::Bool ? "bool" : is_integer(t) ? "integer" : "float";
}

std::string sample_shape_str(const ExtraInput& e) {
  if (!e.shape_known) return "[N, ...]";
  std::string r = "[N";
  for (int64_t d : e.sample_shape) r += d < 0 ? std::string(", ?") : cat(", ", d);
  return r + "]";
}

}  // namespace

// One NaN in a data set makes every loss and gradient that reads it NaN, and a dynamic loss
// scaler then skips step after step while it backs the scale off, which looks like a training
// problem: the data is refused up front instead.
void require_finite(const Tensor& t, const std::string& label, bool inf_too,
                    const std::string& hint) {
  if (!t.defined() || !is_floating(t.dtype())) return;
  const int64_t n = t.rank() >= 1 ? t.dim(0) : 1;
  const int64_t per = n ? std::max<int64_t>(1, t.numel() / n) : 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.item_as_double(i);
    if (std::isnan(v) || (inf_too && std::isinf(v)))
      throw Error(cat(label, ": value ", std::isnan(v) ? "NaN" : (v > 0 ? "inf" : "-inf"),
                      " at sample ", i / per, " (element ", i % per,
                      " of it); the data must be finite", hint));
  }
}

void check_extra_inputs(const std::map<std::string, Tensor>& extra, int64_t n,
                        const BatchLayout& layout, const std::string& what,
                        const std::string& input_flag) {
  for (const auto& [name, t] : extra) {
    bool known = false;
    for (const ExtraInput& e : layout.extra_inputs) known = known || e.name == name;
    if (known) continue;
    if (!layout.input_name.empty() && name == layout.input_name)
      throw Error(cat(what, ": ", input_flag, " ", name, "=...: '", name,
                      "' is the model's data input: give it with ",
                      input_flag == "--val-input" ? "--val-x" : "--train-x"));
    std::string names;
    for (const ExtraInput& e : layout.extra_inputs) names += cat(names.empty() ? "" : ", ", "'", e.name, "'");
    throw Error(cat(what, ": ", input_flag, " ", name, "=...: the model has no other input named '",
                    name, "'", names.empty() ? " (its only input is the data input)"
                                             : cat(" (its other inputs: ", names, ")")));
  }
  for (const ExtraInput& e : layout.extra_inputs) {
    auto it = extra.find(e.name);
    if (it == extra.end())
      throw Error(cat(what, ": the model's input '", e.name, "' (", dtype_name(e.dtype), " ",
                      sample_shape_str(e), ") is not fed: give it with ", input_flag,
                      " ", e.name, "=FILE.npy"));
    const Tensor& t = it->second;
    const std::string label = cat(what, ": input '", e.name, "'");
    // NaN only: an additive attention mask may hold -inf.
    if (layout.require_finite) require_finite(t, label, false);
    if (e.scalar) {
      if (!t.defined() || t.numel() != 1 || t.rank() > 1)
        throw Error(cat(label, " is a scalar in the model (shape []): give one value (shape [] or "
                        "[1]), fed to every batch; got ", t.defined() ? shape_str(t.shape()) : "none"));
      if (is_floating(e.dtype) != is_floating(t.dtype()) || (e.dtype == DType::Bool) != (t.dtype() == DType::Bool))
        throw Error(cat(label, " is ", dtype_name(t.dtype()), ", the model's input is ",
                        dtype_name(e.dtype)));
      continue;
    }
    if (!t.defined() || t.rank() < 1 || t.dim(0) != n)
      throw Error(cat(label, " has ", t.defined() && t.rank() >= 1 ? cat(t.dim(0)) : "no",
                      " samples (", t.defined() ? shape_str(t.shape()) : "[]", "), the data has ",
                      n, " (dimension 0 must match)"));
    const DType dt = t.dtype();
    const bool fits = e.dtype == DType::Bool ? dt == DType::Bool
                      : is_integer(e.dtype)  ? is_integer(dt)
                                             : is_floating(dt);
    if (!fits)
      throw Error(cat(label, " is ", dtype_name(dt), ", the model's input is ", dtype_name(e.dtype),
                      " (give ", is_integer(e.dtype) ? "an " : "a ", kind_of(e.dtype), " array)"));
    bool shape_ok = !e.shape_known || t.rank() == static_cast<int64_t>(e.sample_shape.size()) + 1;
    for (size_t d = 0; e.shape_known && shape_ok && d < e.sample_shape.size(); ++d)
      shape_ok = e.sample_shape[d] < 0 || t.dim(static_cast<int64_t>(d) + 1) == e.sample_shape[d];
    if (!shape_ok)
      throw Error(cat(label, " has shape ", shape_str(t.shape()), ", the model's input takes ",
                      sample_shape_str(e)));
    if (e.bound > 0 && is_integer(dt)) {
      const int64_t per = n ? t.numel() / n : 0;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const int64_t id = t.item_as_int(i);
        if (id < 0 || id >= e.bound)
          throw Error(cat(label, ": id ", id, " at sample ", i / std::max<int64_t>(1, per),
                          " is outside [0, ", e.bound,
                          "), the rows of the table the model's input indexes"));
      }
    }
  }
}

void fit_sample_shape(BatchLayout& layout, const Tensor& inputs, const std::string& what) {
  bool symbolic = false;
  for (int64_t d : layout.sample_shape) symbolic = symbolic || d < 0;
  if (!symbolic) return;
  std::string want = "[N";
  for (int64_t d : layout.sample_shape) want += d < 0 ? std::string(", ?") : cat(", ", d);
  want += "]";
  if (!inputs.defined() ||
      inputs.rank() != static_cast<int64_t>(layout.sample_shape.size()) + 1)
    throw Error(cat(what, ": inputs ", inputs.defined() ? shape_str(inputs.shape()) : "(none)",
                    " do not fit the model's input '", layout.input_name, "' ", want,
                    " (its symbolic dimensions take their size from the data, of the same rank)"));
  for (size_t d = 0; d < layout.sample_shape.size(); ++d)
    if (layout.sample_shape[d] < 0) layout.sample_shape[d] = inputs.dim(static_cast<int64_t>(d) + 1);
}

void check_dataset(const Dataset& data, const BatchLayout& layout, const std::string& what,
                   const std::string& input_flag) {
  if (!data.inputs.defined()) throw Error(cat(what, ": no inputs"));
  if (data.inputs.rank() < 1)
    throw Error(cat(what, ": the inputs are a single value (shape []); expected samples [N, ...]"));
  if (!data.targets.defined()) throw Error(cat(what, ": no targets"));
  if (data.targets.rank() < 1)
    throw Error(cat(what, ": the targets are a single value (shape []); expected [N, ...]"));
  const int64_t n = data.inputs.dim(0);
  if (data.targets.dim(0) != n)
    throw Error(cat(what, ": ", n, " inputs but ", data.targets.dim(0), " targets"));
  const int64_t per_sample = n ? data.inputs.numel() / n : 0;
  if (n && per_sample != numel(layout.sample_shape))
    throw Error(cat(what, ": each sample has shape ",
                    shape_str(Shape(data.inputs.shape().begin() + 1, data.inputs.shape().end())),
                    " (", per_sample, " values), but the model's input takes ",
                    shape_str(layout.sample_shape), " (", numel(layout.sample_shape), " values)"));
  if (is_integer(layout.input_dtype)) {
    // Token ids: integers only (a float array here is a mistake, not something to round).
    if (!is_integer(data.inputs.dtype()))
      throw Error(cat(what, ": inputs of dtype ", dtype_name(data.inputs.dtype()),
                      ", but the model's input takes ", dtype_name(layout.input_dtype),
                      " ids (give an int64 or int32 array)"));
    if (layout.input_bound > 0)
      for (int64_t i = 0; i < data.inputs.numel(); ++i) {
        const int64_t id = data.inputs.item_as_int(i);
        if (id < 0 || id >= layout.input_bound)
          throw Error(cat(what, ": id ", id, " at sample ", i / std::max<int64_t>(1, per_sample),
                          " is outside [0, ", layout.input_bound,
                          "), the rows of the table the model's input indexes"));
      }
  } else if (data.inputs.dtype() != DType::U8 && !is_floating(data.inputs.dtype())) {
    throw Error(cat(what, ": inputs of dtype ", dtype_name(data.inputs.dtype()),
                    " (expected uint8 images or floats)"));
  }
  if (layout.target_dtype == DType::I64) {
    // Labels: [N] + the output's shape without N and the class axis (-1: any size).
    const Shape& want = layout.target_shape;
    bool fits = is_integer(data.targets.dtype()) &&
                data.targets.rank() == static_cast<int64_t>(want.size()) + 1;
    for (size_t d = 0; fits && d < want.size(); ++d)
      fits = want[d] < 0 || data.targets.dim(static_cast<int64_t>(d) + 1) == want[d];
    if (!fits) {
      std::string w = "[N";
      for (int64_t d : want) w += d < 0 ? std::string(", ?") : cat(", ", d);
      w += "]";
      throw Error(cat(what, ": class labels must be integers of shape ", w,
                      want.empty() ? "" : cat(" (the model's output without its class axis ",
                                              layout.class_axis, ")"),
                      ", got ", dtype_name(data.targets.dtype()), " ",
                      shape_str(data.targets.shape())));
    }
    const int64_t per = n ? data.targets.numel() / n : 0;
    for (int64_t i = 0; i < data.targets.numel(); ++i) {
      const int64_t l = data.targets.item_as_int(i);
      if (l == layout.ignore_index) continue;
      if (l < 0 || (layout.num_classes > 0 && l >= layout.num_classes))
        throw Error(cat(what, ": label ", l, " at sample ", i / std::max<int64_t>(1, per),
                        " is outside [0, ", layout.num_classes, ") for a model with ",
                        layout.num_classes, " classes (and is not the ignore_index ",
                        layout.ignore_index, ")",
                        layout.num_classes == 1
                            ? "; one output unit is a binary classifier: train it with --loss "
                              "bce-with-logits on 0/1 float targets"
                            : ""));
    }
  } else {
    const int64_t t_per = n ? data.targets.numel() / n : 0;
    if (n && t_per != numel(layout.target_shape))
      throw Error(cat(what, ": each target has ", t_per, " values, the model's output has ",
                      numel(layout.target_shape)));
  }
  if (layout.require_finite) {
    require_finite(data.inputs, cat(what, ": inputs"), true);
    require_finite(data.targets, cat(what, ": targets"), true);
  }
  check_extra_inputs(data.extra, n, layout, what, input_flag);
}

Batch make_batch(const Dataset& data, const BatchLayout& layout,
                 const std::vector<int64_t>& indices, int64_t begin, int64_t end) {
  const int64_t b = end - begin;
  Batch batch;
  batch.first = begin;
  Shape in_shape{b};
  in_shape.insert(in_shape.end(), layout.sample_shape.begin(), layout.sample_shape.end());
  batch.inputs = Tensor(layout.input_dtype, in_shape);
  const int64_t per = numel(layout.sample_shape);
  if (is_integer(layout.input_dtype)) {
    // Token ids, copied as integers (no normalisation: they are indices).
    const bool same = data.inputs.dtype() == layout.input_dtype;
    const size_t esize = dtype_size(layout.input_dtype);
    for (int64_t k = 0; k < b; ++k) {
      const int64_t i = indices[static_cast<size_t>(begin + k)];
      if (same) {
        std::memcpy(static_cast<char*>(batch.inputs.raw_data()) + k * per * esize,
                    static_cast<const char*>(data.inputs.raw_data()) + i * per * esize, per * esize);
      } else if (layout.input_dtype == DType::I64) {
        for (int64_t j = 0; j < per; ++j)
          batch.inputs.data<int64_t>()[k * per + j] = data.inputs.item_as_int(i * per + j);
      } else {
        for (int64_t j = 0; j < per; ++j)
          batch.inputs.data<int32_t>()[k * per + j] =
              static_cast<int32_t>(data.inputs.item_as_int(i * per + j));
      }
    }
  } else {
    float* dst = batch.inputs.data<float>();
    for (int64_t k = 0; k < b; ++k) {
      const int64_t i = indices[static_cast<size_t>(begin + k)];
      if (data.inputs.dtype() == DType::U8) {
        // uint8 images scaled to [0, 1].
        const uint8_t* src = data.inputs.data<uint8_t>() + i * per;
        for (int64_t j = 0; j < per; ++j) dst[k * per + j] = static_cast<float>(src[j]) * (1.0f / 255.0f);
      } else if (data.inputs.dtype() == DType::F32) {
        std::memcpy(dst + k * per, data.inputs.data<float>() + i * per, per * sizeof(float));
      } else {
        for (int64_t j = 0; j < per; ++j)
          dst[k * per + j] = static_cast<float>(data.inputs.item_as_double(i * per + j));
      }
    }
    if (layout.input_mean != 0.0f || layout.input_std != 1.0f) {
      const float mean = layout.input_mean, inv_std = 1.0f / layout.input_std;
      for (int64_t j = 0; j < b * per; ++j) dst[j] = (dst[j] - mean) * inv_std;
    }
  }
  if (layout.target_dtype == DType::I64) {
    // Labels [b, ...]: each sample's block of the data's labels.
    const int64_t n = data.targets.dim(0);
    const int64_t tp = n ? data.targets.numel() / n : 0;
    Shape ts{b};
    ts.insert(ts.end(), data.targets.shape().begin() + 1, data.targets.shape().end());
    batch.targets = Tensor(DType::I64, ts);
    int64_t* t = batch.targets.data<int64_t>();
    for (int64_t k = 0; k < b; ++k) {
      const int64_t i = indices[static_cast<size_t>(begin + k)];
      if (data.targets.dtype() == DType::I64)
        std::memcpy(t + k * tp, data.targets.data<int64_t>() + i * tp, tp * sizeof(int64_t));
      else
        for (int64_t j = 0; j < tp; ++j) t[k * tp + j] = data.targets.item_as_int(i * tp + j);
    }
  } else {
    Shape ts{b};
    ts.insert(ts.end(), layout.target_shape.begin(), layout.target_shape.end());
    batch.targets = Tensor(DType::F32, ts);
    const int64_t tp = numel(layout.target_shape);
    float* t = batch.targets.data<float>();
    for (int64_t k = 0; k < b; ++k)
      for (int64_t j = 0; j < tp; ++j)
        t[k * tp + j] = static_cast<float>(data.targets.item_as_double(indices[begin + k] * tp + j));
  }
  // Extra inputs: the same samples, each row copied, then cast to the model's type.
  for (const ExtraInput& e : layout.extra_inputs) {
    auto it = data.extra.find(e.name);
    if (it == data.extra.end()) throw Error(cat("input '", e.name, "' is not in the data"));
    const Tensor& src = it->second;
    if (e.scalar) {  // one value for every batch, shape [] as the model declares
      const Tensor one = src.reshaped({});
      batch.extra[e.name] = src.dtype() == e.dtype ? one : cast_tensor(one, e.dtype);
      continue;
    }
    Shape s = src.shape();
    s[0] = b;
    Tensor rows(src.dtype(), s);
    const int64_t n = src.dim(0);
    const size_t row_bytes = n ? src.nbytes() / static_cast<size_t>(n) : 0;
    for (int64_t k = 0; k < b; ++k)
      std::memcpy(static_cast<char*>(rows.raw_data()) + k * row_bytes,
                  static_cast<const char*>(src.raw_data()) +
                      indices[static_cast<size_t>(begin + k)] * row_bytes,
                  row_bytes);
    batch.extra[e.name] = src.dtype() == e.dtype ? rows : cast_tensor(rows, e.dtype);
  }
  return batch;
}

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) {
    std::mt19937_64 rng(seed * 1000003ULL + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
  }
  return order;
}

BatchPrefetcher::BatchPrefetcher(const Dataset& data, const BatchLayout& layout,
                                 std::vector<int64_t> order, int64_t batch_size, bool drop_last,
                                 int depth)
    : data_(data),
      layout_(layout),
      order_(std::move(order)),
      batch_size_(batch_size),
      depth_(static_cast<size_t>(std::max(1, depth))) {
  const int64_t n = static_cast<int64_t>(order_.size());
  num_batches_ = drop_last ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  worker_ = std::thread([this] { produce(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void BatchPrefetcher::produce() {
  try {
    for (int64_t k = 0; k < num_batches_; ++k) {
      const int64_t begin = k * batch_size_;
      const int64_t end = std::min<int64_t>(begin + batch_size_, static_cast<int64_t>(order_.size()));
      Batch b = make_batch(data_, layout_, order_, begin, end);
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || queue_.size() < depth_; });
      if (stop_) return;
      queue_.push_back(std::move(b));
      cv_.notify_all();
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = e.what();
  }
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  cv_.notify_all();
}

bool BatchPrefetcher::next(Batch& out) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || done_; });
  if (!error_.empty()) throw Error(error_);
  if (queue_.empty()) return false;
  out = std::move(queue_.front());
  queue_.pop_front();
  cv_.notify_all();
  return true;
}

}  // namespace oat::train
