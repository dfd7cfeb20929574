#!/usr/bin/env python3
"""torchvision's ResNet-18 exported by torch.onnx, for `onnx-amp-train check` (issue #5 item 6).

    python3 scripts/export_torchvision.py OUT_DIR [--size 224] [--arch resnet18]

writes into OUT_DIR:
    <arch>_eval.onnx    eval-mode export, opset 13, BatchNorm folded into Conv by torch.onnx
                        (what users get from torch.onnx.export(model, x, f) by default)
    <arch>_train.onnx   training-mode export (TrainingMode.TRAINING), opset 15: BatchNormalization
                        kept with training_mode=1, so `check` compares batch statistics too
Both have a dynamic batch ("batch") on input "input" and output "logits", random weights (seed 0;
BatchNorm statistics and affine parameters randomised so that folding is not an identity), 1000
classes, input 3 x SIZE x SIZE.

torch >= 2.9 defaults to the dynamo exporter, which writes opset >= 18 (newer than the opset 17
that Debian's libonnx 1.12 reads); this script asks for the TorchScript exporter (dynamo=False)
where torch has the argument. Exit status 2 (and one line saying so) when torch or torchvision is
missing, 1 when an export fails.
"""

import argparse
import copy
import inspect
import os
import sys
import warnings


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--arch", default="resnet18")
    a = p.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"export_torchvision: {e.name} is not installed for {sys.executable}; "
              "no torchvision model to check", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.arch)(num_classes=1000)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, a.size, a.size)
    kw = dict(export_params=True, input_names=["input"], output_names=["logits"],
              dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}", flush=True)
    ok = True
    for tag, opset, extra in (
            ("eval", 13, dict(do_constant_folding=True)),
            ("train", 15, dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False))):
        path = os.path.join(a.out, f"{a.arch}_{tag}.onnx")
        m = copy.deepcopy(model).eval() if tag == "eval" else copy.deepcopy(model).train()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(m, x, path, opset_version=opset, **kw, **extra)
            print(f"wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB, opset {opset})", flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on with the other export
            ok = False
            print(f"export {tag} failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
