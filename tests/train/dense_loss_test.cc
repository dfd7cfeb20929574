// Cross-entropy over outputs of rank >= 3 (PyTorch's nn.CrossEntropyLoss over [N, C, d1, ..]
// and [N, T, V] with classes last) and integer (token id) data inputs (train/training_graph.h
// LabelOptions, data_input_of, index_bound):
//   - the class-axis rule, and errors that name the labels' and the output's shapes;
//   - the training graph's loss and evaluate_model's loss and accuracy equal a hand computation
//     (log-sum-exp in double), ignore_index positions left out of the mean;
//   - a small conv segmentation net trains in FP32 and FP16 (loss falls, per-pixel accuracy rises);
//   - a token model (Gather embedding -> MatMul -> [N, T, V]) learns label = (id·3 + 1) mod V in
//     FP16, fed int64 ids that nothing casts to float.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "dense_models.h"
#include "runtime/executor.h"
#include "train/trainer.h"

using namespace oat;
using namespace oat::dense_test;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// y = x · w (w = 1, a trainable [1]): the output is the input, so the loss is a function of x.
Graph passthrough(const std::vector<int64_t>& dims) {
  Graph g;
  g.name = "passthrough";
  g.opsets[""] = 17;
  g.inputs.push_back(value("x", DType::F32, dims));
  g.initializers["w"] = Tensor::from_vector<float>({1}, {1.0f});
  g.nodes.push_back(make_node("scale", "Mul", {"x", "w"}, "y"));
  g.outputs.push_back(value("y", DType::F32, dims));
  return g;
}

struct Hand {
  double loss = 0;
  int64_t correct = 0, positions = 0;
};

// PyTorch's cross-entropy by hand: classes along `axis` of x, labels of x's shape without it.
Hand hand_ce(const Tensor& x, int64_t axis, const Tensor& labels, int64_t ignore) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t c = x.dim(axis);
  Hand h;
  double sum = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t l = labels.data<int64_t>()[o * inner + i];
      if (l == ignore) continue;
      auto at = [&](int64_t j) { return static_cast<double>(x.data<float>()[(o * c + j) * inner + i]); };
      double mx = at(0);
      int64_t arg = 0;
      for (int64_t j = 1; j < c; ++j)
        if (at(j) > mx) mx = at(j), arg = j;
      double s = 0;
      for (int64_t j = 0; j < c; ++j) s += std::exp(at(j) - mx);
      sum += std::log(s) + mx - at(l);
      h.correct += arg == l;
      ++h.positions;
    }
  h.loss = sum / static_cast<double>(h.positions);
  return h;
}

// Random scores of `shape` and labels of `label_shape` in [0, classes), every 5th `ignore`.
void random_batch(const Shape& shape, const Shape& label_shape, int64_t classes, int64_t ignore,
                  Tensor& x, Tensor& labels) {
  std::mt19937 rng(17);
  x = uniform(shape, 3.0f, rng);
  labels = Tensor(DType::I64, label_shape);
  std::uniform_int_distribution<int64_t> cls(0, classes - 1);
  for (int64_t i = 0; i < labels.numel(); ++i)
    labels.data<int64_t>()[i] = i % 5 == 3 ? ignore : cls(rng);
}

// The training graph's loss for one batch (lr 0).
double graph_loss(const Graph& model, const train::TrainingGraphOptions& o, const Tensor& x,
                  const Tensor& labels) {
  const train::TrainingGraph tg = train::build_training_graph(model, o);
  Executor exec(tg.graph);
  std::map<std::string, Tensor> feeds = {{tg.data_input, x},
                                         {tg.target, labels},
                                         {tg.lr, Tensor::scalar<float>(0.0f)},
                                         {tg.step, Tensor::scalar<int64_t>(1)},
                                         {tg.seed, Tensor::scalar<float>(1.0f)}};
  return exec.run(feeds, {tg.loss}).at(tg.loss).item_as_double();
}

}  // namespace

TEST_SUITE("dense cross-entropy") {
  TEST_CASE("class axis: labels pick 1 or the last; else rank 3 -> last, rank >= 4 -> 1") {
    const Graph seq = passthrough({-1, 6, 7}), img = passthrough({-1, 3, 4, 5});
    train::LabelOptions o;
    CHECK(train::resolve_class_axis(seq.outputs[0], o).axis == 2);
    CHECK(has(train::resolve_class_axis(seq.outputs[0], o).why, "class axis 2 (last)"));
    CHECK(train::resolve_class_axis(img.outputs[0], o).axis == 1);
    o.label_shape = Shape{7};  // [N, 7]: the output without axis 1
    CHECK(train::resolve_class_axis(seq.outputs[0], o).axis == 1);
    o.label_shape = Shape{6};
    CHECK(train::resolve_class_axis(seq.outputs[0], o).axis == 2);
    o.label_shape = Shape{3, 4};  // [N, 3, 4]: classes last in [N, 3, 4, 5]
    CHECK(train::resolve_class_axis(img.outputs[0], o).axis == 3);
    // Both fit (symbolic dims): the rank rule.
    const Graph open = passthrough({-1, -1, -1});
    o.label_shape = Shape{9};
    const train::ClassAxis both = train::resolve_class_axis(open.outputs[0], o);
    CHECK(both.axis == 2);
    CHECK(has(both.why, "fit axis 1 and the last"));
    // --class-axis wins; negative counts from the end; 0 and out of range are refused.
    o.label_shape.reset();
    o.class_axis = -2;
    CHECK(train::resolve_class_axis(img.outputs[0], o).axis == 2);
    o.class_axis = 0;
    CHECK(has(error_of([&] { train::resolve_class_axis(img.outputs[0], o); }),
              "--class-axis 0 is not a class axis of output 'y' [batch, 3, 4, 5]"));
    o.class_axis = 4;
    CHECK(has(error_of([&] { train::resolve_class_axis(img.outputs[0], o); }), "[1, 3]"));
    // Labels that fit no class axis: both shapes named, and what would fit.
    o.class_axis.reset();
    o.label_shape = Shape{5, 5};
    const std::string e = error_of([&] { train::resolve_class_axis(img.outputs[0], o); });
    CHECK(has(e, "labels of shape [N, 5, 5] do not fit output 'y' [batch, 3, 4, 5]"));
    CHECK(has(e, "[N, 4, 5] (classes at axis 1)"));
    CHECK(has(e, "[N, 3, 4] (classes last)"));
    o.class_axis = 1;
    o.label_shape = Shape{3, 4};
    CHECK(has(error_of([&] { train::resolve_class_axis(img.outputs[0], o); }),
              "cross-entropy needs labels [N, 4, 5]"));
    // [N, C] logits take [N] labels only.
    const Graph flat = passthrough({-1, 10});
    o = {};
    o.label_shape = Shape{10};
    CHECK(has(error_of([&] { train::resolve_class_axis(flat.outputs[0], o); }),
              "class logits [N, C] need labels [N]"));
  }

  TEST_CASE("the loss equals a hand computation, ignore_index left out of the mean") {
    struct Case {
      std::vector<int64_t> dims;
      Shape x_shape, label_shape;
      std::optional<int64_t> class_axis;
      int64_t axis, ignore;
    };
    const std::vector<Case> cases = {
        {{-1, 3, 4, 5}, {2, 3, 4, 5}, {2, 4, 5}, std::nullopt, 1, -100},  // images, axis 1
        {{-1, 6, 7}, {2, 6, 7}, {2, 6}, std::nullopt, 2, -100},           // [N, T, V]: a Transpose
        {{-1, 6, 7}, {2, 6, 7}, {2, 7}, 1, 1, -100},                      // --class-axis 1
        {{-1, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4}, -1, 3, -100},            // --class-axis -1
        {{-1, 3, 4, 5}, {2, 3, 4, 5}, {2, 4, 5}, std::nullopt, 1, 2},     // ignore_index = a class
        {{-1, 5}, {4, 5}, {4}, std::nullopt, 1, -100},                    // [N, C] as before
    };
    for (const Case& c : cases) {
      CAPTURE(shape_str(c.x_shape));
      CAPTURE(c.axis);
      const Graph g = passthrough(c.dims);
      Tensor x, labels;
      random_batch(c.x_shape, c.label_shape, c.x_shape[static_cast<size_t>(c.axis)], c.ignore, x,
                   labels);
      const Hand h = hand_ce(x, c.axis, labels, c.ignore);
      train::TrainingGraphOptions o;
      o.labels.class_axis = c.class_axis;
      o.labels.ignore_index = c.ignore;
      o.labels.label_shape = Shape(c.label_shape.begin() + 1, c.label_shape.end());
      CHECK(graph_loss(g, o, x, labels) == doctest::Approx(h.loss).epsilon(1e-5));
      // The Transpose appears exactly when the classes are not at axis 1.
      const train::TrainingGraph tg = train::build_training_graph(g, o);
      CHECK(tg.class_axis.axis == c.axis);
      bool transpose = false;
      for (const Node& n : tg.graph.nodes) transpose |= n.name == "loss.classes_to_axis1";
      CHECK(transpose == (c.axis != 1));
      // evaluate_model: the same mean, and accuracy over the counted positions.
      const train::BatchLayout layout = train::layout_for(g, train::LossKind::CrossEntropy, "", o.labels);
      CHECK(layout.class_axis == c.axis);
      const train::Dataset d{x, labels};
      train::check_dataset(d, layout, "data");
      const train::EvalResult r =
          train::evaluate_model(g, {}, d, layout, train::LossKind::CrossEntropy, 1);
      CHECK(r.loss == doctest::Approx(h.loss).epsilon(1e-6));
      CHECK(r.positions == h.positions);
      CHECK(r.accuracy == doctest::Approx(static_cast<double>(h.correct) / h.positions));
      CHECK(h.positions < labels.numel());  // some positions were ignored
    }
  }

  TEST_CASE("labels of the wrong shape: errors naming both shapes, in the trainer and the data") {
    const Graph g = seg_net();
    train::TrainerConfig cfg;
    cfg.progress = false;
    cfg.graph.labels.label_shape = Shape{5, 5};
    const std::string e = error_of([&] { train::Trainer t(g, cfg); });
    CHECK(has(e, "labels of shape [N, 5, 5] do not fit output 'logits' [batch, 3, 8, 8]"));
    CHECK(has(e, "[N, 8, 8]"));
    // Data whose labels do not fit the layout: check_dataset says what it expected.
    const train::BatchLayout layout = train::layout_for(g, train::LossKind::CrossEntropy);
    train::Dataset bad{seg_data(4, 1).inputs, Tensor::zeros(DType::I64, {4, 8})};
    const std::string e2 = error_of([&] { train::check_dataset(bad, layout, "training data"); });
    CHECK(has(e2, "class labels must be integers of shape [N, 8, 8]"));
    CHECK(has(e2, "got int64 [4, 8]"));
    // A label out of range that is not ignore_index.
    train::Dataset out_of_range = seg_data(4, 1);
    out_of_range.targets.data<int64_t>()[20] = 3;
    CHECK(has(error_of([&] { train::check_dataset(out_of_range, layout, "training data"); }),
              "label 3 at sample 0 is outside [0, 3)"));
    // One output unit: the error says what a binary classifier trains with.
    train::BatchLayout one = layout;
    one.num_classes = 1;
    one.target_shape = {};
    train::Dataset ones{Tensor::zeros(DType::F32, {2, 3, 8, 8}), Tensor::from_vector<int64_t>({2}, {0, 1})};
    one.sample_shape = {3, 8, 8};
    const std::string e3 = error_of([&] { train::check_dataset(ones, one, "training data"); });
    CHECK(has(e3, "label 1 at sample 1 is outside [0, 1)"));
    CHECK(has(e3, "train it with --loss bce-with-logits on 0/1 float targets"));
  }

  TEST_CASE("a conv segmentation net trains in fp32 and fp16: loss falls, pixel accuracy rises") {
    const Graph g = seg_net();
    const train::Dataset tr = seg_data(512, 1), va = seg_data(128, 2);
    for (const DType p : {DType::F32, DType::F16}) {
      const std::string pname = dtype_name(p);
      CAPTURE(pname);
      train::TrainerConfig cfg;
      cfg.progress = false;
      cfg.batch = 32;
      cfg.epochs = 6;
      cfg.lr = 0.02;
      cfg.graph.precision = p;
      if (p == DType::F16) cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
      cfg.graph.labels.label_shape = Shape{kSegSize, kSegSize};
      train::Trainer t(g, cfg);
      CHECK(t.training_graph().class_axis.axis == 1);
      const train::EvalResult before = t.evaluate(va);
      std::vector<double> losses;
      t.on_step = [&](int64_t, double l) { losses.push_back(l); };
      t.fit(tr, nullptr);
      const train::EvalResult after = t.evaluate(va);
      MESSAGE(pname, ": loss ", losses.front(), " -> ", losses.back(), ", val accuracy ",
              before.accuracy, " -> ", after.accuracy);
      CHECK(after.positions == 128 * (kSegSize - 1) * kSegSize);  // row 0 is ignored
      CHECK(losses.back() < 0.5 * losses.front());
      CHECK(after.loss < 0.5 * before.loss);
      CHECK(after.accuracy > before.accuracy + 0.2);
      CHECK(after.accuracy > 0.9);
    }
  }

  TEST_CASE("a token model (Gather embedding -> logits [N, T, V]) learns in fp16 from int64 ids") {
    const Graph g = token_net();
    CHECK(train::data_input_of(g).name == "ids");
    CHECK(train::index_bound(g, "ids") == kVocab);
    const train::Dataset tr = token_data(1024, 1), va = token_data(128, 2);
    train::TrainerConfig cfg;
    cfg.progress = false;
    cfg.batch = 32;
    cfg.epochs = 4;
    cfg.lr = 0.05;
    cfg.graph.precision = DType::F16;
    cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
    cfg.graph.labels.label_shape = Shape{kSeq};
    train::Trainer t(g, cfg);
    const train::TrainingGraph& tg = t.training_graph();
    CHECK(tg.class_axis.axis == 2);
    CHECK(t.layout().input_dtype == DType::I64);
    CHECK(t.layout().input_bound == kVocab);
    // The ids reach the Gather (and its gradient) as they are: no other node reads them, none
    // casts them.
    for (const Node& n : tg.graph.nodes)
      for (const auto& in : n.inputs)
        if (in == "ids") CHECK_MESSAGE((n.op_type == "Gather" || n.op_type == "GatherGrad"), n.describe());
    for (const auto& v : tg.graph.inputs)
      if (v.name == "ids") CHECK(v.dtype == DType::I64);
    // The embedding is a trainable parameter.
    CHECK(std::find(tg.params.begin(), tg.params.end(), "embedding") != tg.params.end());
    const Tensor e0 = t.state().at("embedding");
    const train::EvalResult before = t.evaluate(va);
    t.fit(tr, nullptr);
    const train::EvalResult after = t.evaluate(va);
    MESSAGE("token model fp16: loss ", before.loss, " -> ", after.loss, ", accuracy ",
            before.accuracy, " -> ", after.accuracy);
    CHECK(after.positions == 128 * kSeq);
    CHECK(after.accuracy > 0.98);
    CHECK(after.loss < 0.2 * before.loss);
    const Tensor& e1 = t.state().at("embedding");
    double moved = 0;
    for (int64_t i = 0; i < e0.numel(); ++i)
      moved = std::max(moved, std::abs(double(e1.data<float>()[i]) - e0.data<float>()[i]));
    CHECK(moved > 0.01);
  }

  TEST_CASE("integer inputs: batches keep int64 ids; float data, bad ids and normalisation refused") {
    const Graph g = token_net();
    train::BatchLayout layout = train::layout_for(g, train::LossKind::CrossEntropy);
    CHECK(layout.input_dtype == DType::I64);
    CHECK(layout.target_shape == Shape{kSeq});
    train::Dataset d = token_data(4, 3);
    // int32 ids in the file: widened to the model's int64, values unchanged.
    train::Dataset d32{cast_tensor(d.inputs, DType::I32), d.targets};
    train::check_dataset(d32, layout, "data");
    const train::Batch b = train::make_batch(d32, layout, {2, 0}, 0, 2);
    REQUIRE(b.inputs.dtype() == DType::I64);
    CHECK(b.inputs.shape() == Shape{2, kSeq});
    for (int64_t j = 0; j < kSeq; ++j) {
      CHECK(b.inputs.data<int64_t>()[j] == d.inputs.data<int64_t>()[2 * kSeq + j]);
      CHECK(b.targets.data<int64_t>()[kSeq + j] == d.targets.data<int64_t>()[j]);
    }
    train::Dataset floats{cast_tensor(d.inputs, DType::F32), d.targets};
    CHECK(has(error_of([&] { train::check_dataset(floats, layout, "data"); }),
              "inputs of dtype float32, but the model's input takes int64 ids"));
    d.inputs.data<int64_t>()[9] = kVocab;
    CHECK(has(error_of([&] { train::check_dataset(d, layout, "data"); }),
              "id 16 at sample 1 is outside [0, 16)"));
    train::TrainerConfig cfg;
    cfg.progress = false;
    cfg.input.input_mean = 0.5f;
    CHECK(has(error_of([&] { train::Trainer t(g, cfg); }), "(token id) input 'ids'"));
  }
}
