#!/usr/bin/env python3
"""CPU inference time: onnx-amp-train vs ONNX Runtime on the same model, input and thread count.

    python3 bench/infer_vs_ort.py [--bin build/onnx-amp-train] [--threads 2] [--repeat 10]
                                  [--rounds 3] [--out bench/out] [--cases resnet18_224,...]
                                  [--max-ratio R]

Models (scripts/make_reference_models.py --set bench, exported once into OUT/models):
  resnet18_224               torchvision ResNet-18, opset 13, input 8x3x224x224
  transformer_encoder_bench  nn.TransformerEncoder (d_model 256, 4 heads, 4 layers, ff 1024) +
                             Linear, opset 13, input 8x128x256
  lstm_bench, gru_bench       2-layer bidirectional nn.LSTM / nn.GRU, hidden 256, 64 steps
                             (opsets 13 / 14), input 8x64x128

Ours: `onnx-amp-train infer MODEL -i x.npy -o DIR --threads N --repeat R` prints `time_ms <mean>`
over R runs, first run included. The first run also creates the kernels, so the warm-up is taken
out with a second process run with --repeat 1 (time t1):
    steady = (R * mean_R - t1) / (R - 1)
Both numbers are printed. ONNX Runtime: CPU provider, intra_op_num_threads=N,
inter_op_num_threads=1, sequential execution, default graph optimisations (what users get), 2
warm-up runs, then the mean of R runs. The two alternate for --rounds rounds and the best
round of each is reported (the minimum is the estimate least disturbed by other processes on a
shared machine). Outputs of both are compared as a sanity check.

Run with the Python that has onnxruntime + onnx + numpy (pip); the export step finds the
PyTorch interpreter itself (see scripts/make_reference_models.py).
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["resnet18_224", "transformer_encoder_bench", "lstm_bench", "gru_bench"]


def run_ours(binary, model, x_path, out_dir, threads, repeat):
    cmd = [binary, "infer", model, "-i", x_path, "-o", out_dir, "--threads", str(threads),
           "--repeat", str(repeat)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stdout}")
    m = re.search(r"^time_ms\s+([0-9.eE+-]+)", r.stdout, re.M)
    if not m:
        raise RuntimeError(f"no 'time_ms' in the output of {' '.join(cmd)}:\n{r.stdout}")
    return float(m.group(1))


def run_ort(model, x, threads, repeat, warmup=2):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    for _ in range(warmup):
        y = sess.run(None, feed)[0]
    t0 = time.perf_counter()
    for _ in range(repeat):
        y = sess.run(None, feed)[0]
    return (time.perf_counter() - t0) * 1000.0 / repeat, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "onnx-amp-train"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--max-ratio", type=float, default=0.0,
                    help="exit 1 when ours/ORT exceeds this (0: report only)")
    args = ap.parse_args()
    if args.repeat < 2:
        ap.error("--repeat must be at least 2 (the warm-up is subtracted)")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"error: {args.bin} is not an executable (build it, or pass --bin)")

    models_dir = os.path.join(args.out, "models")
    cases = [c for c in args.cases.split(",") if c]
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_reference_models.py"),
                        models_dir, "--set", "bench", "--cases", ",".join(cases)])
    if r.returncode != 0:
        sys.exit(f"error: exporting the benchmark models failed (exit {r.returncode})")

    print(f"threads {args.threads}, repeat {args.repeat}, best of {args.rounds} rounds, "
          f"onnxruntime {ort.__version__}")
    header = (f"{'model':28} {'input':18} {'ours ms':>9} {'(w/ 1st)':>9} {'ORT ms':>9} "
              f"{'ours/ORT':>9} {'max|diff|':>10}")
    print(header)
    worst = 0.0
    for case in cases:
        case_dir = os.path.join(models_dir, case)
        model = os.path.join(case_dir, "model.onnx")
        x = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(case_dir, "test_data_set_0", "input_0.pb")))
        run_dir = os.path.join(args.out, "runs", case)
        os.makedirs(run_dir, exist_ok=True)
        x_path = os.path.join(run_dir, "x.npy")
        np.save(x_path, x)

        ort_ms = steady = mean_r = float("inf")
        for _ in range(max(1, args.rounds)):
            o, y_ort = run_ort(model, x, args.threads, args.repeat)
            t1 = run_ours(args.bin, model, x_path, os.path.join(run_dir, "ours1"), args.threads, 1)
            m = run_ours(args.bin, model, x_path, os.path.join(run_dir, "ours"), args.threads,
                         args.repeat)
            ort_ms = min(ort_ms, o)
            mean_r = min(mean_r, m)
            steady = min(steady, max((args.repeat * m - t1) / (args.repeat - 1), 0.0))
        y_ours = numpy_helper.to_array(onnx.load_tensor(os.path.join(run_dir, "ours",
                                                                     "output_0.pb")))
        diff = float(np.abs(y_ours.astype(np.float64) - y_ort).max())
        ratio = steady / ort_ms
        worst = max(worst, ratio)
        shape = "x".join(str(d) for d in x.shape)
        print(f"{case:28} {shape:18} {steady:9.1f} {mean_r:9.1f} {ort_ms:9.1f} {ratio:9.2f} "
              f"{diff:10.2e}", flush=True)
    if args.max_ratio > 0 and worst > args.max_ratio:
        print(f"FAIL: ours/ORT {worst:.2f} > {args.max_ratio}")
        sys.exit(1)


if __name__ == "__main__":
    main()
