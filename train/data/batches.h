// Datasets in memory and the batches cut from them.
//
// A Dataset holds samples along dimension 0: inputs (uint8 images are scaled to [0, 1]; float
// data is used as it is; then an optional (x - mean) / std) and targets (int64 class labels, or float regression targets). Batches
// follow a seeded shuffle, and a background thread prepares the next ones while a step runs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/tensor.h"

namespace oat::train {

struct Dataset {
  Tensor inputs;   // [N, ...]
  Tensor targets;  // [N] int64 labels or [N, ...] float
  // The model's other inputs (attention_mask, token_type_ids, ...) by input name, [N, ...] each:
  // cut with the same indices as `inputs` and fed as they are (cast to the input's type).
  std::map<std::string, Tensor> extra = {};
  int64_t size() const { return inputs.defined() && inputs.rank() > 0 ? inputs.dim(0) : 0; }
};

// A model input other than the data input, fed from Dataset::extra.
struct ExtraInput {
  std::string name;
  DType dtype = DType::F32;  // the model's type; the data must be of the same kind (bool, integer,
                             // float) and is cast to it
  Shape sample_shape;        // the declared shape without N; -1 where symbolic (any size)
  bool shape_known = false;  // false: the model declares no shape (any [N, ...] is taken)
  int64_t bound = 0;         // integer ids indexing a table (index_bound): [0, bound); 0: unchecked
  // The model declares the input a scalar (shape []): a temperature, a step count. It has no
  // sample axis, so the data file holds one value (shape [] or [1]), fed whole to every batch.
  bool scalar = false;
};

// Where a model wants its batches: the per-sample shape of its input (e.g. [1, 28, 28]) and of
// its target, and the class count for label checks (0 when not classification).
struct BatchLayout {
  std::string input_name;  // the model's data input (data_input_of), fed from Dataset::inputs
  // Without N; -1 where the model's dimension is symbolic (a sequence axis) until
  // fit_sample_shape sets it from the data.
  Shape sample_shape;
  // F32 (uint8 images and float data become F32), or I64 / I32 for token ids: integer inputs
  // are copied as integers (never through float), and only integer data is accepted for them.
  DType input_dtype = DType::F32;
  int64_t input_bound = 0;  // integer inputs: ids must lie in [0, input_bound) (0: unchecked)
  // Per-sample. Class labels: the output's shape without N and the class axis ({} for [N, C]
  // logits; -1 where the output's dimension is symbolic); float targets: the output's.
  Shape target_shape;
  DType target_dtype = DType::I64;
  int64_t num_classes = 0;
  int64_t class_axis = 1;        // class labels: the output's class axis (train/training_graph.h)
  int64_t ignore_index = -100;   // class labels equal to it are not counted
  // The output is probabilities (a final Softmax over the classes, or a Sigmoid for
  // bce-with-logits; train/training_graph.h logits_behind): evaluation scores −log p, not
  // the logits' log-sum-exp form.
  bool output_is_probability = false;
  size_t output_index = 0;  // which of the model's outputs the loss reads (--loss-output)
  // Input normalisation after scaling: x' = (x - mean) / std (torchvision's Normalize; the
  // defaults leave inputs as they are).
  float input_mean = 0.0f;
  float input_std = 1.0f;
  // Every other model input (not an initializer): each must be given in Dataset::extra.
  std::vector<ExtraInput> extra_inputs;
  // NaN (and, in inputs and targets, ±inf) refused: true for training and evaluation, false for
  // `check`, which cuts its batch before it knows whether the check is forward only (an
  // inference model may be fed NaN: IsNaN) and calls require_finite itself when it is not.
  bool require_finite = true;
};

// Checks that `data` fits `layout` (per-sample element count, dtypes, label range) and throws
// Error saying which part does not fit and why, naming `what` ("training data", ...). A model
// input missing from data.extra is named with its type, shape and `input_flag` (the option that
// gives it: --train-input, --val-input, --input).
void check_dataset(const Dataset& data, const BatchLayout& layout, const std::string& what,
                   const std::string& input_flag = "--train-input");

// Fails naming the first NaN (or, when `inf_too`, infinite) value of a float tensor as
// "LABEL: value NaN at sample S (element E of it); the data must be finite"; `hint` is appended.
void require_finite(const Tensor& t, const std::string& label, bool inf_too,
                    const std::string& hint = "");

// Sets the symbolic (-1) dimensions of layout.sample_shape from `inputs` ([N, ...] of the same
// rank); throws Error naming `what` and the model's input when the rank differs.
void fit_sample_shape(BatchLayout& layout, const Tensor& inputs, const std::string& what);

// The extra inputs alone (for check, whose data input and labels come from elsewhere): each of
// the layout's extra inputs is in `extra`, [n, ...] of a fitting kind and shape; nothing else is.
void check_extra_inputs(const std::map<std::string, Tensor>& extra, int64_t n,
                        const BatchLayout& layout, const std::string& what,
                        const std::string& input_flag);

struct Batch {
  Tensor inputs;
  Tensor targets;
  std::map<std::string, Tensor> extra;  // the layout's extra inputs, in the model's types
  int64_t first = 0;  // index of the batch in the epoch
};

// Cuts `indices[begin, end)` out of `data` in the layout's shapes and dtypes.
Batch make_batch(const Dataset& data, const BatchLayout& layout,
                 const std::vector<int64_t>& indices, int64_t begin, int64_t end);

// The order of one epoch: 0..N-1, shuffled by (seed, epoch) unless shuffle is false.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle);

// Prepares batches of one epoch on a background thread, `depth` ahead of the consumer.
class BatchPrefetcher {
 public:
  BatchPrefetcher(const Dataset& data, const BatchLayout& layout, std::vector<int64_t> order,
                  int64_t batch_size, bool drop_last, int depth = 2);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The next batch; false at the end of the epoch. Rethrows an error from the producer.
  bool next(Batch& out);
  int64_t num_batches() const { return num_batches_; }

 private:
  void produce();

  const Dataset& data_;
  BatchLayout layout_;
  std::vector<int64_t> order_;
  int64_t batch_size_;
  int64_t num_batches_;
  size_t depth_;
  std::deque<Batch> queue_;
  bool done_ = false, stop_ = false;
  std::string error_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread worker_;
};

}  // namespace oat::train
