"""Keras fit against onnx-amp-train on the tf2onnx export of the same model: same starting
weights, same data, Adam 1e-3, batch 32; prints both per-epoch training losses.

Needs TensorFlow 2.15 + tf2onnx (not in CI; see scripts/make_keras_fixtures.py for a venv):
    python scripts/compare_keras_training.py transformer|cnn|binary [EPOCHS]
binary: a Dense(1, sigmoid) classifier, Keras's binary_crossentropy against our
--loss bce-with-logits (lr 1e-2, 512 samples, no shuffle on either side).
KEEPBN=1 keeps BatchNormalization in the export (drops tf2onnx's remove_back_to_back pass).
OAT_BIN (default build/onnx-amp-train) is the binary; files go to $OAT_WORK (default /tmp/kv).
The README's "TensorFlow/Keras exports" numbers are this script's output (cnn with KEEPBN=1).
"""
import os, sys, subprocess, json, numpy as np
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf, tf2onnx
from tensorflow import keras
L = keras.layers
D = os.environ.get("OAT_WORK", "/tmp/kv"); os.makedirs(D, exist_ok=True)
BIN = os.environ.get("OAT_BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "onnx-amp-train"))
tf.random.set_seed(1); np.random.seed(1)
which = sys.argv[1]
if which == "transformer":
    inp = L.Input((16, 32))
    x = L.MultiHeadAttention(num_heads=4, key_dim=8)(inp, inp)
    x = L.LayerNormalization()(inp + x)
    f = L.Dense(64, activation="gelu")(x); f = L.Dense(32)(f)
    x = L.LayerNormalization()(x + f)
    x = L.GlobalAveragePooling1D()(x)
    m = keras.Model(inp, L.Dense(5, activation="softmax")(x))
    def data(n, seed):
        r = np.random.RandomState(seed); x = r.randn(n, 16, 32).astype(np.float32)
        return x, np.argmax(x[:, :, :5].mean(1) + 0.5 * x[:, 0, :5], axis=1).astype(np.int64)
elif which == "binary":
    tf.random.set_seed(3)
    m = keras.Sequential([L.Input((10,)), L.Dense(16, activation="relu", bias_initializer="random_normal"),
                          L.Dense(1, activation="sigmoid", bias_initializer="random_normal")])
    def data(n, seed):
        r = np.random.RandomState(seed - 1); x = r.randn(n, 10).astype(np.float32)
        return x, (x[:, 0] + x[:, 1] > 0).astype(np.float32)[:, None]
else:  # small mobilenet-like CNN with BN, depthwise, softmax head
    inp = L.Input((16, 16, 3))
    x = L.Conv2D(16, 3, padding="same")(inp); x = L.BatchNormalization()(x); x = L.ReLU(6.0)(x)
    x = L.DepthwiseConv2D(3, padding="same")(x); x = L.BatchNormalization()(x); x = L.ReLU(6.0)(x)
    x = L.Conv2D(32, 1)(x); x = L.BatchNormalization()(x); x = L.ReLU(6.0)(x)
    x = L.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, L.Dense(4, activation="softmax")(x))
    def data(n, seed):
        r = np.random.RandomState(seed); x = r.randn(n, 16, 16, 3).astype(np.float32)
        x[:, :, :, 1] = np.abs(x[:, :, :, 1])
        y = np.argmax(np.stack([x[..., 0].mean((1, 2)) * 4, x[..., 1].std((1, 2)) * 4 - 2.4,
                                x[..., 2].mean((1, 2)) * 4, -x[..., 0].mean((1, 2)) * 4 + 0.1], 1), 1)
        return x, y.astype(np.int64)
binary = which == "binary"
xtr, ytr = data(512 if binary else 2048, 1); xva, yva = data(512, 2)
for n, a in (("xtr", xtr), ("ytr", ytr), ("xva", xva), ("yva", yva)): np.save(f"{D}/{which}_{n}.npy", a)
spec = (tf.TensorSpec((None,) + xtr.shape[1:], tf.float32, name="input"),)
onnx_path = f"{D}/{which}.onnx"
import tf2onnx.optimizer
opts = {k: v for k, v in tf2onnx.optimizer._optimizers.items() if k != "remove_back_to_back"} if os.environ.get("KEEPBN") else None
tf2onnx.convert.from_keras(m, input_signature=spec, opset=13, output_path=onnx_path, optimizers=opts)
lr = 1e-2 if binary else 1e-3
m.compile(optimizer=keras.optimizers.Adam(lr, epsilon=1e-8) if binary else keras.optimizers.Adam(lr),
          loss="binary_crossentropy" if binary else "sparse_categorical_crossentropy", metrics=["accuracy"])
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
h = m.fit(xtr, ytr, batch_size=32, epochs=epochs, verbose=0, validation_data=(xva, yva), shuffle=not binary)
print("keras: train loss", ["%.4f" % v for v in h.history["loss"]], "val acc", ["%.3f" % v for v in h.history["val_accuracy"]])
for prec in ("fp32", "fp16"):
    extra = ["--loss", "bce-with-logits", "--no-shuffle"] if binary else []
    r = subprocess.run([BIN, onnx_path, "--train-x", f"{D}/{which}_xtr.npy", "--train-y", f"{D}/{which}_ytr.npy",
                        "--val-x", f"{D}/{which}_xva.npy", "--val-y", f"{D}/{which}_yva.npy", "--epochs", str(epochs), "--batch", "32",
                        "--lr", str(lr), "--optimizer", "adam", "--precision", prec, "-o", f"{D}/{which}_{prec}.trained.onnx"] + extra,
                       capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith("epoch") and "val" in l]
    print(f"ours {prec} rc={r.returncode}:", " | ".join(l.split(": ", 1)[1] for l in lines), r.stderr[-300:])
