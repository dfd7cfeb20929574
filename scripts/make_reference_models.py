#!/usr/bin/env python3
"""Real models and ONNX Runtime reference outputs, for the agreement tests and the benchmark.

    make_reference_models.py OUT [--set test|bench] [--cases a,b,...] [--force]

writes one folder per case in ONNX's backend-test layout:

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_0/input_0.pb      (TensorProto, named after the graph input)
    OUT/<case>/test_data_set_0/output_0.pb     (ONNX Runtime's output on that input)
    OUT/MANIFEST.json                          (cases, versions, ORT-vs-PyTorch differences)

It needs two Python worlds, and finds them itself:
  * export    - PyTorch + torchvision (Debian's python3-torch / python3-torchvision for
                /usr/bin/python3). Models are exported with torch.onnx in eval mode from
                deterministic weights (torch.manual_seed); BatchNorm/LayerNorm statistics and
                affine parameters are randomised too, so normalisation is not an identity.
  * reference - onnxruntime + onnx >= 1.13 + numpy (pip). ORT (CPU provider, graph optimisations
                off so it computes the graph as written) produces the reference outputs, and
                onnx.version_converter writes the opset-18 variants (Reduce* axes and Split's
                split become inputs), newer than the opset 17 that libonnx 1.12 knows.
Override the interpreters with OAT_TORCH_PYTHON / OAT_ORT_PYTHON.

Batch sizes. Every model is exported with a FIXED batch (1) and the reference is computed on a
DIFFERENT batch (3), so the test also proves that our runtime takes shapes from the tensors, not
from the declared types. The reference comes from a second, dynamic-batch export run by ORT. The
CNNs whose graph does not depend on the batch (Flatten, no batch-sized Reshape) ship the
fixed-batch file as model.onnx; that property is checked here by running ORT on the fixed file
with its batch dimension relaxed. Models whose exported graph bakes the batch into Reshape
constants (ShuffleNet's channel shuffle, the transformer's attention heads) ship the
dynamic-batch file instead, which exercises the Shape/Gather/Concat->Reshape paths.

Exit status: 0 on success, 2 when a required Python package is missing (the message names it).
"""

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys

SCRIPT = os.path.abspath(__file__)

# ---- cases -----------------------------------------------------------------------------------
# kind: "torchvision" (arch), "vit", "convnext", "densenet", "swin", "recurrent", "einsum",
# "script" (torch.jit.script-ed, for control flow) or "transformer"; shape: one sample's input
# shape;
# export_batch: the fixed batch of the exported file; ref_batch: the batch of the reference data;
# batch_agnostic: the fixed-batch graph runs any batch (model.onnx is the fixed-batch file);
# keep_batchnorm: export BatchNormalization nodes (TrainingMode.PRESERVE on an eval-mode model)
# instead of letting torch.onnx fold them into the preceding Conv, as it does by default;
# derived_from/opset: derived by onnx.version_converter from another case's model.
TRANSFORMER_SMALL = dict(kind="transformer", d_model=128, nhead=4, layers=3, ff=256, classes=10,
                         shape=(16, 128))
# Recurrent classifiers: torch.nn.LSTM / GRU / RNN (batch_first) on [batch, seq, input], the
# head on the last step's output. torch.onnx writes ONNX LSTM/GRU/RNN nodes (GRU with
# linear_before_reset=1; RNN's relu as activations=["Relu"]) with the sequence length fixed.
RECURRENT = dict(kind="recurrent", input=16, hidden=24, classes=10, shape=(12, 16),
                 batch_agnostic=False)
TRANSFORMER_BENCH = dict(kind="transformer", d_model=256, nhead=4, layers=4, ff=1024, classes=10,
                         shape=(128, 256))

CASES = {
    "test": {
        "resnet18": dict(kind="torchvision", arch="resnet18", shape=(3, 64, 64),
                         batch_agnostic=True),
        "mobilenet_v2": dict(kind="torchvision", arch="mobilenet_v2", shape=(3, 64, 64),
                             batch_agnostic=True, keep_batchnorm=True),
        "shufflenet_v2_x0_5": dict(kind="torchvision", arch="shufflenet_v2_x0_5",
                                   shape=(3, 64, 64), batch_agnostic=False),
        "squeezenet1_1": dict(kind="torchvision", arch="squeezenet1_1", shape=(3, 64, 64),
                              batch_agnostic=True),
        "efficientnet_b0": dict(kind="torchvision", arch="efficientnet_b0", shape=(3, 64, 64),
                                batch_agnostic=True, keep_batchnorm=True),
        # Small torchvision transformers and a DenseNet, built from their classes: ViT (class
        # token Concat + Expand, nn.MultiheadAttention), ConvNeXt (permute + LayerNorm, layer
        # scale), DenseNet (BatchNormalization before each Conv, so torch keeps it).
        "vit_tiny_32": dict(kind="vit", shape=(3, 32, 32), batch_agnostic=False),
        "convnext_tiny_64": dict(kind="convnext", shape=(3, 64, 64), batch_agnostic=True),
        # torchvision's default layer scale, 1e-6: below float16's smallest normal (6.1e-5), so
        # the fp16 painting keeps the layer-scale Mul nodes in fp32 (convert/paint.cc).
        "convnext_tiny_64_ls1e-6": dict(kind="convnext", shape=(3, 64, 64), batch_agnostic=True,
                                        layer_scale=1e-6),
        "densenet_small_64": dict(kind="densenet", shape=(3, 64, 64), batch_agnostic=True),
        "transformer_encoder": dict(TRANSFORMER_SMALL, batch_agnostic=False),
        # torch exports LayerNorm as one LayerNormalization node from opset 17 on.
        "transformer_encoder_opset17": dict(TRANSFORMER_SMALL, batch_agnostic=False, opset=17),
        "transformer_encoder_opset18": dict(derived_from="transformer_encoder", opset=18),
        "lstm_bidirectional_2layer": dict(RECURRENT, cell="LSTM", layers=2, bidirectional=True),
        "gru_opset14": dict(RECURRENT, cell="GRU", layers=1, bidirectional=False, opset=14),
        "rnn_relu_bidirectional_2layer": dict(RECURRENT, cell="RNN", layers=2, bidirectional=True,
                                              nonlinearity="relu"),
        # torch.einsum: four Einsum nodes (a composite op, runtime/composite/einsum.cc).
        "einsum_mixer": dict(kind="einsum", shape=(10, 16), hidden=24, classes=5,
                             batch_agnostic=False),
        # torch.jit.script: Loop (data-dependent trip count; a while loop) and If nodes whose
        # subgraphs read the outer scope (runtime/cpu/kernels/control_flow.cc).
        "script_loop_if": dict(kind="script", shape=(8,), classes=5, batch_agnostic=False),
        # Swin: the shifted windows' attention mask is built from zeros((H, W)) by slice
        # assignment (ScatterND, a composite op) with H, W traced through Shape -> Gather ->
        # ConstantOfShape; it runs once the shape values are folded (runtime/shape_fold.h).
        "swin_small_64": dict(kind="swin", shape=(3, 64, 64), batch_agnostic=False),
        "resnet18_opset18": dict(derived_from="resnet18", opset=18),
        "shufflenet_v2_x0_5_opset18": dict(derived_from="shufflenet_v2_x0_5", opset=18),
    },
    # The benchmark: what bench/infer_vs_ort.py times. Batch 8 both ways, fixed-batch files.
    "bench": {
        "resnet18_224": dict(kind="torchvision", arch="resnet18", shape=(3, 224, 224),
                             export_batch=8, ref_batch=8, batch_agnostic=True),
        "transformer_encoder_bench": dict(TRANSFORMER_BENCH, export_batch=8, ref_batch=8,
                                          batch_agnostic=False),
        # Composite ops at bench size: a 2-layer bidirectional LSTM / GRU (opset 14: PyTorch's
        # GRU has linear_before_reset 1), hidden 256, 64 steps; ours fused by the CPU Executor
        # (runtime/cpu/kernels/rnn_sequence.cc), ONNX Runtime's fused kernels on the other side.
        "lstm_bench": dict(RECURRENT, input=128, hidden=256, shape=(64, 128), cell="LSTM",
                           layers=2, bidirectional=True, export_batch=8, ref_batch=8),
        "gru_bench": dict(RECURRENT, input=128, hidden=256, shape=(64, 128), cell="GRU",
                          layers=2, bidirectional=True, export_batch=8, ref_batch=8, opset=14),
    },
}
DEFAULTS = dict(opset=13, export_batch=1, ref_batch=3, seed=0)


def case_config(set_name, name):
    cfg = dict(DEFAULTS)
    cfg.update(CASES[set_name][name])
    if "derived_from" in cfg:
        base = dict(DEFAULTS)
        base.update(CASES[set_name][cfg["derived_from"]])
        base.update(derived_from=cfg["derived_from"], opset=cfg["opset"])
        cfg = base
    return cfg


def work_dir(out):
    return os.path.join(out, "_work")


# ---- export (PyTorch interpreter) -----------------------------------------------------------
def build_model(cfg):
    import torch
    import torch.nn as nn

    torch.manual_seed(cfg["seed"])
    if cfg["kind"] == "torchvision":
        import torchvision

        model = getattr(torchvision.models, cfg["arch"])(weights=None)
    elif cfg["kind"] == "swin":
        from torchvision.models.swin_transformer import SwinTransformer

        model = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                                window_size=[4, 4], num_classes=10)
    elif cfg["kind"] == "recurrent":

        class Recurrent(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                kw = dict(num_layers=cfg["layers"], bidirectional=cfg["bidirectional"],
                          batch_first=True)
                if "nonlinearity" in cfg:
                    kw["nonlinearity"] = cfg["nonlinearity"]
                self.rnn = getattr(nn, cfg["cell"])(cfg["input"], cfg["hidden"], **kw)
                dirs = 2 if cfg["bidirectional"] else 1
                self.head = nn.Linear(dirs * cfg["hidden"], cfg["classes"])

            def forward(self, x):
                y, _ = self.rnn(x)
                return self.head(y[:, -1])

        model = Recurrent(cfg)
    elif cfg["kind"] == "einsum":

        class EinsumMixer(nn.Module):
            """Token mixing written with torch.einsum (exported as ONNX Einsum nodes)."""

            def __init__(self, d, e, classes):
                super().__init__()
                self.w = nn.Parameter(torch.randn(d, e) / d ** 0.5)
                self.head = nn.Linear(e, classes)

            def forward(self, x):
                y = torch.einsum("bsd,de->bse", x, self.w)
                a = torch.softmax(torch.einsum("bse,bte->bst", y, y) / y.shape[-1] ** 0.5, -1)
                z = torch.einsum("bst,bte->bse", a, y)
                return self.head(torch.einsum("bse->be", z) / z.shape[1])

        model = EinsumMixer(cfg["shape"][1], cfg["hidden"], cfg["classes"])
    elif cfg["kind"] == "script":

        class ControlFlow(nn.Module):
            """Python control flow kept by torch.jit.script: a for loop whose trip count is
            computed from the input's values (ONNX Loop with a data-dependent M; its body reads
            fc's weight from the outer scope), a while loop (Loop with a cond, an If in its
            body), and an if on a tensor value (If whose branches read the outer scope)."""

            def __init__(self, d, classes):
                super().__init__()
                self.fc = nn.Linear(d, d)
                self.head = nn.Linear(d, classes)

            def forward(self, x):
                h = x
                for _ in range(int((x.abs().mean() * 4.0).long()) + 1):
                    h = torch.tanh(self.fc(h)) + 0.5 * h
                k = 0
                while bool(h.abs().max() > 0.5) and k < 10:
                    h = h * 0.5
                    k += 1
                if bool(h.sum() > 0):
                    h = h * 2.0 + float(k)
                else:
                    h = -h - 1.0
                return self.head(h)

        model = ControlFlow(cfg["shape"][0], cfg["classes"])
    elif cfg["kind"] == "vit":
        from torchvision.models import VisionTransformer

        model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                  hidden_dim=64, mlp_dim=128, num_classes=10)
        nn.init.normal_(model.heads.head.weight, std=0.2)  # torchvision starts it at zero
    elif cfg["kind"] == "convnext":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt

        # layer_scale 0.1 by default, not torchvision's 1e-6, so the blocks change the output
        # measurably.
        model = ConvNeXt([CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)],
                         layer_scale=cfg.get("layer_scale", 0.1), num_classes=10)
    elif cfg["kind"] == "densenet":
        from torchvision.models import DenseNet

        model = DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2,
                         num_classes=10)
    else:

        class Encoder(nn.Module):
            def __init__(self, d, h, layers, ff, classes):
                super().__init__()
                layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.1, batch_first=True)
                self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
                self.head = nn.Linear(d, classes)

            def forward(self, x):
                return self.head(self.enc(x))

        model = Encoder(cfg["d_model"], cfg["nhead"], cfg["layers"], cfg["ff"], cfg["classes"])
    # Non-trivial normalisation: running stats and affine parameters away from 0/1.
    gen = torch.Generator().manual_seed(cfg["seed"] + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
    # torch.onnx exports a ScriptModule's loops and ifs as ONNX Loop / If.
    return torch.jit.script(model.eval()) if cfg["kind"] == "script" else model.eval()


def export_case(out, name, cfg):
    import numpy as np
    import torch

    wd = work_dir(out)
    model = build_model(cfg)
    shape = tuple(cfg["shape"])
    gen = torch.Generator().manual_seed(cfg["seed"] + 2)
    x_export = torch.randn((cfg["export_batch"],) + shape, generator=gen)
    x_ref = torch.randn((cfg["ref_batch"],) + shape, generator=gen)
    kw = dict(opset_version=cfg["opset"], input_names=["input"], output_names=["output"],
              do_constant_folding=True)
    if cfg.get("keep_batchnorm"):
        kw["training"] = torch.onnx.TrainingMode.PRESERVE
    # Not under torch.no_grad(): there nn.TransformerEncoderLayer takes its fused fast path
    # (aten::_transformer_encoder_layer_fwd), which torch.onnx cannot export.
    torch.onnx.export(model, x_export, os.path.join(wd, name + "_fixed.onnx"), **kw)
    torch.onnx.export(model, x_export, os.path.join(wd, name + "_dynamic.onnx"),
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kw)
    y_ref = model(x_ref).detach()
    np.save(os.path.join(wd, name + "_input.npy"), x_ref.numpy())
    np.save(os.path.join(wd, name + "_torch.npy"), y_ref.numpy())


# ---- reference (ONNX Runtime interpreter) ---------------------------------------------------
def ort_run(path, x):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def relax_batch(src, dst):
    """Copies a model with the first dimension of every graph input/output made symbolic."""
    import onnx

    m = onnx.load(src)
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) > 0:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]  # stale batch-1 shapes from the exporter
    onnx.save(m, dst)


def max_diff(a, b):
    import numpy as np

    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    scale = max(1.0, float(np.max(np.abs(b))))
    return float(d.max()), float(d.max() / scale)


def reference_case(out, name, cfg):
    import numpy as np
    import onnx
    from onnx import numpy_helper, version_converter

    wd = work_dir(out)
    src = cfg.get("derived_from", name)
    x = np.load(os.path.join(wd, src + "_input.npy"))
    y_torch = np.load(os.path.join(wd, src + "_torch.npy"))
    fixed = os.path.join(wd, src + "_fixed.onnx")
    dynamic = os.path.join(wd, src + "_dynamic.onnx")
    info = {}

    if cfg["export_batch"] == cfg["ref_batch"]:
        chosen = fixed
        y = ort_run(fixed, x)
    else:
        y = ort_run(dynamic, x)
        if cfg["batch_agnostic"]:
            relaxed = os.path.join(wd, src + "_relaxed.onnx")
            relax_batch(fixed, relaxed)
            y_relaxed = ort_run(relaxed, x)
            d = max_diff(y_relaxed, y)
            if d[1] > 1e-5:
                raise SystemExit(f"{name}: the fixed-batch export does not run batch "
                                 f"{cfg['ref_batch']} like the dynamic one (max diff {d}); "
                                 "set batch_agnostic=False for it")
            chosen = fixed
        else:
            chosen = dynamic
    info["model_file"] = "fixed batch %d" % cfg["export_batch"] if chosen == fixed else \
        "dynamic batch"
    info["ort_vs_torch"] = dict(zip(("max_abs", "max_rel"), max_diff(y, y_torch)))
    if info["ort_vs_torch"]["max_rel"] > 1e-3:
        raise SystemExit(f"{name}: ONNX Runtime disagrees with PyTorch ({info['ort_vs_torch']}); "
                         "the export is wrong, not our runtime")

    model = onnx.load(chosen)
    if "derived_from" in cfg:
        model = version_converter.convert_version(model, cfg["opset"])
        onnx.checker.check_model(model)
    case_dir = os.path.join(out, name)
    data_dir = os.path.join(case_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    if "derived_from" in cfg:  # the converted model must compute the same thing
        check = os.path.join(case_dir, "model.onnx")
        if chosen == fixed and cfg["export_batch"] != cfg["ref_batch"]:
            relax_batch(check, os.path.join(wd, name + "_relaxed.onnx"))
            check = os.path.join(wd, name + "_relaxed.onnx")
        y_conv = ort_run(check, x)
        info["converted_vs_original"] = dict(zip(("max_abs", "max_rel"), max_diff(y_conv, y)))
    in_name = model.graph.input[0].name
    out_name = model.graph.output[0].name
    with open(os.path.join(data_dir, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, in_name).SerializeToString())
    with open(os.path.join(data_dir, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, out_name).SerializeToString())
    info.update(opset=cfg["opset"], input_shape=list(x.shape), output_shape=list(y.shape),
                nodes=len(model.graph.node))
    return info


# ---- driver ----------------------------------------------------------------------------------
INSTALL_HINT = ("CI installs them with scripts/setup.sh: apt-get install python3-torch "
                "python3-torchvision python3-numpy; pip install onnxruntime onnx numpy")


def find_python(env_var, candidates, check, what):
    def ok(py):
        exe = shutil.which(py)
        return exe and subprocess.run([exe, "-c", check], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL).returncode == 0

    if os.environ.get(env_var):
        py = os.environ[env_var]
        if ok(py):
            return shutil.which(py)
        sys.stderr.write(f"error: {env_var}={py} cannot import {what}\n")
        sys.exit(2)
    for py in candidates:
        if ok(py):
            return shutil.which(py)
    sys.stderr.write(f"error: no Python interpreter with {what} (tried {', '.join(candidates)}; "
                     f"set {env_var}). {INSTALL_HINT}\n")
    sys.exit(2)


def fingerprint():
    with open(SCRIPT, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("phase", nargs="?", choices=["all", "_export", "_reference"], default="all",
                    help=argparse.SUPPRESS)
    ap.add_argument("out", help="output folder")
    ap.add_argument("--set", default="test", choices=sorted(CASES))
    ap.add_argument("--cases", default="", help="comma-separated subset of the set's cases")
    ap.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    names = [c for c in args.cases.split(",") if c] or list(CASES[args.set])
    for n in names:
        if n not in CASES[args.set]:
            ap.error(f"unknown case {n!r} in set {args.set!r}: {', '.join(CASES[args.set])}")

    if args.phase == "_export":
        for n in names:
            cfg = case_config(args.set, n)
            if "derived_from" not in cfg:
                print(f"export {n}", flush=True)
                export_case(out, n, cfg)
        return
    if args.phase == "_reference":
        infos = {}
        for n in names:
            infos[n] = reference_case(out, n, case_config(args.set, n))
            print(f"reference {n}: {json.dumps(infos[n])}", flush=True)
        shutil.rmtree(work_dir(out))  # intermediate exports: hundreds of MB
        import onnx
        import onnxruntime

        with open(os.path.join(out, "MANIFEST.json"), "w") as f:
            json.dump(dict(fingerprint=fingerprint(), set=args.set, cases=infos,
                           onnxruntime=onnxruntime.__version__, onnx=onnx.__version__), f,
                      indent=1)
        return

    # Several test binaries (ctest -j) may ask for the folder at once: one builds it, the others
    # wait here and then find it up to date.
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    lock = open(out + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    manifest = os.path.join(out, "MANIFEST.json")
    if not args.force and os.path.exists(manifest):
        with open(manifest) as f:
            m = json.load(f)
        if m.get("fingerprint") == fingerprint() and m.get("set") == args.set and \
                all(n in m.get("cases", {}) for n in names):
            print(f"{out}: up to date")
            return
    torch_py = find_python("OAT_TORCH_PYTHON", [sys.executable, "/usr/bin/python3", "python3"],
                           "import torch, torchvision, numpy",
                           "torch + torchvision + numpy")
    ort_py = find_python("OAT_ORT_PYTHON", [sys.executable, "python3", "/usr/bin/python3"],
                         "import onnxruntime, numpy, onnx, onnx.version_converter; "
                         "assert onnx.defs.onnx_opset_version() >= 18",
                         "onnxruntime + numpy + onnx>=1.13")
    if os.path.exists(manifest):
        os.remove(manifest)
    os.makedirs(work_dir(out), exist_ok=True)
    common = [out, "--set", args.set, "--cases", ",".join(names)]
    for py, phase in ((torch_py, "_export"), (ort_py, "_reference")):
        r = subprocess.run([py, SCRIPT, phase] + common)
        if r.returncode != 0:
            sys.stderr.write(f"error: {phase[1:]} step failed ({py}, exit {r.returncode})\n")
            sys.exit(r.returncode if r.returncode == 2 else 1)
    print(f"{out}: {len(names)} cases written")


if __name__ == "__main__":
    main()
