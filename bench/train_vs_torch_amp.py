#!/usr/bin/env python3
"""Training throughput: onnx-amp-train FP32 / FP16 vs PyTorch FP32 / AMP, same machine and models.

    python3 bench/train_vs_torch_amp.py [--bin build/bench/oat_train_step] [--device cuda|cpu]
        [--models mlp,resnet18-cifar,resnet18,transformer,lstm,mlp-wide,transformer-base]
        [--batch 64 | --batch mlp=256,...]
        [--low fp16|bf16] [--warmup 10] [--steps 50] [--rounds 1] [--threads T] [--lr 1e-3]
        [--tf32] [--cudnn-benchmark] [--json FILE] [--markdown FILE] [--timeout S]
        [--torch-blas DIR] [--ours-args '--cuda-graph 0']

Issue #5 item 6. For each zoo model (models/zoo.h; the PyTorch twins are bench/zoo_torch.py,
layer for layer) and the same batch, optimizer (Adam, lr 1e-3), synthetic data and device:

  ours   `oat_train_step --device D --precision fp32,LOW --data synthetic` (bench/train_step.cc):
         Trainer::fit, FP32 master weights, FP16 with dynamic loss scaling (BF16 without), on
         CUDA its state on the device and the step replayed as a CUDA graph (the trainer's
         defaults; --ours-args '--cuda-graph 0' runs it eagerly).
  torch  eager PyTorch, the loop users write, one fresh model per mode:
             x, y = X[idx].to(dev, non_blocking=True), Y[idx].to(dev, ...)   # host batch
             opt.zero_grad(set_to_none=True)
             with torch.autocast(dev.type, dtype=LOW, enabled=amp):
                 loss = F.cross_entropy(model(x), y)
             scaler.scale(loss).backward(); scaler.step(opt); scaler.update()  # GradScaler(fp16)
             every --warmup steps: read the losses (host waits)    # as our trainer does
         "fp32" is the same loop with autocast and the scaler disabled.

Both read the losses back, and so wait for the device, every --warmup steps and at the end
(on a device our trainer reads them only at reports; oat_train_step reports every --warmup
steps); the clock is read right after each such wait (torch.cuda.synchronize() first). The
--warmup steps are not counted; the mean is over the --steps steps after them (exact: both ends
are syncs), the median over the report intervals; samples/s = batch / mean.

The data are seeded uniform [0, 1) samples with uniform labels, kept on the host (pinned on
CUDA), 16 batches (fewer above ~256 MB, at least 2) cycled, as oat_train_step does. FP32 is
plain FP32 on both sides: TF32 is off for PyTorch's matmuls *and* cuDNN convolutions (PyTorch
enables it for convolutions by default) unless --tf32, because our FP32 kernels do not use it.
cudnn.benchmark stays PyTorch's default (off) unless --cudnn-benchmark, which also has our
convolutions timed (oat_train_step --cudnn-benchmark 1: cudnnFind*AlgorithmEx).

--device cpu runs the same comparison on the CPU (for testing the script without a GPU; our
FP16 there is exact emulation, slower than FP32 by design). PyTorch's CPU autocast may not take
--low (torch 1.13's takes bfloat16 only): then the torch AMP column says n/a; --low bf16 compares
bf16 on both sides. Debian's torch needs --torch-blas for a fair CPU FP32 (see train_vs_torch.py).

Prints (and with --markdown writes) a markdown table: model, input, batch, ours FP32 / LOW and
torch FP32 / AMP samples/s, ours LOW / torch AMP, our LOW / FP32 speedup and torch's; then the
device (torch.cuda.get_device_name), versions, settings, the first -> last loss of each run and
any error. A model whose run fails (a missing CUDA kernel, out of memory) gets its error in the
table and the others still run. --json writes every number. Exit status 1 when any run failed.
"""

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from train_vs_torch import loaded_blas  # noqa: E402
from zoo_torch import SHAPES, zoo_input_shape, zoo_model  # noqa: E402

DEFAULT_BATCH = {
    # CUDA: large enough to be worth a GPU, small enough for ResNet-18 at 224 in ~16 GB.
    "cuda": {"mlp": 256, "lenet5": 256, "resnet18-cifar": 128, "resnet18": 64, "transformer": 128,
             "lstm": 128, "mlp-wide": 1024, "transformer-base": 64},
    # CPU: a few seconds per model on 2 cores.
    "cpu": {"mlp": 64, "lenet5": 64, "resnet18-cifar": 16, "resnet18": 2, "transformer": 32,
            "lstm": 32, "mlp-wide": 32, "transformer-base": 2},
}
LOW = {"fp16": torch.float16, "bf16": torch.bfloat16}


def batches_for(models, spec, device):
    """--batch N (every model) or NAME=N,... (others keep the device's default)."""
    b = {m: DEFAULT_BATCH[device].get(m, 64) for m in models}
    if spec:
        if "=" not in spec:
            return {m: int(spec) for m in models}
        for item in spec.split(","):
            name, n = item.split("=")
            b[name.strip()] = int(n)
    return b


def synthetic(name, batch):
    """Seeded uniform [0, 1) samples and labels: 16 batches, fewer above ~256 MB, at least 2."""
    shape, classes = zoo_input_shape(name), SHAPES[name][1]
    per_sample = 1
    for d in shape:
        per_sample *= d
    batches = max(2, min(16, (256 << 20) // max(1, batch * per_sample * 4)))
    g = torch.Generator().manual_seed(0)
    X = torch.rand((batches * batch,) + tuple(shape), generator=g)
    Y = torch.randint(0, classes, (batches * batch,), generator=g)
    return X, Y


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def autocast_works(dev, dtype):
    """Whether torch.autocast(dev, dtype) really runs a Linear in dtype here."""
    try:
        lin = torch.nn.Linear(4, 4).to(dev)
        with torch.autocast(device_type=dev.type, dtype=dtype):
            y = lin(torch.ones(2, 4, device=dev))
        return y.dtype == dtype
    except Exception:  # noqa: BLE001 - any failure means "not available"
        return False


def make_scaler(enabled):
    """GradScaler for fp16 on CUDA (torch.amp.GradScaler in 2.x, torch.cuda.amp in 1.x)."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def torch_run(name, batch, mode, a, dev):
    """One PyTorch run: mode "fp32" or "amp"; returns a result dict."""
    low = LOW[a.low]
    amp = mode == "amp"
    if amp and not autocast_works(dev, low):
        return {"error": f"n/a: torch {torch.__version__} autocast on {dev.type} does not run "
                         f"{a.low}"}
    torch.manual_seed(0)
    model = zoo_model(name).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    # Loss scaling where our side has it too: fp16 (dynamic, PyTorch's defaults = ours).
    scaler = make_scaler(amp and a.low == "fp16" and dev.type == "cuda")
    X, Y = synthetic(name, batch)
    if dev.type == "cuda":
        X, Y = X.pin_memory(), Y.pin_memory()
    order = torch.randperm(X.shape[0], generator=torch.Generator().manual_seed(0))
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    total = a.warmup + a.steps
    marks, losses, pending = {}, [], []
    pos = 0
    for step in range(1, total + 1):
        if pos + batch > X.shape[0]:
            pos = 0
        idx = order[pos:pos + batch]
        pos += batch
        x = X[idx].to(dev, non_blocking=True)
        y = Y[idx].to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        # (no autocast object at all for fp32: torch 1.13 rejects fp16 on CPU even when disabled)
        with torch.autocast(device_type=dev.type, dtype=low) if amp else contextlib.nullcontext():
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        pending.append(loss.detach())
        # Losses read (the host waits for the device) every `warmup` steps and at the end, as
        # our trainer does on a device with oat_train_step's log_every = warmup.
        if step % a.warmup == 0 or step == total:
            losses.extend(torch.stack(pending).float().tolist())
            pending.clear()
            sync(dev)
            marks[step] = time.perf_counter()
    ms, prev = [], a.warmup
    for k in sorted(marks):
        if k > a.warmup:
            ms += [(marks[k] - marks[prev]) * 1e3 / (k - prev)] * (k - prev)
            prev = k
    mean = sum(ms) / len(ms)
    r = {"ms_per_step": mean, "ms_median": sorted(ms)[len(ms) // 2],
         "samples_per_s": batch * 1e3 / mean, "first_loss": losses[0], "last_loss": losses[-1]}
    if dev.type == "cuda":
        r["peak_allocated_mb"] = torch.cuda.max_memory_allocated() / 2**20
    del model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return r


def ours_run(name, batch, a, threads):
    """oat_train_step for fp32 and --low; returns {precision: result dict}."""
    cmd = [a.bin, "--models", name, "--precision", f"fp32,{a.low}", "--batch", str(batch),
           "--optimizer", "adam", "--lr", str(a.lr), "--threads", str(threads),
           "--warmup", str(a.warmup), "--steps", str(a.steps), "--data", "synthetic",
           "--device", a.device,
           "--cudnn-benchmark", "1" if a.cudnn_benchmark else "0"] + a.ours_args.split()
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=a.timeout)
    except subprocess.TimeoutExpired:
        err = f"timed out after {a.timeout} s"
        return {p: {"error": err} for p in ("fp32", a.low)}
    sys.stderr.write(r.stderr)
    got = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            got[j["precision"]] = j
    if r.returncode != 0:
        last = [ln for ln in r.stderr.splitlines() if ln.strip()]
        err = f"exit {r.returncode}: " + (last[-1] if last else "(no output)")
        for p in ("fp32", a.low):
            got.setdefault(p, {"error": err})
    return got


def better(old, new):
    if old is None or "error" in old:
        return new
    if "error" in new:
        return old
    return new if new["samples_per_s"] > old["samples_per_s"] else old


def fmt(r):
    if r is None:
        return "-"
    if "error" in r:
        return "n/a" if r["error"].startswith("n/a") else "error"
    return f"{r['samples_per_s']:.0f}"


def ratio(a, b):
    if a is None or b is None or "error" in a or "error" in b:
        return "-"
    return f"{a['samples_per_s'] / b['samples_per_s']:.2f}x"


def environment(dev, a):
    env = {"torch": torch.__version__, "python": platform.python_version(),
           "host": platform.node(), "cpus": os.cpu_count(), "device": dev.type,
           "tf32": bool(a.tf32), "cudnn_benchmark": bool(a.cudnn_benchmark),
           "warmup": a.warmup, "steps": a.steps, "rounds": a.rounds, "low": a.low,
           "lr": a.lr, "optimizer": "adam"}
    if dev.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
        p = torch.cuda.get_device_properties(0)
        env["device_memory_gb"] = round(p.total_memory / 2**30, 1)
    else:
        try:
            with open("/proc/cpuinfo") as f:
                env["device_name"] = next(ln.split(":", 1)[1].strip() for ln in f
                                          if ln.startswith("model name"))
        except (OSError, StopIteration):
            env["device_name"] = platform.processor() or "cpu"
        env["load_average"] = os.getloadavg()
        env["torch_blas"] = loaded_blas()
    return env


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bench", "oat_train_step"))
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--models", default="mlp,resnet18-cifar,resnet18,transformer,lstm,mlp-wide,"
                                        "transformer-base")
    p.add_argument("--batch", default="", help="N for every model, or NAME=N,...")
    p.add_argument("--low", choices=sorted(LOW), default="fp16")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads of both sides (0: 2 on cpu, min(16, cores) on cuda)")
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--cudnn-benchmark", action="store_true")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per oat_train_step run")
    p.add_argument("--json", default="")
    p.add_argument("--markdown", default="")
    p.add_argument("--torch-blas", default="")
    p.add_argument("--ours-args", default="",
                   help="more oat_train_step arguments, e.g. '--cuda-graph 0'")
    a = p.parse_args()
    if a.warmup < 1 or a.steps < 1 or a.rounds < 1:
        p.error("--warmup, --steps and --rounds must be at least 1")
    if a.torch_blas and os.environ.get("OAT_TORCH_BLAS_SET") != a.torch_blas:
        env = dict(os.environ, OAT_TORCH_BLAS_SET=a.torch_blas,
                   OPENBLAS_NUM_THREADS=str(a.threads or 2),
                   LD_LIBRARY_PATH=a.torch_blas + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
        os.execve(sys.executable, [sys.executable] + sys.argv, env)

    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch.cuda.is_available() is False "
                         f"(torch {torch.__version__}); use --device cpu")
    if not os.path.exists(a.bin):
        raise SystemExit(f"{a.bin}: not found (cmake --build BUILD --target oat_train_step)")
    dev = torch.device(a.device)
    threads = a.threads or (2 if a.device == "cpu" else min(16, os.cpu_count() or 1))
    torch.set_num_threads(threads)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.tf32
        torch.backends.cudnn.allow_tf32 = a.tf32
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in SHAPES:
            p.error(f"unknown model {m} (known: {', '.join(SHAPES)})")
    batch = batches_for(models, a.batch, a.device)
    env = environment(dev, a)
    env["threads"] = threads
    print(f"device: {env['device_name']}; torch {env['torch']}"
          + (f", CUDA {env['cuda']}, cuDNN {env['cudnn']}" if dev.type == "cuda" else ""),
          file=sys.stderr, flush=True)

    best = {m: {} for m in models}  # model -> {("ours"|"torch", precision): result}
    for r in range(a.rounds):
        for m in models:
            got = ours_run(m, batch[m], a, threads)
            for prec in ("fp32", a.low):
                best[m][("ours", prec)] = better(best[m].get(("ours", prec)),
                                                 got.get(prec, {"error": "no result printed"}))
            for mode in ("fp32", "amp"):
                try:
                    t = torch_run(m, batch[m], mode, a, dev)
                except Exception as e:  # noqa: BLE001 - e.g. CUDA out of memory: keep going
                    t = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
                best[m][("torch", mode)] = better(best[m].get(("torch", mode)), t)
            o, t = best[m][("ours", a.low)], best[m][("torch", "amp")]
            print(f"round {r + 1}/{a.rounds} {m} (batch {batch[m]}): ours {a.low} {fmt(o)}, "
                  f"torch amp {fmt(t)} samples/s", file=sys.stderr, flush=True)

    L = a.low
    lines = [
        f"Training throughput, samples/s (higher is better), {env['device_name']}"
        + (f", torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}"
           if dev.type == "cuda" else f", torch {env['torch']} (BLAS {env['torch_blas']}), "
           f"{threads} threads, load average {env['load_average'][0]:.1f}")
        + f"; Adam {a.lr:g}; mean of {a.steps} steps after {a.warmup}, best of {a.rounds} "
        f"round(s); TF32 {'on' if a.tf32 else 'off'}; cudnn.benchmark "
        f"{'on' if a.cudnn_benchmark else 'off'}.",
        "",
        f"| model | input | batch | ours fp32 | ours {L} | torch fp32 | torch amp ({L}) | "
        f"ours {L} / torch amp | ours {L}/fp32 | torch amp/fp32 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    failed = False
    for m in models:
        b = best[m]
        o32, olow, t32, tamp = b[("ours", "fp32")], b[("ours", L)], b[("torch", "fp32")], b[("torch", "amp")]
        shape = "x".join(str(d) for d in zoo_input_shape(m))
        lines.append(f"| {m} | {shape} | {batch[m]} | {fmt(o32)} | {fmt(olow)} | {fmt(t32)} | "
                     f"{fmt(tamp)} | {ratio(olow, tamp)} | {ratio(olow, o32)} | {ratio(tamp, t32)} |")
    lines.append("")
    for m in models:
        for (side, prec), r in sorted(best[m].items()):
            if "error" in r:
                failed = failed or not r["error"].startswith("n/a")
                lines.append(f"- {m} {side} {prec}: {r['error']}")
            else:
                extra = ""
                if "peak_allocated_mb" in r:
                    extra = f", peak allocated {r['peak_allocated_mb']:.0f} MB"
                if "peak_activation_bytes" in r:
                    extra = f", peak activations {r['peak_activation_bytes'] / 2**20:.1f} MB"
                if r.get("skipped_steps"):
                    extra += f", {r['skipped_steps']} overflow-skipped steps"
                if r.get("cuda_graph"):
                    extra += f", CUDA graph {r['cuda_graph']}"
                lines.append(f"- {m} {side} {prec}: {r['ms_per_step']:.3f} ms/step (median "
                             f"{r['ms_median']:.3f}), loss {r['first_loss']:.3f} -> "
                             f"{r['last_loss']:.3f}{extra}")
    text = "\n".join(lines)
    print(text, flush=True)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    if a.json:
        out = {"environment": env, "batch": batch,
               "results": {m: {f"{side}_{prec}": r for (side, prec), r in best[m].items()}
                           for m in models}}
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
