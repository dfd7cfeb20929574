#!/usr/bin/env python3
"""Runs every ai.onnx.ml op this runtime has against ONNX Runtime, on random models and inputs.

    python3 scripts/compare_ml_ort.py [--bin build/onnx-amp-train] [--seed 0] [--cases 3] [-v]

Each case is a one-node model (Scaler, ..., TreeEnsembleClassifier, ZipMap, DictVectorizer,
CastMap; map inputs fed as MapProto files) with random attributes in the
shapes and conventions the exporters (skl2onnx, onnxmltools) write, plus the edge cases the spec
allows (NaN inputs with missing_value_tracks_true, string labels, opset 3's *_as_tensor). Both
runtimes run it; float outputs must agree to rtol 1e-5 / atol 1e-5 (NaN where the other has NaN),
integer and string outputs exactly. Prints one line per case and a summary; exit 1 on any
mismatch. Needs the python packages onnx, onnxruntime and numpy (not the project's build).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ML = "ai.onnx.ml"
TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
         np.int32: TensorProto.INT32, np.str_: TensorProto.STRING}


def model(op, inputs, outputs, attrs, ml_opset=3):
    """inputs: [(name, array)], outputs: [(name, elem type)]."""
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], domain=ML, **attrs)
    ins = [helper.make_tensor_value_info(n, TYPES[a.dtype.type], list(a.shape)) for n, a in inputs]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    g = helper.make_graph([node], op.lower(), ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, ml_opset)])
    m.ir_version = 8
    return m


def run_ort(m, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def typed_model(op, inputs, outputs, attrs, ml_opset=1):
    """inputs, outputs: [(name, TypeProto)] (maps and sequences of maps)."""
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], domain=ML, **attrs)
    g = helper.make_graph([node], op.lower(), [helper.make_value_info(n, t) for n, t in inputs],
                          [helper.make_value_info(n, t) for n, t in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, ml_opset)])
    m.ir_version = 8
    return m


def map_proto(d, name):
    """A MapProto in onnx.numpy_helper.from_dict's layout (one scalar tensor per key); string
    keys too, which from_dict does not take."""
    p = onnx.MapProto()
    p.name = name
    keys = list(d)
    if keys and isinstance(keys[0], str):
        p.key_type = TensorProto.STRING
        p.string_keys.extend(k.encode() for k in keys)
    else:
        p.key_type = TensorProto.INT64
        p.keys.extend(int(k) for k in keys)
    p.values.elem_type = onnx.SequenceProto.TENSOR
    for k in keys:
        v = d[k]
        # Python floats as float32 (the maps ONNX Runtime's Python API takes are of float)
        dtype = object if isinstance(v, str) else np.float32 if isinstance(v, float) else None
        p.values.tensor_values.append(numpy_helper.from_array(np.array(v, dtype=dtype)))
    return p


def plain(x):
    """A value read back from our files, in the form ONNX Runtime returns (str keys, numbers)."""
    if isinstance(x, dict):
        return {(k.decode() if isinstance(k, bytes) else k): plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    a = np.asarray(x)
    if a.dtype == object:
        a = np.array([v.decode() if isinstance(v, bytes) else v for v in a.ravel()]).reshape(a.shape)
    return a


def run_ours(binary, m, feeds, tmp):
    path = os.path.join(tmp, "m.onnx")
    onnx.save(m, path)
    args = [binary, "infer", path, "-o", os.path.join(tmp, "out")]
    for k, v in feeds.items():
        if isinstance(v, dict):
            f = os.path.join(tmp, k + ".pb")
            with open(f, "wb") as fh:
                fh.write(map_proto(v, k).SerializeToString())
        else:
            f = os.path.join(tmp, k + ".npy")
            np.save(f, v)
        args += ["-i", f"{k}={f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        msg = r.stderr.strip() or r.stdout.strip()
        raise RuntimeError(msg if r.returncode == 1 else f"exit status {r.returncode}: {msg}")
    outs = []
    for k in range(len(m.graph.output)):
        with open(os.path.join(tmp, "out", f"output_{k}.pb"), "rb") as fh:
            data = fh.read()
        if m.graph.output[k].type.HasField("sequence_type"):
            sp = onnx.SequenceProto()
            sp.ParseFromString(data)
            outs.append(plain(numpy_helper.to_list(sp)))
            continue
        t = onnx.TensorProto()
        t.ParseFromString(data)
        a = numpy_helper.to_array(t)
        if a.dtype == object:
            a = np.array([x.decode() if isinstance(x, bytes) else x for x in a.ravel()]).reshape(a.shape)
        outs.append(a)
    return outs


def same(a, b):
    if isinstance(a, list) or isinstance(b, list):  # sequences (of maps)
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and all(same(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "OUS" or b.dtype.kind in "OUS":
        return a.shape == b.shape and [str(x) for x in a.ravel()] == [str(x) for x in b.ravel()]
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5, atol=1e-5, equal_nan=True))
    return bool(np.array_equal(a, b))


# ---- the cases -------------------------------------------------------------------------------

def f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def features_cases(rng):
    n, c = 5, 4
    x = f32(rng, n, c, scale=3)
    yield "Scaler per feature", model("Scaler", [("X", x)], [("Y", TensorProto.FLOAT)],
                                     dict(offset=list(rng.standard_normal(c)), scale=list(rng.random(c) + 0.5))), {"X": x}
    xi = rng.integers(-5, 5, (n, c)).astype(np.int64)
    yield "Scaler shared, int64 X", model("Scaler", [("X", xi)], [("Y", TensorProto.FLOAT)],
                                         dict(offset=[1.5], scale=[0.25])), {"X": xi}
    xd = rng.standard_normal((n, c))
    yield "Scaler double X", model("Scaler", [("X", xd)], [("Y", TensorProto.FLOAT)],
                                  dict(offset=list(rng.standard_normal(c)), scale=[2.0] * c)), {"X": xd}
    xz = x.copy()
    xz[1] = 0
    for norm in ["MAX", "L1", "L2"]:
        yield f"Normalizer {norm}", model("Normalizer", [("X", xz)], [("Y", TensorProto.FLOAT)], dict(norm=norm)), {"X": xz}
    yield "Binarizer", model("Binarizer", [("X", x)], [("Y", TensorProto.FLOAT)], dict(threshold=0.3)), {"X": x}
    yield "Binarizer int64", model("Binarizer", [("X", xi)], [("Y", TensorProto.INT64)], dict(threshold=1.0)), {"X": xi}
    xn = x.copy()
    xn[rng.random(xn.shape) < 0.3] = np.nan
    yield "Imputer NaN", model("Imputer", [("X", xn)], [("Y", TensorProto.FLOAT)],
                               dict(imputed_value_floats=list(rng.standard_normal(c)), replaced_value_float=float("nan"))), {"X": xn}
    xr = np.round(x).astype(np.float32)
    yield "Imputer value, shared", model("Imputer", [("X", xr)], [("Y", TensorProto.FLOAT)],
                                         dict(imputed_value_floats=[9.0], replaced_value_float=0.0)), {"X": xr}
    yield "Imputer int64", model("Imputer", [("X", xi)], [("Y", TensorProto.INT64)],
                                 dict(imputed_value_int64s=list(range(100, 100 + c)), replaced_value_int64=0)), {"X": xi}
    idx = rng.integers(0, c, 3).astype(np.int64)
    yield "ArrayFeatureExtractor", model("ArrayFeatureExtractor", [("X", x), ("Y", idx)], [("Z", TensorProto.FLOAT)], {}), {"X": x, "Y": idx}
    x3 = f32(rng, 2, 3, c)
    yield "ArrayFeatureExtractor 3-D", model("ArrayFeatureExtractor", [("X", x3), ("Y", idx)], [("Z", TensorProto.FLOAT)], {}), {"X": x3, "Y": idx}
    xs = np.array([["a", "b", "c", "d"], ["e", "f", "g", "h"]])
    yield "ArrayFeatureExtractor strings", model("ArrayFeatureExtractor", [("X", xs), ("Y", idx)], [("Z", TensorProto.STRING)], {}), {"X": xs, "Y": idx}
    a, b = f32(rng, n, 3), f32(rng, n, 2)
    yield "FeatureVectorizer pad+cut", model("FeatureVectorizer", [("A", a), ("B", b)], [("Y", TensorProto.FLOAT)],
                                             dict(inputdimensions=[2, 4])), {"A": a, "B": b}


def encoder_cases(rng):
    words = ["cat", "dog", "fish", "bird", "ant"]
    xs = np.array([words[i] for i in rng.integers(0, 5, 6)] + ["zebra"])
    yield "LabelEncoder v1 string->int", model("LabelEncoder", [("X", xs)], [("Y", TensorProto.INT64)],
                                              dict(classes_strings=words[:4], default_int64=-7), ml_opset=1), {"X": xs}
    xi = np.array([0, 3, 1, 9, -1, 2], dtype=np.int64)
    yield "LabelEncoder v1 int->string", model("LabelEncoder", [("X", xi)], [("Y", TensorProto.STRING)],
                                              dict(classes_strings=words[:4], default_string="?"), ml_opset=1), {"X": xi}
    yield "LabelEncoder v2 string->float", model("LabelEncoder", [("X", xs)], [("Y", TensorProto.FLOAT)],
                                                dict(keys_strings=words, values_floats=[0.5, 1.5, 2.5, 3.5, 4.5], default_float=-1.0), ml_opset=2), {"X": xs}
    yield "LabelEncoder v2 int->string", model("LabelEncoder", [("X", xi)], [("Y", TensorProto.STRING)],
                                              dict(keys_int64s=[0, 1, 2, 3], values_strings=words[:4]), ml_opset=2), {"X": xi}
    xf = np.array([0.5, 2.0, np.nan, 7.0], dtype=np.float32)
    yield "LabelEncoder v2 float->int", model("LabelEncoder", [("X", xf)], [("Y", TensorProto.INT64)],
                                             dict(keys_floats=[0.5, 2.0, 3.0], values_int64s=[10, 20, 30]), ml_opset=2), {"X": xf}
    yield "CategoryMapper string->int", model("CategoryMapper", [("X", xs)], [("Y", TensorProto.INT64)],
                                             dict(cats_strings=words, cats_int64s=[5, 4, 3, 2, 1], default_int64=99)), {"X": xs}
    yield "CategoryMapper int->string", model("CategoryMapper", [("X", xi)], [("Y", TensorProto.STRING)],
                                             dict(cats_strings=words, cats_int64s=[0, 1, 2, 3, 4], default_string="none")), {"X": xi}
    x2 = np.array([[1, 3], [4, 1], [2, 2]], dtype=np.int64)
    yield "OneHotEncoder int64", model("OneHotEncoder", [("X", x2)], [("Y", TensorProto.FLOAT)],
                                       dict(cats_int64s=[1, 2, 3], zeros=1)), {"X": x2}
    yield "OneHotEncoder strings", model("OneHotEncoder", [("X", xs.reshape(1, -1))], [("Y", TensorProto.FLOAT)],
                                         dict(cats_strings=words)), {"X": xs.reshape(1, -1)}
    xf2 = np.array([[1.0, 3.0, 2.7]], dtype=np.float32)
    yield "OneHotEncoder float", model("OneHotEncoder", [("X", xf2)], [("Y", TensorProto.FLOAT)],
                                       dict(cats_int64s=[1, 2, 3])), {"X": xf2}


def linear_cases(rng):
    n, c = 6, 5
    x = f32(rng, n, c)
    for k, post in [(1, "NONE"), (3, "NONE"), (3, "LOGISTIC"), (3, "SOFTMAX")]:
        yield f"LinearRegressor targets={k} {post}", model("LinearRegressor", [("X", x)], [("Y", TensorProto.FLOAT)],
                                                          dict(coefficients=list(rng.standard_normal(k * c)),
                                                               intercepts=list(rng.standard_normal(k)), targets=k,
                                                               post_transform=post)), {"X": x}
    for post in ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"]:
        yield f"LinearClassifier 3 classes {post}", model(
            "LinearClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)],
            dict(coefficients=list(rng.standard_normal(3 * c)), intercepts=list(rng.standard_normal(3)),
                 classlabels_ints=[4, 7, 9], post_transform=post)), {"X": x}
    yield "LinearClassifier strings", model(
        "LinearClassifier", [("X", x)], [("Y", TensorProto.STRING), ("Z", TensorProto.FLOAT)],
        dict(coefficients=list(rng.standard_normal(4 * c)), intercepts=list(rng.standard_normal(4)),
             classlabels_strings=["a", "b", "c", "d"], post_transform="SOFTMAX")), {"X": x}
    for post in ["NONE", "LOGISTIC", "SOFTMAX"]:
        yield f"LinearClassifier binary, 2 labels, {post}", model(
            "LinearClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)],
            dict(coefficients=list(rng.standard_normal(c)), intercepts=[0.1], classlabels_ints=[3, 8],
                 post_transform=post)), {"X": x}
    xi = rng.integers(-3, 3, (n, c)).astype(np.int64)
    yield "LinearClassifier int64 X", model(
        "LinearClassifier", [("X", xi)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)],
        dict(coefficients=list(rng.standard_normal(2 * c)), intercepts=[0.0, 0.5], classlabels_ints=[0, 1])), {"X": xi}


def svm_cases(rng):
    n, c, sv = 6, 4, 5
    x = f32(rng, n, c)
    for kern in ["LINEAR", "POLY", "RBF", "SIGMOID"]:
        yield f"SVMRegressor {kern}", model("SVMRegressor", [("X", x)], [("Y", TensorProto.FLOAT)],
                                            dict(coefficients=list(rng.standard_normal(sv)), support_vectors=list(rng.standard_normal(sv * c)),
                                                 n_supports=sv, rho=[0.3], kernel_type=kern, kernel_params=[0.5, 0.2, 3.0])), {"X": x}
    # ONNX Runtime requires kernel_params, which the spec makes optional
    yield "SVMRegressor linear mode", model("SVMRegressor", [("X", x)], [("Y", TensorProto.FLOAT)],
                                            dict(coefficients=list(rng.standard_normal(c)), n_supports=0, rho=[0.1],
                                                 kernel_params=[0.0, 0.0, 0.0])), {"X": x}
    yield "SVMRegressor one_class", model("SVMRegressor", [("X", x)], [("Y", TensorProto.FLOAT)],
                                          dict(coefficients=list(rng.standard_normal(sv)), support_vectors=list(rng.standard_normal(sv * c)),
                                               n_supports=sv, rho=[-0.2], kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], one_class=1)), {"X": x}
    per = [2, 3, 2]
    v = sum(per)
    base = dict(vectors_per_class=per, support_vectors=list(rng.standard_normal(v * c)),
                coefficients=list(rng.standard_normal(2 * v)), rho=list(rng.standard_normal(3)),
                kernel_type="RBF", kernel_params=[0.4, 0.0, 0.0], classlabels_ints=[1, 2, 3])
    yield "SVMClassifier 3 classes, votes", model("SVMClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], base), {"X": x}
    pb = dict(base, prob_a=list(-rng.random(3) - 0.5), prob_b=list(rng.standard_normal(3) * 0.1))
    yield "SVMClassifier 3 classes, probabilities", model("SVMClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], pb), {"X": x}
    per2 = [3, 2]
    b2 = dict(vectors_per_class=per2, support_vectors=list(rng.standard_normal(5 * c)),
              coefficients=list(rng.standard_normal(5)), rho=[0.05], kernel_type="POLY",
              kernel_params=[0.3, 1.0, 2.0], classlabels_strings=["no", "yes"])
    for post in ["NONE", "LOGISTIC", "SOFTMAX"]:
        yield f"SVMClassifier binary {post}", model("SVMClassifier", [("X", x)], [("Y", TensorProto.STRING), ("Z", TensorProto.FLOAT)],
                                                   dict(b2, post_transform=post)), {"X": x}
    b2p = dict(b2, prob_a=[-1.3], prob_b=[0.1])
    yield "SVMClassifier binary, probabilities", model("SVMClassifier", [("X", x)], [("Y", TensorProto.STRING), ("Z", TensorProto.FLOAT)], b2p), {"X": x}
    yield "SVMClassifier linear mode", model("SVMClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)],
                                             dict(coefficients=list(rng.standard_normal(3 * c)), rho=[0.2], classlabels_ints=[0, 1, 2],
                                                  kernel_params=[0.0, 0.0, 0.0])), {"X": x}


MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def random_trees(rng, trees, depth, features, ids, prefix, modes=("BRANCH_LEQ",), weight_ids=None,
                 positive=False, grid=False):
    """A forest of full trees; leaves get one weight per id in weight_ids (default: a random id)."""
    a = {k: [] for k in ["nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                         "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true"]}
    w = {k: [] for k in [f"{prefix}_treeids", f"{prefix}_nodeids", f"{prefix}_ids", f"{prefix}_weights"]}
    for t in range(trees):
        count = 2 ** (depth + 1) - 1
        order = list(range(count))
        rng.shuffle(order)  # node ids need not follow the layout
        for i in range(count):
            leaf = i >= 2 ** depth - 1
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(order[i])
            a["nodes_featureids"].append(0 if leaf else int(rng.integers(0, features)))
            v = float(np.round(rng.standard_normal())) if grid else float(rng.standard_normal())
            a["nodes_values"].append(0.0 if leaf else v)
            a["nodes_modes"].append("LEAF" if leaf else str(rng.choice(modes)))
            a["nodes_truenodeids"].append(0 if leaf else order[2 * i + 1])
            a["nodes_falsenodeids"].append(0 if leaf else order[2 * i + 2])
            a["nodes_missing_value_tracks_true"].append(int(rng.integers(0, 2)))
            if leaf:
                for k in (weight_ids if weight_ids is not None else [int(rng.integers(0, ids))]):
                    w[f"{prefix}_treeids"].append(t)
                    w[f"{prefix}_nodeids"].append(order[i])
                    w[f"{prefix}_ids"].append(k)
                    w[f"{prefix}_weights"].append(float(rng.random() if positive else rng.standard_normal()))
    a.update(w)
    return a


def tree_cases(rng):
    n, f = 40, 5
    x = f32(rng, n, f)
    x[rng.random(x.shape) < 0.1] = np.nan
    for agg in ["SUM", "AVERAGE", "MIN", "MAX"]:
        attrs = random_trees(rng, 4, 3, f, 3, "target", modes=MODES[:4])
        attrs.update(n_targets=3, aggregate_function=agg, base_values=[0.5, -1.0, 2.0])
        yield f"TreeEnsembleRegressor {agg}, 3 targets", model("TreeEnsembleRegressor", [("X", x)], [("Y", TensorProto.FLOAT)], attrs), {"X": x}
    attrs = random_trees(rng, 10, 4, f, 1, "target")
    attrs.update(n_targets=1, base_values=[0.25])
    yield "TreeEnsembleRegressor 1 target", model("TreeEnsembleRegressor", [("X", x)], [("Y", TensorProto.FLOAT)], attrs), {"X": x}
    xg = np.round(f32(rng, n, f)).astype(np.float32)
    attrs = random_trees(rng, 3, 3, f, 1, "target", modes=MODES, grid=True)
    attrs.update(n_targets=1)
    yield "TreeEnsembleRegressor EQ/NEQ modes", model("TreeEnsembleRegressor", [("X", xg)], [("Y", TensorProto.FLOAT)], attrs), {"X": xg}
    xd = rng.standard_normal((n, f))
    attrs = random_trees(rng, 3, 3, f, 2, "target")
    values = attrs.pop("nodes_values")
    weights = attrs.pop("target_weights")
    attrs.update(n_targets=2, nodes_values_as_tensor=numpy_helper.from_array(np.array(values, np.float64)),
                 target_weights_as_tensor=numpy_helper.from_array(np.array(weights, np.float64)))
    yield "TreeEnsembleRegressor double X, *_as_tensor", model("TreeEnsembleRegressor", [("X", xd)], [("Y", TensorProto.FLOAT)], attrs), {"X": xd}
    # classifiers
    attrs = random_trees(rng, 5, 3, f, 4, "class", weight_ids=[0, 1, 2, 3])
    attrs.update(classlabels_int64s=[10, 20, 30, 40], base_values=[0.1, 0.2, -0.3, 0.0], post_transform="SOFTMAX")
    yield "TreeEnsembleClassifier 4 classes SOFTMAX (GBT)", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], attrs), {"X": x}
    attrs = random_trees(rng, 5, 3, f, 3, "class", weight_ids=[0, 1, 2], positive=True)
    attrs.update(classlabels_strings=["r", "g", "b"])
    yield "TreeEnsembleClassifier 3 classes strings (RF)", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.STRING), ("Z", TensorProto.FLOAT)], attrs), {"X": x}
    attrs = random_trees(rng, 5, 3, f, 2, "class", weight_ids=[1], positive=True)
    for k in range(len(attrs["class_weights"])):
        attrs["class_weights"][k] /= 5
    attrs.update(classlabels_int64s=[0, 1])
    yield "TreeEnsembleClassifier binary, class 1 only, positive", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], attrs), {"X": x}
    attrs = random_trees(rng, 6, 3, f, 2, "class", weight_ids=[0])
    attrs.update(classlabels_int64s=[0, 1], base_values=[0.3], post_transform="LOGISTIC")
    yield "TreeEnsembleClassifier binary GBT LOGISTIC", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], attrs), {"X": x}
    attrs = random_trees(rng, 6, 3, f, 2, "class", weight_ids=[0])
    attrs.update(classlabels_strings=["neg", "pos"], base_values=[-0.2])
    yield "TreeEnsembleClassifier binary mixed NONE strings", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.STRING), ("Z", TensorProto.FLOAT)], attrs), {"X": x}
    for post in ["NONE", "LOGISTIC", "SOFTMAX"]:
        attrs = random_trees(rng, 3, 2, f, 2, "class", weight_ids=[int(rng.integers(0, 2))], positive=bool(rng.integers(0, 2)))
        attrs.update(classlabels_int64s=[0, 1], post_transform=post)
        if rng.integers(0, 2):
            attrs.update(base_values=[float(rng.standard_normal())])
        yield f"TreeEnsembleClassifier binary one class {post}", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], attrs), {"X": x}
    attrs = random_trees(rng, 4, 3, f, 2, "class", weight_ids=[0, 1], positive=True)
    attrs.update(classlabels_int64s=[0, 1])
    yield "TreeEnsembleClassifier binary, both classes", model("TreeEnsembleClassifier", [("X", x)], [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)], attrs), {"X": x}


def map_cases(rng):
    T = helper.make_tensor_type_proto
    def map_t(key, value):
        return helper.make_map_type_proto(key, T(value, None))
    seq_map = lambda key: helper.make_sequence_type_proto(map_t(key, TensorProto.FLOAT))
    n, c = 4, 3
    x = rng.random((n, c)).astype(np.float32)
    labels = [f"class_{i}" for i in rng.permutation(c)]
    yield "ZipMap string labels", typed_model("ZipMap", [("X", T(TensorProto.FLOAT, [n, c]))], [("Z", seq_map(TensorProto.STRING))],
                                              dict(classlabels_strings=labels)), {"X": x}
    ids = [int(v) for v in rng.choice(100, c, replace=False) - 50]
    yield "ZipMap int64 labels", typed_model("ZipMap", [("X", T(TensorProto.FLOAT, [n, c]))], [("Z", seq_map(TensorProto.INT64))],
                                             dict(classlabels_int64s=ids)), {"X": x}
    x1 = x[0].copy()
    yield "ZipMap 1-D X", typed_model("ZipMap", [("X", T(TensorProto.FLOAT, [c]))], [("Z", seq_map(TensorProto.INT64))],
                                      dict(classlabels_int64s=ids)), {"X": x1}
    # ONNX Runtime's Python API feeds maps of float values only (map(string | int64, float)):
    # the double, int64 and string maps are checked by tests/runtime/ml_maps_test.cc instead.
    words = ["a", "bb", "c", "dd", "e", "ff"]
    present = [w for w in words if rng.random() < 0.6] or ["a"]
    vocab = [words[i] for i in rng.permutation(len(words))[:4]]
    d = {w: float(rng.integers(-9, 9)) for w in present}
    yield "DictVectorizer string->float", typed_model(
        "DictVectorizer", [("X", map_t(TensorProto.STRING, TensorProto.FLOAT))], [("Y", T(TensorProto.FLOAT, None))],
        dict(string_vocabulary=vocab)), {"X": d}
    ikeys = [int(k) for k in rng.choice(20, 5, replace=False)]
    ivocab = [int(k) for k in rng.choice(20, 6, replace=False)]
    d = {k: float(rng.standard_normal()) for k in ikeys}
    yield "DictVectorizer int64->float", typed_model(
        "DictVectorizer", [("X", map_t(TensorProto.INT64, TensorProto.FLOAT))], [("Y", T(TensorProto.FLOAT, None))],
        dict(int64_vocabulary=ivocab)), {"X": d}
    fkeys = [int(k) for k in rng.choice(8, 5, replace=False)]
    fmap = {k: float(np.float32(rng.standard_normal() * 50)) for k in fkeys}
    outs = {"TO_FLOAT": TensorProto.FLOAT, "TO_INT64": TensorProto.INT64, "TO_STRING": TensorProto.STRING}
    for cast_to, out in outs.items():
        for form in ["DENSE", "SPARSE"]:
            attrs = dict(cast_to=cast_to, map_form=form)
            if form == "SPARSE":
                attrs["max_map"] = int(rng.integers(1, 10))
            yield f"CastMap float {cast_to} {form}", typed_model(
                "CastMap", [("X", map_t(TensorProto.INT64, TensorProto.FLOAT))], [("Y", T(out, None))], attrs), {"X": fmap}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/onnx-amp-train")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", type=int, default=3, help="random draws of every case")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    bad = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for draw in range(a.cases):
            rng = np.random.default_rng(a.seed * 1000 + draw)
            for gen in [features_cases, encoder_cases, linear_cases, svm_cases, tree_cases, map_cases]:
                for name, m, feeds in gen(rng):
                    total += 1

                    try:
                        ref = run_ort(m, feeds)
                    except Exception as e:  # noqa: BLE001
                        print(f"SKIP  {name}: ONNX Runtime refuses it: {str(e).splitlines()[0][:150]}")
                        continue
                    try:
                        got = run_ours(a.bin, m, feeds, tmp)
                    except RuntimeError as e:
                        bad += 1
                        print(f"FAIL  {name}: {e}")
                        continue
                    ok = all(same(g, r) for g, r in zip(got, ref))
                    if not ok:
                        bad += 1
                        print(f"FAIL  {name} (draw {draw})")
                        for g, r in zip(got, ref):
                            show = (lambda v: v[:3]) if isinstance(g, list) else (lambda v: np.asarray(v).ravel()[:12])
                            print("   ours", show(g), "\n   ort ", show(r))
                    elif a.verbose or draw == 0:
                        print(f"ok    {name}")
    print(f"{total - bad} of {total} cases agree with ONNX Runtime")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
