#!/usr/bin/env python3
"""Mutates the ai.onnx.ml models of compare_ml_ort.py and runs `infer` on each mutant.

    python3 scripts/fuzz_ml_ops.py [--bin build/onnx-amp-train] [--seed 1] [--mutants 400]

Each mutant changes one to three attributes of a random case (a list truncated, emptied,
lengthened, one element set to -1, 2^31 or a huge value, NaN or inf; an int swapped for a string;
an attribute dropped) or the input (wrong rank, empty, NaN). Every run must exit 0, or 1 with one
`error:` line of ours; a signal, another status or a bare message is a failure. Needs onnx and
numpy (onnxruntime is not used).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import AttributeProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_ml_ort as c  # noqa: E402


def all_cases(rng):
    for gen in [c.features_cases, c.encoder_cases, c.linear_cases, c.svm_cases, c.tree_cases, c.map_cases]:
        yield from gen(rng)


def mutate_attr(rng, node):
    if not node.attribute:
        return "no attributes"
    a = node.attribute[int(rng.integers(0, len(node.attribute)))]
    k = int(rng.integers(0, 6))
    if k == 0:
        node.attribute.remove(a)
        return f"dropped {a.name}"
    if a.type == AttributeProto.INTS and a.ints:
        v = list(a.ints)
        i = int(rng.integers(0, len(v)))
        choice = int(rng.integers(0, 5))
        if choice == 0:
            v = v[: len(v) // 2]
        elif choice == 1:
            v = []
        elif choice == 2:
            v[i] = -1
        elif choice == 3:
            v[i] = int(rng.choice([2**31, 2**62, 7]))
        else:
            v = v + v
        del a.ints[:]
        a.ints.extend(v)
        return f"{a.name} ints mutated"
    if a.type == AttributeProto.FLOATS and a.floats:
        v = list(a.floats)
        choice = int(rng.integers(0, 4))
        if choice == 0:
            v = v[:-1]
        elif choice == 1:
            v[int(rng.integers(0, len(v)))] = float(rng.choice([np.nan, np.inf, -np.inf, 1e38]))
        elif choice == 2:
            v = []
        else:
            v = v * 3
        del a.floats[:]
        a.floats.extend(v)
        return f"{a.name} floats mutated"
    if a.type == AttributeProto.STRINGS and a.strings:
        v = list(a.strings)
        choice = int(rng.integers(0, 3))
        if choice == 0:
            v = v[:-1]
        elif choice == 1:
            v[0] = b"BOGUS"
        else:
            v = []
        del a.strings[:]
        a.strings.extend(v)
        return f"{a.name} strings mutated"
    if a.type == AttributeProto.INT:
        a.i = int(rng.choice([-1, 0, 2**40]))
        return f"{a.name} = {a.i}"
    if a.type == AttributeProto.STRING:
        a.s = b"NOPE"
        return f"{a.name} = NOPE"
    node.attribute.remove(a)
    node.attribute.extend([helper.make_attribute(a.name, "x")])
    return f"{a.name} retyped"


def mutate_input(rng, feeds):
    k = next(iter(feeds))
    x = feeds[k]
    choice = int(rng.integers(0, 3))
    if isinstance(x, dict):  # a map input: emptied, a NaN value, or keys of the other type
        if choice == 0:
            feeds[k] = {}
            return "empty map"
        if choice == 1:
            feeds[k] = {key: float("nan") for key in x}
            return "NaN values"
        feeds[k] = {(str(key) if not isinstance(key, str) else len(key)): v for key, v in x.items()}
        return "keys retyped"
    if choice == 0 and x.ndim >= 1:
        feeds[k] = x.reshape(-1)[:0].reshape((0,) + x.shape[1:]) if x.ndim > 1 else x[:0]
        return "empty input"
    if choice == 1:
        feeds[k] = x.reshape((1,) * 2 + x.shape)
        return "rank + 2"
    if x.dtype.kind == "f":
        y = x.copy()
        y.reshape(-1)[0] = np.nan
        feeds[k] = y
        return "NaN input"
    return "input kept"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/onnx-amp-train")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutants", type=int, default=400)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    base = list(all_cases(np.random.default_rng(a.seed)))
    ok = errors = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for it in range(a.mutants):
            name, m, feeds = base[int(rng.integers(0, len(base)))]
            m2 = type(m)()
            m2.CopyFrom(m)
            feeds = {k: v.copy() for k, v in feeds.items()}
            what = [mutate_attr(rng, m2.graph.node[0]) for _ in range(int(rng.integers(1, 4)))]
            if rng.random() < 0.3:
                what.append(mutate_input(rng, feeds))
            try:
                c.run_ours(a.bin, m2, feeds, tmp)
                ok += 1
            except RuntimeError as e:
                msg = str(e)
                lines = [x for x in msg.splitlines() if not x.startswith("note: ")]
                if len(lines) == 1 and lines[0].startswith("error: "):
                    errors += 1
                else:
                    failed += 1
                    print(f"FAIL {it} {name}: {what}: {msg[:300]}")
            except FileNotFoundError as e:  # a run that succeeded without writing an output
                failed += 1
                print(f"FAIL {it} {name}: {what}: {e}")
    print(f"{ok} ran, {errors} named errors, {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
