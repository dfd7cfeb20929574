#!/usr/bin/env python3
"""Structural fuzzing of the CLI: mutate zoo models (attributes, inputs, op types, initializers,
graph inputs, opsets, removed nodes, duplicate outputs) and run infer/check/convert/train on each;
report any exit that is not 0 or 1 (a signal, an abort, a timeout). Needs python3 with onnx, numpy.

    build/onnx-amp-train zoo mlp -o /tmp/fz/mlp.onnx   # also lenet5, transformer, lstm
    OAT_BIN=build/onnx-amp-train FZ_DIR=/tmp/fz python3 scripts/fuzz_models.py SEED TRIALS [MODELS]

KINDS=attr,init limits the mutations; SHOW=1 prints each error's last line.
"""
import onnx, numpy as np, random, subprocess, sys, os
from onnx import helper, numpy_helper, TensorProto
BIN = os.environ.get('OAT_BIN', 'build/onnx-amp-train')
D = os.environ.get('FZ_DIR', '/tmp/fz')
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
models = sys.argv[3].split(',') if len(sys.argv) > 3 else ['mlp', 'lenet5', 'transformer', 'lstm']
OPS = ['Relu', 'Add', 'MatMul', 'Conv', 'Gemm', 'Softmax', 'Reshape', 'Transpose', 'MaxPool', 'Concat', 'Gather', 'Slice', 'LayerNormalization', 'Split', 'ReduceMean', 'Identity', 'Cast', 'Flatten', 'BatchNormalization', 'LSTM', 'Squeeze', 'Unsqueeze', 'Expand', 'Tile', 'Pad', 'Where', 'TopK', 'Einsum', 'Resize']
INTS = [-3, -1, 0, 1, 2, 3, 7, 1 << 31, -(1 << 40), 1 << 40]
FLOATS = [float('nan'), float('inf'), -1.0, 0.0, 1e30]
def inputs_of(path):
    m = onnx.load(path)
    init = {i.name for i in m.graph.initializer}
    res = []
    for i in m.graph.input:
        if i.name in init: continue
        dims = [d.dim_value if d.dim_value > 0 else 2 for d in i.type.tensor_type.shape.dim]
        et = i.type.tensor_type.elem_type
        if et == TensorProto.FLOAT: a = np.random.rand(*dims).astype(np.float32)
        elif et == TensorProto.INT64: a = np.random.randint(0, 3, dims).astype(np.int64)
        else: a = np.zeros(dims, dtype=np.float32)
        res.append((i.name, a))
    return res
def mutate(m):
    g = m.graph
    kind = random.choice(os.environ.get('KINDS', 'attr,input,op,init,gin,opset,remove,dupout,attrtype').split(','))
    nodes = list(g.node)
    n = random.choice(nodes) if nodes else None
    desc = kind
    if kind == 'attr' and n is not None and n.attribute:
        a = random.choice(n.attribute); desc += f' {n.name}.{a.name}'
        if a.type == onnx.AttributeProto.INT: a.i = random.choice(INTS)
        elif a.type == onnx.AttributeProto.INTS:
            r = random.random()
            if r < 0.3 and len(a.ints): del a.ints[-1]
            elif r < 0.5: a.ints.append(random.choice(INTS))
            elif len(a.ints): a.ints[random.randrange(len(a.ints))] = random.choice(INTS)
        elif a.type == onnx.AttributeProto.FLOAT: a.f = random.choice(FLOATS)
        elif a.type == onnx.AttributeProto.TENSOR:
            t = a.t
            if t.dims: t.dims[0] = random.choice([0, 1, 3, 1000])
    elif kind == 'attrtype' and n is not None:
        n.attribute.append(helper.make_attribute(random.choice(['axis', 'perm', 'kernel_shape', 'pads', 'strides', 'group', 'alpha', 'to', 'mode']), random.choice([random.choice(INTS), [random.choice(INTS)] * random.randint(1, 5), 'nearest', 1.5])))
        desc += f' {n.name}'
    elif kind == 'input' and n is not None:
        names = [v.name for v in g.input] + [o for x in nodes for o in x.output] + ['', 'nonexistent']
        r = random.random()
        if r < 0.6 and n.input: n.input[random.randrange(len(n.input))] = random.choice(names)
        elif r < 0.8 and n.input: del n.input[-1]
        else: n.input.append(random.choice(names))
        desc += f' {n.name}'
    elif kind == 'op' and n is not None:
        n.op_type = random.choice(OPS); desc += f' {n.name}->{n.op_type}'
    elif kind == 'init' and g.initializer:
        t = random.choice(g.initializer); desc += f' {t.name}'
        r = random.random()
        if r < 0.3 and t.dims: t.dims[random.randrange(len(t.dims))] = random.choice([0, 1, 3, 7, 100000])
        elif r < 0.5 and t.raw_data: t.raw_data = t.raw_data[: len(t.raw_data) // 2]
        elif r < 0.7: t.data_type = random.choice([TensorProto.INT64, TensorProto.FLOAT16, TensorProto.STRING, TensorProto.BOOL, TensorProto.DOUBLE, 0, 99])
        else: del t.dims[:]
    elif kind == 'gin' and g.input:
        i = random.choice(g.input); dims = i.type.tensor_type.shape.dim
        if dims: dims[random.randrange(len(dims))].dim_value = random.choice([0, 1, 5, 1000])
        desc += f' {i.name}'
    elif kind == 'opset':
        m.opset_import[0].version = random.choice([1, 6, 7, 9, 11, 99]); desc += f' {m.opset_import[0].version}'
    elif kind == 'remove' and nodes:
        g.node.remove(n); desc += f' {n.name}'
    elif kind == 'dupout' and n is not None and len(nodes) > 1:
        other = random.choice(nodes)
        n.output[0] = other.output[0]; desc += f' {n.name}'
    return desc
bad = 0
from collections import Counter
hist = Counter()
for trial in range(N):
    name = random.choice(models)
    base = f'{D}/{name}.onnx'
    m = onnx.load(base)
    ins = inputs_of(base)
    descs = [mutate(m) for _ in range(random.randint(1, 3))]
    path = f'{D}/t_{os.getpid()}.onnx'
    onnx.save(m, path)
    args = []
    for k, (nm, a) in enumerate(ins):
        np.save(f'{D}/in_{os.getpid()}_{k}.npy', a); args += ['-i', f'{nm}={D}/in_{os.getpid()}_{k}.npy']
    cmd = random.choice(['infer', 'check', 'convert', 'train'])
    if cmd == 'infer': c = [BIN, 'infer', path, *args, '-o', f'{D}/out_{os.getpid()}', '--threads', '1']
    elif cmd == 'check': c = [BIN, 'check', path, '--batch', '2', '--threads', '1']
    elif cmd == 'convert': c = [BIN, 'convert', path, '-o', f'{D}/c_{os.getpid()}.onnx']
    else:
        nm, a = ins[0]
        x = np.concatenate([a] * 4)[:8]
        np.save(f'{D}/tx_{os.getpid()}.npy', x); np.save(f'{D}/ty_{os.getpid()}.npy', (np.arange(len(x)) % 2).astype(np.int64))
        c = [BIN, 'train', path, '--epochs', '1', '--steps', '2', '--threads', '1', '--batch', '4', '--train-x', f'{D}/tx_{os.getpid()}.npy', '--train-y', f'{D}/ty_{os.getpid()}.npy', '-o', f'{D}/tr_{os.getpid()}.onnx']
    try:
        p = subprocess.run(c, capture_output=True, text=True, timeout=60)
        rc = p.returncode; err = (p.stderr + p.stdout)[-600:]
    except subprocess.TimeoutExpired:
        rc = 'timeout'; err = ''
    hist[(cmd, rc)] += 1
    if os.environ.get("SHOW") and rc == 1: print(cmd, descs, "::", err.strip().splitlines()[-1][:250] if err.strip() else "(no message)")
    crash = rc == 'timeout' or (isinstance(rc, int) and (rc < 0 or rc > 2)) or 'terminate called' in err or 'internal error' in err.lower() or 'Assertion' in err
    if crash:
        bad += 1
        keep = f'{D}/crash_{sys.argv[1]}_{trial}.onnx'; os.replace(path, keep)
        print(f'CRASH rc={rc} model={name} cmd={cmd} muts={descs} file={keep}\n  {err[-400:]}', flush=True)
print(f'done {N} trials, {bad} crashes', sorted(hist.items(), key=str))
