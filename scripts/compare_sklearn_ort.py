#!/usr/bin/env python3
"""Real scikit-learn models, exported by skl2onnx, run by this runtime, ONNX Runtime and sklearn.

    python3 -m venv /tmp/skl && /tmp/skl/bin/pip install scikit-learn skl2onnx onnxruntime
    /tmp/skl/bin/python scripts/compare_sklearn_ort.py [--bin build/onnx-amp-train]

A development check, not part of ctest (the CI machine has no scikit-learn): each model is fitted
on synthetic data, converted with zipmap off at opsets {'': 17, 'ai.onnx.ml': 3}, and run on 200
held-out rows (then four classifiers exported as skl2onnx does by default, with ZipMap's
sequence of maps, and DictVectorizer pipelines fed one map per run); labels must equal ONNX Runtime's exactly and probabilities / values agree to
1e-3 of the largest |value| (both compute in float32; summation order differs). The table also gives how often the label equals
sklearn's own predict (float32 rounding of features near a threshold can flip a few).
"""
import argparse
import os
import warnings
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ml_ort import run_ours  # noqa: E402


def as_list(v):
    return v if isinstance(v, list) else None


def compare(got, ref):
    """(label agreement text, max abs diff, largest |value|, mismatches) over the outputs; a
    sequence of maps (ZipMap) compares its keys exactly and its values as numbers."""
    same_label, diff, top, bad = "", 0.0, 0.0, 0
    for g, r in zip(got, ref):
        if as_list(r) is not None:
            if not isinstance(g, list) or len(g) != len(r) or any(sorted(a) != sorted(b) for a, b in zip(g, r)):
                bad += 1
                continue
            g = np.array([[float(a[k]) for k in sorted(a)] for a in g])
            r = np.array([[float(b[k]) for k in sorted(b)] for b in r])
        r = np.asarray(r)
        if r.dtype.kind in "iUO" or g.dtype.kind in "iUO":
            eq = [str(p) for p in g.ravel()] == [str(q) for q in r.ravel()]
            same_label = f"{np.mean([str(p) == str(q) for p, q in zip(g.ravel(), r.ravel())]) * 100:.1f}%"
            bad += 0 if eq else 1
        else:
            d = float(np.nanmax(np.abs(g.astype(np.float64) - r.astype(np.float64)))) if g.size else 0.0
            diff = max(diff, d)
            scale = max(1.0, float(np.nanmax(np.abs(r)))) if r.size else 1.0
            top = max(top, scale)
            bad += 0 if d <= 1e-3 * scale else 1
    return same_label, diff, top, bad


def map_models():
    """Classifiers with skl2onnx's default ZipMap output, and DictVectorizer pipelines."""
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.tree import DecisionTreeRegressor
    xm, ym = make_classification(600, 8, n_informative=6, n_classes=4, n_clusters_per_class=1, random_state=1)
    xm = xm.astype(np.float32)
    yield "LogisticRegression 4 classes, ZipMap", LogisticRegression(max_iter=500), xm, ym, None
    yield "RandomForestClassifier 4 classes, ZipMap", RandomForestClassifier(20, max_depth=6, random_state=0), xm, ym, None
    names = np.array(["ant", "bee", "cat", "dog"])
    yield "LogisticRegression string labels, ZipMap", LogisticRegression(max_iter=500), xm, names[ym], None
    yield "RandomForestClassifier binary string labels, ZipMap", RandomForestClassifier(20, max_depth=5, random_state=0), xm, names[ym % 2], None
    rng = np.random.default_rng(4)
    words = [f"f{i}" for i in range(10)]
    dicts = [{w: float(rng.integers(1, 9)) for w in rng.choice(words, rng.integers(1, 6), replace=False)} for _ in range(300)]
    yv = np.array([sum(d.values()) + 3 * d.get("f3", 0) for d in dicts])
    yield "DictVectorizer + DecisionTreeRegressor", make_pipeline(DictVectorizer(sparse=False), DecisionTreeRegressor(max_depth=6, random_state=0)), dicts, yv, "str"
    yc = (yv > np.median(yv)).astype(np.int64)
    yield "DictVectorizer + LogisticRegression, ZipMap", make_pipeline(DictVectorizer(sparse=False), LogisticRegression(max_iter=500)), dicts, yc, "str"


def map_rows(a, tmp, ort):
    """The map_models() table rows; returns the mismatch count."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType
    bad = 0
    for name, est, x, y, dict_keys in map_models():
        est.fit(x[:200] if dict_keys else x[:400], y[:200] if dict_keys else y[:400])
        if dict_keys:
            m = to_onnx(est, initial_types=[("X", DictionaryType(StringTensorType([1]), FloatTensorType([1])))],
                        target_opset={"": 17, "ai.onnx.ml": 3})
            runs = [{"X": d} for d in x[200:260]]
        else:
            m = to_onnx(est, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
            runs = [{m.graph.input[0].name: x[400:]}]
        path = os.path.join(tmp, "model.onnx")
        onnx.save(m, path)
        ml_ops = sorted({n.op_type for n in m.graph.node if n.domain == "ai.onnx.ml"})
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        labels_ok, diff, top, fails, err = [], 0.0, 0.0, 0, ""
        for feeds in runs:
            ref = s.run(None, feeds)
            try:
                got = run_ours(a.bin, m, feeds, tmp)
            except RuntimeError as e:
                err = str(e)
                break
            lab, d, t, b = compare(got, ref)
            labels_ok.append(lab)
            diff, top, fails = max(diff, d), max(top, t), fails + b
        if err:
            bad += 1
            print(f"| {name} | {', '.join(ml_ops)} | FAILED: {err} | | |")
            continue
        bad += fails
        lab = labels_ok[0]
        if len(runs) > 1:  # one map per run: the share of runs whose label equals ONNX Runtime's
            with_labels = [x for x in labels_ok if x]
            share = np.mean([x == "100.0%" for x in with_labels]) * 100 if with_labels else None
            lab = (f"{share:.1f}%" if share is not None else "—") + f" ({len(runs)} maps, one a run)"
        print(f"| {name} | {', '.join(ml_ops)} | {lab or '—'} | {diff:.2e} ({top:.3g}) | — |")
    return bad


def models():
    from sklearn.compose import ColumnTransformer
    from sklearn.datasets import make_classification, make_regression
    from sklearn.decomposition import PCA
    from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge, SGDClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, Normalizer, OneHotEncoder, StandardScaler
    from sklearn.svm import SVC, SVR, LinearSVC, NuSVR
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    xb, yb = make_classification(600, 8, n_informative=5, random_state=0)
    xm, ym = make_classification(600, 8, n_informative=6, n_classes=4, n_clusters_per_class=1, random_state=1)
    xr, yr = make_regression(600, 8, noise=0.5, random_state=2)
    xb, xm, xr = (a.astype(np.float32) for a in (xb, xm, xr))
    yield "LogisticRegression binary", LogisticRegression(), xb, yb, True
    yield "StandardScaler + LogisticRegression 4 classes", make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)), xm, ym, True
    yield "SGDClassifier (hinge) 4 classes", SGDClassifier(random_state=0), xm, ym, True
    yield "LinearSVC binary", LinearSVC(), xb, yb, True
    yield "DecisionTreeClassifier 4 classes", DecisionTreeClassifier(max_depth=6, random_state=0), xm, ym, True
    yield "RandomForestClassifier binary", RandomForestClassifier(30, max_depth=6, random_state=0), xb, yb, True
    yield "RandomForestClassifier 4 classes", RandomForestClassifier(30, max_depth=6, random_state=0), xm, ym, True
    yield "GradientBoostingClassifier binary", GradientBoostingClassifier(n_estimators=40, random_state=0), xb, yb, True
    yield "GradientBoostingClassifier 4 classes", GradientBoostingClassifier(n_estimators=30, random_state=0), xm, ym, True
    yield "SVC rbf, probability", SVC(probability=True, random_state=0), xm, ym, True
    yield "SVC poly binary", make_pipeline(MinMaxScaler(), SVC(kernel="poly", degree=3)), xb, yb, True
    yield "KNeighborsClassifier", KNeighborsClassifier(5), xm, ym, True
    yield "MLPClassifier", MLPClassifier((32,), max_iter=300, random_state=0), xm, ym, True
    yield "LinearRegression", LinearRegression(), xr, yr, False
    yield "Normalizer + Ridge", make_pipeline(Normalizer(), Ridge()), xr, yr, False
    yield "PCA + Ridge", make_pipeline(PCA(4), Ridge()), xr, yr, False
    yield "DecisionTreeRegressor", DecisionTreeRegressor(max_depth=8, random_state=0), xr, yr, False
    yield "RandomForestRegressor", RandomForestRegressor(30, max_depth=6, random_state=0), xr, yr, False
    yield "GradientBoostingRegressor", GradientBoostingRegressor(n_estimators=40, random_state=0), xr, yr, False
    yield "SVR rbf", make_pipeline(StandardScaler(), SVR()), xr, yr, False
    yield "NuSVR linear", make_pipeline(StandardScaler(), NuSVR(kernel="linear")), xr, yr, False
    xn = xr.copy()
    xn[np.random.default_rng(0).random(xn.shape) < 0.1] = np.nan
    yield "SimpleImputer + RandomForestRegressor", make_pipeline(SimpleImputer(), RandomForestRegressor(20, max_depth=5, random_state=0)), xn, yr, False
    # one string column one-hot encoded beside the numbers
    cats = np.array(["red", "green", "blue"])[np.random.default_rng(3).integers(0, 3, len(xb))]
    yield ("ColumnTransformer(OneHotEncoder strings, StandardScaler) + LogisticRegression",
           make_pipeline(ColumnTransformer([("cat", OneHotEncoder(), [0]), ("num", StandardScaler(), [1, 2, 3])]),
                         LogisticRegression()), (cats, xb[:, :3]), yb, True)


def convert(name, est, x):
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    opts = {id(est): {"zipmap": False}} if hasattr(est, "predict_proba") or hasattr(est, "decision_function") else None
    if isinstance(x, tuple):
        inputs = [("cat", StringTensorType([None, 1])), ("num", FloatTensorType([None, x[1].shape[1]]))]
        return to_onnx(est, initial_types=inputs, target_opset={"": 17, "ai.onnx.ml": 3}, options=opts)
    try:
        return to_onnx(est, x[:1], target_opset={"": 17, "ai.onnx.ml": 3}, options=opts)
    except (NameError, RuntimeError, ValueError):
        return to_onnx(est, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})


def main():
    import onnxruntime as ort
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/onnx-amp-train")
    a = ap.parse_args()
    bad = 0
    print("| model | ai.onnx.ml ops | label = ORT | max abs diff vs ORT (largest \\|value\\|) | label = sklearn |")
    print("| --- | --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, est, x, y, classifier in models():
            if isinstance(x, tuple):
                train = np.column_stack([x[0], x[1]]).astype(object)
                est.fit(train[:400], y[:400])
                feeds = {"cat": x[0][400:].reshape(-1, 1), "num": x[1][400:]}
                ref_x = train[400:]
                m = convert(name, est, x)
            else:
                est.fit(x[:400], y[:400])
                feeds = {"X": x[400:]}
                ref_x = x[400:]
                m = convert(name, est, x)
                feeds = {m.graph.input[0].name: x[400:]}
            path = os.path.join(tmp, "model.onnx")
            onnx.save(m, path)
            ml_ops = sorted({n.op_type for n in m.graph.node if n.domain == "ai.onnx.ml"})
            s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            ref = s.run(None, feeds)
            try:
                got = run_ours(a.bin, m, feeds, tmp)
            except RuntimeError as e:
                bad += 1
                print(f"| {name} | {', '.join(ml_ops)} | FAILED: {e} | | |")
                continue
            same_label, diff, top, b = compare(got, ref)
            bad += b
            sk = est.predict(ref_x)
            label = got[0].ravel()
            agree = np.mean([str(p) == str(q) for p, q in zip(label, sk)]) if classifier else float("nan")
            sk_txt = f"{agree * 100:.1f}%" if classifier else "—"
            print(f"| {name} | {', '.join(ml_ops) or '(none)'} | {same_label or '—'} | {diff:.2e} ({top:.3g}) | {sk_txt} |")
        bad += map_rows(a, tmp, ort)
    print(f"\n{'all agree' if not bad else f'{bad} mismatches'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
