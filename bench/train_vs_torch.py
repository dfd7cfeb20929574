#!/usr/bin/python3
"""CPU training step: onnx-amp-train vs PyTorch, same models, data, batch, optimizer and threads.

    /usr/bin/python3 bench/train_vs_torch.py [--bin build/bench/oat_train_step]
        [--models mlp,lenet5] [--batch 64] [--optimizer adam] [--lr 1e-3] [--threads 2]
        [--warmup 20] [--steps 200] [--rounds 3] [--data /usr/share/datasets/fashion-mnist]
        [--torch-blas DIR] [--max-ratio R]

Runs with Debian's Python (`/usr/bin/python3`, packages python3-torch python3-numpy).

Ours: `oat_train_step` (bench/train_step.cc) trains each zoo model with the Trainer on the real
data set and prints, per model, the mean ms per step over --steps steps after --warmup steps.
PyTorch: the same architectures as models/zoo.cc (layer for layer; initialisation does not
matter for time), torch.set_num_threads(T), and the loop users write:

    x, y = X[idx], Y[idx]                 # the batch (our prefetch thread does this)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    loss.item()                           # the trainer reads every step's loss too

timed the same way (mean over --steps after --warmup). Both also report process CPU time per
step (all threads): on a loaded machine wall time includes waiting for a core and CPU time does
not (but it counts a spinning OpenMP thread's waiting as work).

Which BLAS PyTorch uses matters: Debian's python3-torch is built with BLAS_INFO=generic and
calls whatever libblas.so.3 the system's alternatives point to, by default the reference
(netlib) BLAS of libblas3, which makes its nn.Linear slow (its convolutions go through
oneDNN). The script prints the libblas it loaded. --torch-blas DIR re-runs the script with DIR
first on LD_LIBRARY_PATH and OPENBLAS_NUM_THREADS=--threads, e.g. Debian's OpenBLAS unpacked
without installing it:
    apt-get download libopenblas0-pthread && dpkg-deb -x libopenblas0-pthread_*.deb /tmp/obl
    --torch-blas /tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread
(what a user gets after `apt install libopenblas0-pthread`). Both sides alternate for --rounds rounds
and the best round of each is reported (the least disturbed by other processes). The load
average is printed, since on a shared machine it decides the noise. --max-ratio R exits 1 when
ours/torch exceeds R for any model.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from zoo_torch import zoo_input_shape, zoo_model  # noqa: E402  (twins of models/zoo.cc)


def read_idx(path):
    """An IDX file (MNIST layout), gzip or plain: uint8 data with big-endian dims."""
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise SystemExit(f"{path}: not a uint8 IDX file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise SystemExit(f"{data_dir}: no {stem}[.gz]")


def torch_steps(name, X, Y, a):
    torch.manual_seed(0)
    model = zoo_model(name)
    model.train()
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    elif a.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    elif a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    else:
        raise SystemExit(f"unknown optimizer {a.optimizer}")
    order = torch.from_numpy(np.random.default_rng(0).permutation(X.shape[0]))
    total = a.warmup + a.steps
    at, cpu_at, losses = [], [], []
    pos = 0
    for _ in range(total):
        if pos + a.batch > X.shape[0]:
            pos = 0
        idx = order[pos:pos + a.batch]
        pos += a.batch
        x, y = X[idx].reshape((-1,) + zoo_input_shape(name)), Y[idx]  # transformer: [N, 28, 28]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        at.append(time.perf_counter())
        cpu_at.append(time.process_time())
    ms = [(at[k] - at[k - 1]) * 1e3 for k in range(a.warmup, total)]
    return {"model": name, "ms_per_step": sum(ms) / len(ms), "ms_median": sorted(ms)[len(ms) // 2],
            "cpu_ms_per_step": (cpu_at[-1] - cpu_at[a.warmup - 1]) * 1e3 / a.steps,
            "first_loss": losses[0], "last_loss": losses[-1]}


def loaded_blas():
    """The libblas/openblas files mapped into this process (PyTorch's BLAS)."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path):
                libs.add(path)
    return ", ".join(sorted(libs)) or "none found"


def ours_steps(a):
    cmd = [a.bin, "--models", a.models, "--batch", str(a.batch), "--optimizer", a.optimizer,
           "--lr", str(a.lr), "--threads", str(a.threads), "--warmup", str(a.warmup),
           "--steps", str(a.steps), "--data", a.data]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr}")
    return {j["model"]: j for j in map(json.loads, filter(None, r.stdout.split("\n")))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bench", "oat_train_step"))
    p.add_argument("--models", default="mlp,lenet5")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--max-ratio", type=float, default=0.0)
    p.add_argument("--torch-blas", default="")
    a = p.parse_args()
    if a.torch_blas and os.environ.get("OAT_TORCH_BLAS_SET") != a.torch_blas:
        env = dict(os.environ, OAT_TORCH_BLAS_SET=a.torch_blas,
                   OPENBLAS_NUM_THREADS=str(a.threads),
                   LD_LIBRARY_PATH=a.torch_blas + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
        os.execve(sys.executable, [sys.executable] + sys.argv, env)

    images = read_idx(find(a.data, "train-images-idx3-ubyte"))
    labels = read_idx(find(a.data, "train-labels-idx1-ubyte"))
    X = torch.from_numpy(images.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    Y = torch.from_numpy(labels.astype(np.int64))
    torch.set_num_threads(a.threads)
    names = [m for m in a.models.split(",") if m]

    best_ours, best_torch = {}, {}
    for r in range(a.rounds):
        ours = ours_steps(a)
        for n in names:
            if n not in ours:
                raise SystemExit(f"{a.bin} printed no result for {n}")
            if n not in best_ours or ours[n]["ms_per_step"] < best_ours[n]["ms_per_step"]:
                best_ours[n] = ours[n]
        for n in names:
            t = torch_steps(n, X, Y, a)
            if n not in best_torch or t["ms_per_step"] < best_torch[n]["ms_per_step"]:
                best_torch[n] = t
        print(f"round {r + 1}/{a.rounds}: " + ", ".join(
            f"{n} ours {ours[n]['ms_per_step']:.3f} ms" for n in names), file=sys.stderr)

    load = os.getloadavg()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {a.steps} steps after "
          f"{a.warmup} warm-up, best of {a.rounds} rounds; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"torch BLAS: {loaded_blas()}")
    print("| model | batch | optimizer | threads | ours ms/step | torch ms/step | ours/torch |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    worst = 0.0
    for n in names:
        o, t = best_ours[n]["ms_per_step"], best_torch[n]["ms_per_step"]
        worst = max(worst, o / t)
        print(f"| {n} | {a.batch} | {a.optimizer} {a.lr:g} | {a.threads} | {o:.3f} | {t:.3f} | "
              f"{o / t:.2f} |")
    for n in names:
        print(f"  {n}: loss {best_ours[n]['first_loss']:.3f} -> {best_ours[n]['last_loss']:.3f} "
              f"(ours), {best_torch[n]['first_loss']:.3f} -> {best_torch[n]['last_loss']:.3f} "
              f"(torch); median ms ours {best_ours[n]['ms_median']:.3f}, torch "
              f"{best_torch[n]['ms_median']:.3f}; CPU ms/step (all threads) ours "
              f"{best_ours[n]['cpu_ms_per_step']:.3f}, torch {best_torch[n]['cpu_ms_per_step']:.3f}")
    if a.max_ratio > 0 and worst > a.max_ratio:
        print(f"ours/torch {worst:.2f} exceeds --max-ratio {a.max_ratio}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
