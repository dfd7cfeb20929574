#!/usr/bin/env python3
"""torchvision detection models exported by torch.onnx (opset 11, random weights), run through
`onnx-amp-train infer` and compared with ONNX Runtime and with PyTorch itself.

    python3 scripts/check_torchvision_detection.py [frcnn|ssd|mask|ops ...]   (default: all)

frcnn: fasterrcnn_mobilenet_v3_large_320_fpn (NonZero, NonMaxSuppression inside If, RoiAlign);
ssd:   ssdlite320_mobilenet_v3_large; mask: maskrcnn_resnet50_fpn at 256 px (also a Loop);
ops:   batched_nms + roi_align alone, at opsets 11 and 16.
The export runs under Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision 0.14);
this script needs numpy, onnx and onnxruntime (pip). OAT_BIN (default build/onnx-amp-train) is the
binary; files go to $OAT_WORK (default /tmp/oat_tv). The README's "Detection" numbers are its
output. Detections whose scores nearly tie may come out in another order in one runtime (random
weights make many), so each of our boxes is also matched to the nearest reference box.
"""
import os, subprocess, sys, textwrap
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper as nh

W = os.environ.get("OAT_WORK", "/tmp/oat_tv"); os.makedirs(W, exist_ok=True)
BIN = os.environ.get("OAT_BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "build", "onnx-amp-train"))
EXPORT = textwrap.dedent("""
    import sys, torch, torchvision, numpy as np
    from torchvision.ops import batched_nms, roi_align
    W, which = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    D = torchvision.models.detection
    if which == "ops":
        class M(torch.nn.Module):
            def forward(self, feats, boxes, scores, idxs):
                keep = batched_nms(boxes, scores, idxs, 0.4)
                rois = torch.cat([torch.zeros(boxes.shape[0], 1), boxes], 1)
                a = roi_align(feats, rois, (3, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)
                b = roi_align(feats, rois, (2, 2), spatial_scale=0.5, sampling_ratio=-1, aligned=False)
                return keep, a, b
        xy = torch.rand(20, 2) * 20
        ins = (torch.randn(1, 4, 16, 16), torch.cat([xy, xy + torch.rand(20, 2) * 10 + 1], 1),
               torch.rand(20), torch.randint(0, 3, (20,)))
        names = ["feats", "boxes", "scores", "idxs"]
        for opset in (11, 16):
            torch.onnx.export(M(), ins, f"{W}/ops{opset}.onnx", opset_version=opset,
                              input_names=names, output_names=["keep", "a", "b"])
        for n, v in zip(names, ins): np.save(f"{W}/ops_in_{n}.npy", v.numpy())
        for k, v in enumerate(M()(*ins)): np.save(f"{W}/ops_ref{k}.npy", v.numpy())
        sys.exit(0)
    if which == "frcnn":
        m = D.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                    num_classes=5, box_score_thresh=0.0)
    elif which == "ssd":
        m = D.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5,
                                            score_thresh=0.0)
    else:
        m = D.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=5,
                                    min_size=256, max_size=256, box_score_thresh=0.0)
    m.eval()
    x = torch.rand(3, 256, 256) if which != "frcnn" else torch.rand(3, 320, 320)
    with torch.no_grad(): out = m([x])[0]
    torch.onnx.export(m, ([x],), f"{W}/{which}.onnx", opset_version=11, input_names=["image"],
                      output_names=list(out.keys()))
    np.save(f"{W}/{which}_in_image.npy", x.numpy())
    for k, v in enumerate(out.values()): np.save(f"{W}/{which}_ref{k}.npy", v.numpy())
""")


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return nh.to_array(t)


def check(which):
    subprocess.run(["/usr/bin/python3", "-c", EXPORT, W, which], check=True,
                   stderr=subprocess.DEVNULL)
    models = [f"ops{o}" for o in (11, 16)] if which == "ops" else [which]
    for name in models:
        path = f"{W}/{name}.onnx"
        inputs = [i.name for i in onnx.load(path).graph.input]
        feeds = {n: np.load(f"{W}/{which}_in_{n}.npy") for n in inputs}
        want = ort.InferenceSession(path).run(None, feeds)
        out = f"{W}/{name}_out"
        args = sum([["-i", f"{n}={W}/{which}_in_{n}.npy"] for n in inputs], [])
        subprocess.run([BIN, "infer", path, *args, "-o", out], check=True, stdout=subprocess.DEVNULL)
        for k, w in enumerate(want):
            got, ref = read_pb(f"{out}/output_{k}.pb"), np.load(f"{W}/{which}_ref{k}.npy")
            d = lambda a, b: (f"{np.abs(a.astype(float) - b).max():.3g}"
                              if a.shape == b.shape and a.size else f"shapes {a.shape} {b.shape}")
            line = f"{name} output {k} {got.shape}: vs ONNX Runtime {d(got, w)}, vs PyTorch {d(got, ref)}"
            if got.ndim == 2 and got.shape[1] == 4 and got.shape == w.shape and len(got):
                near = max(np.abs(w - b).max(1).min() for b in got)
                line += f" (nearest ONNX Runtime box {near:.3g})"
            print(line)


for which in sys.argv[1:] or ["ops", "frcnn", "ssd", "mask"]:
    check(which)
