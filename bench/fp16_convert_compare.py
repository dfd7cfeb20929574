#!/usr/bin/env python3
"""FP16 inference conversion: onnx-amp-train `convert` vs onnxconverter-common, in ONNX Runtime.

    python3 bench/fp16_convert_compare.py [--bin build/onnx-amp-train] [--out bench/out/fp16]
                                          [--cases resnet18,mobilenet_v2,...] [--samples 16]
                                          [--markdown] [--check]

For each model (torchvision ResNet-18, MobileNetV2, EfficientNet-B0 and an nn.TransformerEncoder
classifier, exported by torch.onnx through scripts/make_reference_models.py into OUT/models), both
converters write an FP16 model with float32 inputs and outputs:
  ours    onnx-amp-train convert MODEL -o ours.onnx --keep-io-types
  theirs  onnxconverter_common.float16.convert_float_to_float16(model, keep_io_types=True)
Then ONNX Runtime (CPU provider, graph optimisations off so each graph runs as written) runs the
FP32 model and both FP16 models on the same --samples inputs (N(0,1), seed 0; one sample per run
for the files exported with a fixed batch of 1), and the script prints per model and converter:
  rel    max|y16 - y32| / max|y32| over all outputs and samples (goal: <= 1e-2)
  top-1  samples (rows of class scores) whose argmax equals the FP32 model's
  size   file size of the FP16 model / FP32 model (goal: ~0.5)
  fp32   nodes that compute in float32 (a float32 input or output and no float16 one; Casts
         and integer-only shape arithmetic not counted), and the number of Cast nodes
--check exits 1 unless ours meets the goals (rel <= 1e-2, every top-1 equal, size <= 0.55).

Needs (pyenv python3): onnxruntime, onnx, numpy, onnxconverter-common (scripts/setup.sh); the
export step finds the PyTorch interpreter itself (see scripts/make_reference_models.py).
"""

import argparse
import os
import subprocess
import sys
import warnings

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnxconverter_common import float16
except ImportError as e:
    sys.exit(f"missing Python package '{e.name}': pip install onnxruntime onnx numpy "
             f"onnxconverter-common (scripts/setup.sh installs them)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["resnet18", "mobilenet_v2", "efficientnet_b0", "transformer_encoder"]


def make_models(out, cases):
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "make_reference_models.py"), out,
           "--cases", ",".join(cases)]
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {r.returncode})")


def convert_ours(binary, src, dst):
    cmd = [binary, "convert", src, "-o", dst, "--keep-io-types"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stdout}")
    return r.stdout


def convert_theirs(src, dst):
    model = onnx.load(src)
    with warnings.catch_warnings():  # one "will be truncated" warning per tiny weight
        warnings.simplefilter("ignore")
        fp16 = float16.convert_float_to_float16(model, keep_io_types=True)
    onnx.save(fp16, dst)


def fp32_nodes_in(path):
    """Nodes (Casts excluded) that read or write float32 and no float16, and the Cast count."""
    m = onnx.load(path, load_external_data=False)
    m = onnx.shape_inference.infer_shapes(m)
    types = {}
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        types[v.name] = v.type.tensor_type.elem_type
    for t in m.graph.initializer:
        types[t.name] = t.data_type
    for n in m.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    types[n.output[0]] = a.t.data_type
    f32, f16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
    kept = casts = 0
    for n in m.graph.node:
        if n.op_type == "Cast":
            casts += 1
            continue
        seen = {types.get(v) for v in list(n.input) + list(n.output)}
        kept += f32 in seen and f16 not in seen
    return kept, casts


def input_spec(path):
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    (inp,) = [i for i in m.graph.input if i.name not in inits]
    dims = [d.dim_value if d.HasField("dim_value") else None for d in inp.type.tensor_type.shape.dim]
    return inp.name, dims


def run(path, name, xs, fixed_batch):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    if fixed_batch:
        return np.concatenate([sess.run(None, {name: x[None]})[0] for x in xs])
    return sess.run(None, {name: xs})[0]


def compare(y, ref):
    y = y.astype(np.float64)
    ref = ref.astype(np.float64)
    rel = float(np.abs(y - ref).max() / np.abs(ref).max())
    c = ref.shape[-1]
    top1 = int((y.reshape(-1, c).argmax(-1) == ref.reshape(-1, c).argmax(-1)).sum())
    return rel, top1, ref.reshape(-1, c).shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "onnx-amp-train"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "fp16"))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--check", action="store_true", help="exit 1 unless ours meets the goals")
    a = ap.parse_args()
    cases = a.cases.split(",")
    models = os.path.join(a.out, "models")
    make_models(models, cases)

    rows = []
    failed = []
    for case in cases:
        src = os.path.join(models, case, "model.onnx")
        work = os.path.join(a.out, "runs", case)
        os.makedirs(work, exist_ok=True)
        ours, theirs = os.path.join(work, "ours.onnx"), os.path.join(work, "theirs.onnx")
        name, dims = input_spec(src)
        fixed_batch = dims[0] is not None
        shape = [a.samples] + [d if d is not None else 1 for d in dims[1:]]
        xs = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        ref = run(src, name, xs, fixed_batch)
        size32 = os.path.getsize(src)
        for who, path in (("ours", ours), ("onnxconverter-common", theirs)):
            try:
                if who == "ours":
                    convert_ours(a.bin, src, path)
                else:
                    convert_theirs(src, path)
                rel, top1, n = compare(run(path, name, xs, fixed_batch), ref)
                kept, casts = fp32_nodes_in(path)
                rows.append(dict(model=case, who=who, rel=rel, top1=f"{top1}/{n}",
                                 size=os.path.getsize(path) / size32,
                                 fp32=kept, casts=casts))
                ok = rel <= 1e-2 and top1 == n and rows[-1]["size"] <= 0.55
            except Exception as e:  # a converter or ORT failing is a result, not a crash
                print(f"{case} / {who}: {type(e).__name__}: {str(e).strip()[:400]}")
                rows.append(dict(model=case, who=who, rel=float("nan"), top1="failed", size=0,
                                 fp32="-", casts="-"))
                ok = False
            if who == "ours" and not ok:
                failed.append(case)

    head = ["model", "converter", "rel", "top-1", "size", "fp32 nodes", "casts"]
    fmt = lambda r: [r["model"], r["who"], f"{r['rel']:.2e}", r["top1"], f"{r['size']:.3f}",
                     str(r["fp32"]), str(r["casts"])]
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            print("| " + " | ".join(fmt(r)) + " |")
    else:
        w = [22, 22, 10, 9, 7, 11, 6]
        print("".join(h.ljust(x) for h, x in zip(head, w)))
        for r in rows:
            print("".join(v.ljust(x) for v, x in zip(fmt(r), w)))
    if a.check and failed:
        print(f"goals not met (rel <= 1e-2, same top-1, size <= 0.55) for: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
