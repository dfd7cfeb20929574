#!/usr/bin/env python3
"""Small TensorFlow/Keras models exported by tf2onnx, for tests/models/keras_export_test.cc.

    /tmp/tfenv/bin/python scripts/make_keras_fixtures.py [OUT]      (OUT: tests/data/keras)

Needs TensorFlow (2.15, tensorflow-cpu), tf2onnx (1.17), onnx and onnxruntime in one
interpreter (a venv: `python3.11 -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install
tensorflow-cpu==2.15.1 tf2onnx==1.17.0 onnx==1.16.2 onnxruntime numpy`). The tests do NOT need
any of them: the files this writes are committed, and the tests only read them. Rerun it (and
commit the result) only to change the fixtures. The outputs and loss curves the tests compare
with are in the files, but the tests also count what these architectures export (8 merged BN
reads, 10 parameters, 5 one-element constants, ...) and name the CNN's logits
('model/dense/MatMul:0'): change those with the models. tf2onnx's generated names (which of two
merged tensors keeps its name, the __N suffixes) vary between runs; the tests do not use them.
Keras's Adam uses epsilon 1e-7; the tests set ours to the same.

Every model is built with fixed seeds (tf.keras.utils.set_random_seed) and exported with
tf2onnx.convert.from_keras at opset 13, input named "input". For each NAME it writes

    NAME.onnx             the export
    NAME_input.npy        a batch of 4 inputs (float32 or int32 ids)
    NAME_ort_output.npy   ONNX Runtime's output on it (CPU provider, graph optimisations off)

and for the training cases (the model exported at its INITIAL weights, so that trainer and Keras
start from the same point)

    NAME_x.npy, NAME_y.npy  the training set (256 samples; float inputs stored as float16 to keep
                            the files small: Keras trains on exactly those values as float32, and
                            our loader widens float16 .npy inputs to the model's float32)
    NAME_keras.json         Keras's own run: model.fit(x, y, batch_size=32, epochs=5,
                            shuffle=False) with Adam(1e-3; the LSTM 1e-2, whose loss barely
                            moves at 1e-3) and sparse_categorical_crossentropy
                            (from_logits=False, the model ends in Softmax); "loss" holds
                            history["loss"], the mean of each epoch's batch losses as they were
                            computed during that epoch (256 = 8 full batches, no partial one).

The cases, and what each is there to exercise (the script checks that the export really has it):

  cnn          A MobileNet-style CNN (Conv, BatchNorm, ReLU6, DepthwiseConv, 1x1 Conv, global
               pooling, Dense + softmax) on 8x8x3 NHWC inputs, exported KEEPING BatchNormalization
               (tf2onnx's remove_back_to_back optimizer dropped, README "BatchNorm folded by the
               exporter"). At init tf2onnx's merge_duplication writes all BN scales and running
               variances (ones) as ONE initializer and all offsets, running means and zero biases
               as another; ReLU6's bounds are one-element Clip initializers; the head is Softmax.
  cnn_folded   The same CNN after Keras's 5 epochs, default export: tf2onnx folds every
               BatchNormalization into the Conv before it (non-trivial statistics folded in).
  transformer  A transformer block on [8, 16] tokens: MultiHeadAttention (2 heads), residual +
               LayerNormalization (tf2onnx: BatchNormalization over [1, rows, D] whose mean and
               var are ReduceMeans, i.e. computed statistics), Dense with GELU (Erf; its 0.5 and
               1/sqrt(2) are one-element initializers), LayerNormalization, average pooling,
               Dense + softmax.
  lstm         Embedding(50, 8) on int32 ids [12] -> LSTM(16) (an ONNX LSTM node) -> Dense +
               softmax: a token classifier.
"""
import json
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np
import onnx
import onnxruntime as ort
import tensorflow as tf
import tf2onnx
import tf2onnx.optimizer
from onnx import numpy_helper
from tensorflow import keras

L = keras.layers
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "keras")
N_TRAIN, EPOCHS, BATCH, LR = 256, 5, 32, 1e-3


def cnn_model():
    inp = L.Input((8, 8, 3))
    x = L.Conv2D(16, 3, padding="same")(inp); x = L.BatchNormalization()(x); x = L.ReLU(6.0)(x)
    x = L.DepthwiseConv2D(3, padding="same")(x); x = L.BatchNormalization()(x); x = L.ReLU(6.0)(x)
    x = L.Conv2D(32, 1)(x); x = L.BatchNormalization()(x); x = L.ReLU(6.0)(x)
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(inp, L.Dense(4, activation="softmax")(x))


def cnn_data(n, seed):
    r = np.random.RandomState(seed)
    x = r.randn(n, 8, 8, 3).astype(np.float16).astype(np.float32)
    x[:, :, :, 1] = np.abs(x[:, :, :, 1])
    y = np.argmax(np.stack([x[..., 0].mean((1, 2)) * 4, x[..., 1].std((1, 2)) * 4 - 2.4,
                            x[..., 2].mean((1, 2)) * 4, -x[..., 0].mean((1, 2)) * 4 + 0.1], 1), 1)
    return x, y.astype(np.int64)


def transformer_model():
    inp = L.Input((8, 16))
    x = L.MultiHeadAttention(num_heads=2, key_dim=8)(inp, inp)
    x = L.LayerNormalization()(inp + x)
    f = L.Dense(32, activation="gelu")(x)
    f = L.Dense(16)(f)
    x = L.LayerNormalization()(x + f)
    x = L.GlobalAveragePooling1D()(x)
    return keras.Model(inp, L.Dense(4, activation="softmax")(x))


def transformer_data(n, seed):
    r = np.random.RandomState(seed)
    x = r.randn(n, 8, 16).astype(np.float16).astype(np.float32)
    y = np.argmax(x[:, :, :4].mean(1) + 0.5 * x[:, 0, :4], axis=1)
    return x, y.astype(np.int64)


def lstm_model():
    inp = L.Input((12,), dtype="int32")
    x = L.Embedding(50, 8)(inp)
    x = L.LSTM(16)(x)
    return keras.Model(inp, L.Dense(3, activation="softmax")(x))


def lstm_data(n, seed):
    r = np.random.RandomState(seed)
    x = r.randint(0, 50, size=(n, 12)).astype(np.int32)
    counts = np.stack([(x < 16).sum(1), ((x >= 16) & (x < 33)).sum(1) + 0.5, (x >= 33).sum(1)], 1)
    return x, np.argmax(counts, 1).astype(np.int64)


def export(model, name, x_batch, keep_bn=False):
    path = os.path.join(OUT, name + ".onnx")
    dtype = tf.int32 if x_batch.dtype == np.int32 else tf.float32
    spec = (tf.TensorSpec((None,) + x_batch.shape[1:], dtype, name="input"),)
    opts = None
    if keep_bn:
        opts = {k: v for k, v in tf2onnx.optimizer._optimizers.items() if k != "remove_back_to_back"}
    tf2onnx.convert.from_keras(model, input_signature=spec, opset=13, output_path=path,
                               optimizers=opts)
    np.save(os.path.join(OUT, name + "_input.npy"), x_batch)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    y = sess.run(None, {"input": x_batch})[0]
    np.save(os.path.join(OUT, name + "_ort_output.npy"), y)
    k = model.predict(x_batch, verbose=0)
    print(f"{name}: ORT vs Keras max abs {np.abs(y - k).max():.3g}", flush=True)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    return m


def fit(model, name, x, y, lr=LR):
    np.save(os.path.join(OUT, name + "_x.npy"), x.astype(np.float16) if x.dtype == np.float32 else x)
    np.save(os.path.join(OUT, name + "_y.npy"), y)
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    h = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    rec = {"loss": [float(v) for v in h.history["loss"]],
           "accuracy": [float(v) for v in h.history["accuracy"]],
           "optimizer": "adam", "lr": lr, "batch": BATCH, "epochs": EPOCHS, "shuffle": False,
           "samples": int(len(x)), "loss_fn": "sparse_categorical_crossentropy",
           "tensorflow": tf.__version__, "tf2onnx": tf2onnx.__version__}
    with open(os.path.join(OUT, name + "_keras.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(f"{name}: keras loss " + " ".join("%.4f" % v for v in rec["loss"]), flush=True)


# --- checks that each export has the pattern its tests are about ---------------------------------

def inits(m):
    return {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}


def check_cnn(m):
    init = inits(m)
    bns = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
    assert len(bns) == 3, "KEEPBN export lost its BatchNormalization nodes"
    assert any(n.input[1] == n.input[4] for n in bns), "no BN reads one initializer as scale and var"
    assert any(n.input[2] == n.input[3] for n in bns), "no BN reads one initializer as bias and mean"
    clips = [n for n in m.graph.node if n.op_type == "Clip"]
    assert clips and all(i in init and init[i].size == 1 for n in clips for i in n.input[1:]), \
        "ReLU6 bounds are not one-element initializers"
    assert m.graph.node[-1].op_type == "Softmax", "the head is not Softmax"


def check_transformer(m):
    init = inits(m)
    bns = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
    assert bns and all(n.input[3] not in init and n.input[4] not in init for n in bns), \
        "LayerNormalization is not a BatchNormalization with computed statistics"
    assert any(n.op_type == "Erf" for n in m.graph.node), "no GELU (Erf)"
    scalars = [k for k, v in init.items() if v.size == 1 and v.dtype == np.float32]
    assert any(abs(float(init[k].reshape(())) - 0.5) < 1e-7 for k in scalars), "GELU's 0.5 is not an initializer"
    assert m.graph.node[-1].op_type == "Softmax", "the head is not Softmax"


def check_lstm(m):
    assert any(n.op_type == "LSTM" for n in m.graph.node), "no ONNX LSTM node"
    assert m.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT32
    assert m.graph.node[-1].op_type == "Softmax", "the head is not Softmax"


def check_folded(m):
    ops = {n.op_type for n in m.graph.node}
    assert "Conv" in ops and "BatchNormalization" not in ops, "BatchNorm was not folded"


def main():
    os.makedirs(OUT, exist_ok=True)
    tf.config.experimental.enable_op_determinism()

    tf.keras.utils.set_random_seed(1)
    cnn = cnn_model()
    x, y = cnn_data(N_TRAIN, 1)
    check_cnn(export(cnn, "cnn", cnn_data(4, 7)[0], keep_bn=True))
    fit(cnn, "cnn", x, y)
    check_folded(export(cnn, "cnn_folded", cnn_data(4, 8)[0]))

    tf.keras.utils.set_random_seed(2)
    tr = transformer_model()
    x, y = transformer_data(N_TRAIN, 2)
    check_transformer(export(tr, "transformer", transformer_data(4, 9)[0]))
    fit(tr, "transformer", x, y)

    tf.keras.utils.set_random_seed(3)
    ls = lstm_model()
    x, y = lstm_data(N_TRAIN, 3)
    check_lstm(export(ls, "lstm", lstm_data(4, 10)[0]))
    fit(ls, "lstm", x, y, lr=1e-2)  # at 1e-3 its loss moves by 0.02 in 5 epochs

    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {OUT}: {total / 1024:.0f} KB")


if __name__ == "__main__":
    main()
