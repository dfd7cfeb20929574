#!/usr/bin/env python3
"""PyTorch's own SGD step on torchvision ResNet-18, for the training acceptance test.

    make_train_reference.py OUT [--force]

(run by an interpreter with torch + torchvision + numpy: Debian's /usr/bin/python3 with
python3-torch / python3-torchvision; another python3 re-runs the script under it, or set
OAT_TORCH_PYTHON) writes, for each precision P in f32 and f64 (the same weights and batch; f64
is model.double()):

    OUT/P/model_opset13.onnx       ResNet-18 exported by torch.onnx in training mode, opset 13
                                   (BatchNormalization with 5 outputs, the opset-9..13 training form)
    OUT/P/model_opset15.onnx       the same at opset 15 (BatchNormalization training_mode=1)
    OUT/P/input.npy, labels.npy    the batch: [4, 3, 64, 64], int64 [4]
    OUT/P/before/NAME.npy          every parameter and BatchNorm running statistic before the step
                                   (NAME is the ONNX initializer name; these are the values in the
                                   .onnx files, read back from them)
    OUT/P/grad/NAME.npy            PyTorch's gradient of the mean cross-entropy loss, per parameter
    OUT/P/after/NAME.npy           after torch.optim.SGD(lr=1, momentum=0).step(): parameters and
                                   BatchNorm running_mean / running_var as PyTorch leaves them
    OUT/P/onnx_running_var/NAME.npy  running_var as ONNX's training-mode BatchNormalization
                                   defines it (see below)
    OUT/MANIFEST.json              names, losses, the closest ReLU/MaxPool tie, versions

The step: model.train(), logits = model(x), CrossEntropyLoss(mean), backward, SGD(lr=1,
momentum=0, no weight decay). BatchNorm running statistics are updated by that same forward pass.

Why two precisions. A gradient through ReLU (and MaxPool) depends on the sign of each
pre-activation (and on which window element is largest). A float32 pre-activation within
rounding of 0 (a residual block's BN output plus its shortcut can cancel to 1e-6) may be
positive for PyTorch and zero after ReLU for another correct float32 implementation; that one
element's gradient then differs, and BatchNorm's training-mode backward spreads it over every
earlier layer (seen with this batch: layer3.0's output has an element at 6.4e-6 whose sign
float32 rounding decides, and every parameter before it then differs by 1-15%). No random batch
of this size avoids such ties (each ReLU input's closest value to 0 is ~1e-6 of its max; the
manifest's kink_margin records the closest one, computed in float64). So:
  * f64 is the exactness check: rounding is ~1e-16, no decision is that close, and every
    gradient must agree far below the 1e-3 bound;
  * f32 checks what ties cannot move (the loss, the BatchNorm running statistics) to the same
    bound, and the parameters only for gross errors, reporting how many meet 1e-3.

BatchNorm running variance. PyTorch (momentum 0.1) updates
    running_var = 0.9 * running_var + 0.1 * var_unbiased(x)      (divides by n - 1)
while ONNX's BatchNormalization (opset 14/15 spec; torch exports momentum 0.9) defines
    running_var = 0.9 * running_var + 0.1 * ReduceVar(x)         (population variance, / n)
with n = N*H*W per channel. The two differ by the factor n/(n-1) in the batch term, so the
exported model cannot reproduce PyTorch's running_var. We write PyTorch's (after/) and the ONNX
definition computed from the same BatchNorm inputs (onnx_running_var/), and check here that the
two agree up to that factor. running_mean is the same in both.

Determinism: torch.manual_seed(0) for the weights (BatchNorm affine parameters and running
statistics are randomised away from 1/0, so normalisation is not an identity and the running
statistics start from non-trivial values), a seeded generator for the batch, one thread.

The torch.onnx export runs the model once in training mode, which would move the running
statistics; the export is made from a copy, and the reference step starts from the values read
back from the exported file, after checking that the file holds exactly one initializer per
torch parameter / running statistic under the same name and none of them as graph inputs.

Writes once: when OUT/MANIFEST.json carries this script's fingerprint it does nothing (--force
rewrites). Files are written into OUT.tmp and renamed, so OUT is never half written.
Exit status: 0 on success, 2 when a required Python package is missing (the message names it).
"""

import argparse
import fcntl
import copy
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

SCRIPT = os.path.abspath(__file__)
SEED = 0
BATCH = 4
SHAPE = (3, 64, 64)
CLASSES = 10
OPSETS = (13, 15)  # libonnx 1.12 knows up to 17; 13 and 15 cover both BatchNorm training forms
INSTALL_HINT = ("CI installs them with scripts/setup.sh (apt-get install python3-torch "
                "python3-torchvision python3-numpy)")


def fingerprint():
    with open(SCRIPT, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


# ---- a minimal ONNX protobuf reader (the torch interpreter has no `onnx` package) -----------
# Wire format: key = (field << 3) | type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
def _varint(b, i):
    r = shift = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return r, i


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        yield field, wt, v


def read_onnx_initializers(path):
    """(initializers {name: float32 ndarray}, graph input names) of an ONNX file."""
    import numpy as np

    with open(path, "rb") as f:
        model = f.read()
    graph = [v for fld, wt, v in _fields(model) if fld == 7 and wt == 2]
    if len(graph) != 1:
        raise SystemExit(f"{path}: no GraphProto")
    inits, inputs = {}, []
    for fld, wt, v in _fields(graph[0]):
        if fld == 11 and wt == 2:  # GraphProto.input: ValueInfoProto, name = 1
            inputs += [bytes(n).decode() for f2, _, n in _fields(v) if f2 == 1]
        if fld != 5 or wt != 2:  # GraphProto.initializer
            continue
        dims, dtype, name, raw, floats = [], 1, None, None, []
        for f2, w2, x in _fields(v):
            if f2 == 1:  # dims (packed or not)
                if w2 == 2:
                    j = 0
                    while j < len(x):
                        d, j = _varint(x, j)
                        dims.append(d)
                else:
                    dims.append(x)
            elif f2 == 2:
                dtype = x
            elif f2 == 4:  # float_data (packed)
                floats += list(struct.unpack(f"<{len(x) // 4}f", x)) if w2 == 2 else \
                    [struct.unpack("<f", x)[0]]
            elif f2 == 8:
                name = bytes(x).decode()
            elif f2 == 9:
                raw = bytes(x)
        if dtype not in (1, 11):  # FLOAT, DOUBLE
            continue
        np_type = "<f4" if dtype == 1 else "<f8"
        if raw is None and dtype == 11:
            raise SystemExit(f"{path}: {name}: double_data is not read here (torch writes raw_data)")
        a = np.frombuffer(raw, dtype=np_type) if raw is not None else np.array(floats, np_type)
        inits[name] = a.reshape(dims).astype(np_type[1:])
    return inits, inputs


# ---- the reference step (torch interpreter) -------------------------------------------------
def build_model():
    import torch
    import torch.nn as nn
    import torchvision

    torch.manual_seed(SEED)
    model = torchvision.models.resnet18(weights=None, num_classes=CLASSES)
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
    return model.train()


def save(path, a):
    import numpy as np

    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, np.ascontiguousarray(a))


def kink_margin(model, x):
    """The smallest distance, in float64 and relative to each tensor's max|.|, of a ReLU input
    from 0 and of a MaxPool window's largest positive value from the runner-up."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    m64 = copy.deepcopy(model).double()
    worst = [float("inf")]

    def relu_hook(module, inp):
        a = inp[0].detach().abs()
        worst[0] = min(worst[0], float(a.min() / a.max()))

    def pool_hook(module, inp):
        t = inp[0].detach()
        k, st, pd = module.kernel_size, module.stride, module.padding
        cols = F.unfold(F.pad(t, (pd,) * 4, value=float("-inf")), k, stride=st)
        top = cols.view(t.shape[0], t.shape[1], k * k, -1).topk(2, dim=2).values
        gap = (top[:, :, 0] - top[:, :, 1])[top[:, :, 0] > 0]
        if gap.numel():
            worst[0] = min(worst[0], float(gap.min() / t.abs().max()))

    for mod in m64.modules():
        if isinstance(mod, nn.ReLU):
            mod.inplace = False
            mod.register_forward_pre_hook(relu_hook)
        if isinstance(mod, nn.MaxPool2d):
            mod.register_forward_pre_hook(pool_hook)
    with torch.no_grad():
        m64(x.double())
    return worst[0]


def reference_step(out, model, x, y):
    """Exports `model` (training mode) and writes PyTorch's SGD step on (x, y) into out."""
    import warnings

    import numpy as np
    import torch
    import torch.nn as nn

    os.makedirs(out)
    # Export from copies: tracing in training mode updates the copy's running statistics.
    files = {}
    for opset in OPSETS:
        path = os.path.join(out, f"model_opset{opset}.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Removing mutation ... num_batches_tracked"
            torch.onnx.export(copy.deepcopy(model), x, path, export_params=True,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, keep_initializers_as_inputs=False,
                              opset_version=opset, input_names=["input"],
                              output_names=["logits"])
        files[opset] = path

    # The torch state the ONNX file must mirror: parameters and BN running statistics, by name
    # (num_batches_tracked is dropped by the export: ONNX BatchNorm uses a fixed momentum).
    params = dict(model.named_parameters())
    stats = {k: v for k, v in model.named_buffers() if not k.endswith("num_batches_tracked")}
    inits = None
    for opset, path in files.items():
        got, graph_inputs = read_onnx_initializers(path)
        if set(got) != set(params) | set(stats):
            raise SystemExit(
                f"{path}: initializer names differ from torch's: only in ONNX "
                f"{sorted(set(got) - set(params) - set(stats))[:5]}, only in torch "
                f"{sorted(set(params) | set(stats) - set(got))[:5]}")
        if set(graph_inputs) & set(got):
            raise SystemExit(f"{path}: initializers listed as graph inputs "
                             "(keep_initializers_as_inputs)")
        if inits is None:
            inits = got
        elif any(not np.array_equal(inits[k], got[k]) for k in got):
            raise SystemExit(f"{path}: initializer values differ between the opset exports")
    # Start the step from exactly what the files hold.
    with torch.no_grad():
        for k, t in list(params.items()) + list(stats.items()):
            t.copy_(torch.from_numpy(inits[k]))

    # Batch statistics per BatchNorm for the ONNX running_var: population variance of the input.
    bn_input_var, bn_count = {}, {}

    def hook(name):
        def fn(module, inp):
            xi = inp[0].detach().double()
            bn_input_var[name] = xi.var(dim=(0, 2, 3), unbiased=False)
            bn_count[name] = xi.numel() // xi.shape[1]
        return fn

    bns = {n: m for n, m in model.named_modules() if isinstance(m, nn.BatchNorm2d)}
    handles = [m.register_forward_pre_hook(hook(n)) for n, m in bns.items()]
    before = {k: t.detach().clone() for k, t in list(params.items()) + list(stats.items())}

    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.0)
    opt.zero_grad()
    loss = nn.CrossEntropyLoss(reduction="mean")(model(x), y)
    loss.backward()
    grads = {k: p.grad.detach().clone() for k, p in params.items()}
    opt.step()
    for h in handles:
        h.remove()

    save(os.path.join(out, "input.npy"), x.numpy())
    save(os.path.join(out, "labels.npy"), y.numpy())
    for k, t in before.items():
        save(os.path.join(out, "before", k + ".npy"), t.numpy())
    for k, g in grads.items():
        save(os.path.join(out, "grad", k + ".npy"), g.numpy())
    for k, p in params.items():
        save(os.path.join(out, "after", k + ".npy"), p.detach().numpy())
    for name, m in bns.items():
        mom = m.momentum  # torch's; ONNX momentum = 1 - this
        save(os.path.join(out, "after", name + ".running_mean.npy"), m.running_mean.numpy())
        save(os.path.join(out, "after", name + ".running_var.npy"), m.running_var.numpy())
        old = before[name + ".running_var"].double()
        onnx_var = (1 - mom) * old + mom * bn_input_var[name]
        save(os.path.join(out, "onnx_running_var", name + ".running_var.npy"),
             onnx_var.to(m.running_var.dtype).numpy())
        # Sanity: torch's running_var is the same update with the n/(n-1) (unbiased) factor.
        n = bn_count[name]
        torch_var = (1 - mom) * old + mom * bn_input_var[name] * n / (n - 1)
        d = float((torch_var - m.running_var.double()).abs().max() /
                  m.running_var.double().abs().max())
        if d > 1e-5:
            raise SystemExit(f"{name}: torch's running_var is not the unbiased update of the "
                             f"hooked input (rel diff {d:.3g}); the reference is inconsistent")
    return dict(loss=float(loss.item()), models={str(o): os.path.basename(p)
                                                 for o, p in files.items()},
                params=sorted(params), running_means=sorted(n + ".running_mean" for n in bns),
                running_vars=sorted(n + ".running_var" for n in bns),
                bn_count={n + ".running_var": bn_count[n] for n in bns})


def make_reference(out):
    import torch
    import torchvision

    torch.set_num_threads(1)
    model = build_model()
    gen = torch.Generator().manual_seed(SEED + 2)
    x = torch.randn((BATCH,) + SHAPE, generator=gen)
    y = torch.randint(0, CLASSES, (BATCH,), generator=gen, dtype=torch.int64)
    margin = kink_margin(model, x)
    print(f"closest ReLU/MaxPool decision to a tie: {margin:.3g} of its tensor's max", flush=True)
    precisions = {}
    for p in ("f32", "f64"):
        m = copy.deepcopy(model)
        xp = x
        if p == "f64":
            m, xp = m.double(), x.double()
        precisions[p] = reference_step(os.path.join(out, p), m, xp, y)
        print(f"{p}: {len(precisions[p]['params'])} parameters, "
              f"{len(precisions[p]['running_means'])} BatchNorms, loss {precisions[p]['loss']:.8f}",
              flush=True)
    manifest = dict(
        fingerprint=fingerprint(), torch=torch.__version__, torchvision=torchvision.__version__,
        seed=SEED, kink_margin=margin, input_shape=[BATCH] + list(SHAPE),
        classes=CLASSES, precisions=precisions,
        optimizer="SGD lr=1 momentum=0 dampening=0 weight_decay=0",
        loss_fn="CrossEntropyLoss(reduction=mean)",
        running_var_note="after/ holds torch's (unbiased batch variance); onnx_running_var/ the "
                         "ONNX BatchNormalization definition (population variance)")
    with open(os.path.join(out, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1)


# ---- driver ---------------------------------------------------------------------------------
def torch_python():
    check = "import torch, torchvision, numpy"

    def ok(py):
        exe = shutil.which(py)
        return exe and subprocess.run([exe, "-c", check], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL).returncode == 0

    env = os.environ.get("OAT_TORCH_PYTHON")
    if env:
        if ok(env):
            return shutil.which(env)
        sys.stderr.write(f"error: OAT_TORCH_PYTHON={env} cannot import torch + torchvision + "
                         f"numpy. {INSTALL_HINT}\n")
        sys.exit(2)
    for py in (sys.executable, "/usr/bin/python3", "python3"):
        if ok(py):
            return shutil.which(py)
    missing = []
    for mod in ("torch", "torchvision", "numpy"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    sys.stderr.write(f"error: no Python interpreter with torch + torchvision + numpy (this one "
                     f"lacks {', '.join(missing) or 'none?'}; tried {sys.executable}, "
                     f"/usr/bin/python3, python3; set OAT_TORCH_PYTHON). {INSTALL_HINT}\n")
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("phase", nargs="?", choices=["all", "_step"], default="all",
                    help=argparse.SUPPRESS)
    ap.add_argument("out", help="output folder")
    ap.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = ap.parse_args()
    out = os.path.abspath(args.out)

    if args.phase == "_step":
        make_reference(out)
        return

    # Several test binaries (ctest -j) may ask for the folder at once: one builds it, the others
    # wait here and then find it up to date.
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    lock = open(out + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    manifest = os.path.join(out, "MANIFEST.json")
    if not args.force and os.path.exists(manifest):
        with open(manifest) as f:
            try:
                up_to_date = json.load(f).get("fingerprint") == fingerprint()
            except ValueError:
                up_to_date = False
        if up_to_date:
            print(f"{out}: up to date")
            return
    py = torch_python()
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    r = subprocess.run([py, SCRIPT, "_step", tmp])
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        sys.stderr.write(f"error: the PyTorch step failed ({py}, exit {r.returncode})\n")
        sys.exit(r.returncode if r.returncode == 2 else 1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"{out}: written")


if __name__ == "__main__":
    main()
