#!/usr/bin/env bash
# The main job at this stage of the project: export a torchvision ResNet-18 with PyTorch, inspect
# it, run it on the CPU reference path with a batch of 8 (the model is exported with batch 1),
# and check the outputs against ONNX Runtime. Training (LeNet-5 on Fashion-MNIST) replaces this
# as the default job with the training issue.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/onnx-amp-train
OUT=build/demo
mkdir -p "$OUT"

if [ ! -f "$OUT/resnet18.onnx" ]; then
  /usr/bin/python3 - "$OUT" <<'PY'
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18().eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), sys.argv[1] + "/resnet18.onnx",
                  opset_version=13, input_names=["input"], output_names=["logits"])
PY
fi
python3 - "$OUT" <<'PY'
import sys, numpy as np
np.save(sys.argv[1] + "/x.npy", np.random.default_rng(0).standard_normal((8, 3, 224, 224), dtype=np.float32))
PY

"$BIN" inspect "$OUT/resnet18.onnx"
"$BIN" infer "$OUT/resnet18.onnx" -i "$OUT/x.npy" -o "$OUT/out" --repeat 3

python3 - "$OUT" <<'PY'
import sys, numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
d = sys.argv[1]
ours = numpy_helper.to_array(onnx.load_tensor(d + "/out/output_0.pb"))
x = np.load(d + "/x.npy")
# ORT checks the declared batch of 1, so run it image by image.
sess = ort.InferenceSession(d + "/resnet18.onnx", providers=["CPUExecutionProvider"])
ref = np.concatenate([sess.run(None, {"input": x[i:i + 1]})[0] for i in range(len(x))])
err = np.abs(ours - ref).max()
print(f"max |ours - onnxruntime| = {err:.3g} (largest |output| {np.abs(ref).max():.3g}); "
      f"top-1 agrees on {int((ours.argmax(1) == ref.argmax(1)).sum())}/{len(x)}")
sys.exit(0 if err <= 1e-3 * max(1.0, np.abs(ref).max()) else 1)
PY
