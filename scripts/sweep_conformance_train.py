#!/usr/bin/env python3
"""Trains every ONNX conformance node case made trainable, or runs `check` on it.

Each case's input 0 (float32, a batch along dim 0) is the data, first scaled by a parameter
fuzz_w of ones (so every op's data input has a gradient); its other inputs become initializers
(float ones are parameters); output 0 is the MSE target. The same construction as the training
part of tests/fuzz/fuzz_cli_test.cc, without mutations, over all cases.

  python3 scripts/sweep_conformance_train.py train fp16 [BINARY] [FILTER]
  python3 scripts/sweep_conformance_train.py check fp16 [BINARY] [FILTER]
  python3 scripts/sweep_conformance_train.py forward fp16 [BINARY] [FILTER] [DEVICE]

`forward`: `check --forward-only` (the inference model as `convert` writes it against the FP32
model) on each case with a float32 input 0, its other inputs initializers, no fuzz_w; the
failing nodes are counted by op.

Prints BAD for a crash, another exit status, an exit 1 without an `error:` line or a trained
model left behind after a failure, then the totals and the refusals by message.
"""
import collections, glob, os, subprocess, sys, tempfile

import numpy as np
import onnx
from onnx import numpy_helper

mode, prec = sys.argv[1], sys.argv[2]
binary = sys.argv[3] if len(sys.argv) > 3 else 'build/onnx-amp-train'
only = sys.argv[4] if len(sys.argv) > 4 else ''
device = sys.argv[5] if len(sys.argv) > 5 else 'cpu'  # check/forward: cuda (a GPU, the emulator)
root = '/usr/share/libonnx-testdata/data/node'
work = tempfile.mkdtemp(prefix='oat_sweep_')
res = {}
for c in sorted(os.listdir(root)):
    if only not in c:
        continue
    ds = os.path.join(root, c, 'test_data_set_0')
    ins = sorted(glob.glob(ds + '/input_*.pb'), key=lambda p: int(p.split('_')[-1][:-3]))
    outs = sorted(glob.glob(ds + '/output_*.pb'), key=lambda p: int(p.split('_')[-1][:-3]))
    if not ins or not outs:
        continue
    try:
        m = onnx.load(os.path.join(root, c, 'model.onnx'))
        it = [onnx.load_tensor(p) for p in ins]
        x = numpy_helper.to_array(it[0])
        y = numpy_helper.to_array(onnx.load_tensor(outs[0]))
    except Exception:
        continue  # sequences, optionals
    if mode == 'forward':
        if x.dtype != np.float32 or x.ndim == 0 or x.shape[0] == 0:
            continue
    elif (x.dtype != np.float32 or y.dtype != np.float32 or x.ndim == 0 or y.ndim == 0
            or x.shape[0] != y.shape[0] or x.shape[0] == 0):
        continue
    g = m.graph
    names = [i.name for i in g.input]
    for k, t in enumerate(it[1:], 1):
        if k < len(names):
            t.name = names[k]
            g.initializer.append(t)
    keep = [i for i in g.input if i.name == names[0]]
    del g.input[:]
    g.input.extend(keep)
    for n in g.node:
        for j, v in enumerate(n.input):
            if v == names[0]:
                n.input[j] = 'fuzz_scaled'
    if mode != 'forward':
        g.initializer.append(numpy_helper.from_array(np.ones(x.shape[1:], np.float32), 'fuzz_w'))
        g.node.insert(0, onnx.helper.make_node('Mul', [names[0], 'fuzz_w'], ['fuzz_scaled'],
                                               name='fuzz_scale'))
    else:
        for n in g.node:
            for j, v in enumerate(n.input):
                if v == 'fuzz_scaled':
                    n.input[j] = names[0]
    d = os.path.join(work, c)
    os.makedirs(d)
    onnx.save(m, d + '/model.onnx')
    np.save(d + '/x.npy', x)
    np.save(d + '/y.npy', y)
    out = d + '/out.onnx'
    if mode == 'train':
        cmd = [binary, 'train', d + '/model.onnx', '--train-x', d + '/x.npy', '--train-y',
               d + '/y.npy', '--loss', 'mse', '--steps', '2', '--batch', str(x.shape[0]), '-o',
               out, '--threads', '1', '--precision', prec]
    elif mode == 'forward':
        cmd = [binary, 'check', d + '/model.onnx', '--forward-only', '--precision', prec,
               '--data', d + '/x.npy', '--batch', str(x.shape[0]), '--device', device]
    else:
        cmd = [binary, 'check', d + '/model.onnx', '--precision', prec, '--data', d + '/x.npy',
               '--batch', str(x.shape[0]), '--loss', 'mse', '--device', device]
    p = subprocess.run(['timeout', '-k', '5', '60'] + cmd, capture_output=True, text=True)
    err = [l for l in p.stderr.splitlines() if l.startswith('error')]
    res[c] = (p.returncode, err[-1] if err else '')
    if os.environ.get("OAT_SWEEP_VERBOSE") and p.returncode:
        print("REFUSED", c, (err[-1] if err else "")[:200], flush=True)
    out_of_tolerance = mode != 'train' and 'out of tolerance' in p.stdout + p.stderr
    if out_of_tolerance:
        fails = [l for l in p.stdout.splitlines() if l.startswith('out of tolerance')]
        res[c] = (1, 'out of tolerance: ' + '; '.join(l.split('(', 1)[-1][:60] for l in fails))
        print('FAIL', c, res[c][1], flush=True)
    if (p.returncode not in (0, 1) or (p.returncode == 1 and not err and not out_of_tolerance)
            or (p.returncode == 1 and os.path.exists(out))):
        print('BAD', c, p.returncode, (p.stderr + p.stdout)[-300:], flush=True)
ok = sum(1 for v in res.values() if v[0] == 0)
print('total', len(res), 'ok', ok, 'refused', len(res) - ok)
for msg, n in collections.Counter(v[1].split(':', 3)[-1][:100]
                                  for v in res.values() if v[0] == 1).most_common():
    print(n, msg)
