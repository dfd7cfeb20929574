#!/usr/bin/env bash
# The main job: write the zoo's LeNet-5, train it on Fashion-MNIST (Debian's
# dataset-fashion-mnist) on the CPU reference path, and evaluate the trained model.
#   EPOCHS=1 scripts/train_lenet5.sh     # shorter run
#   scripts/train_lenet5.sh --precision fp16   # extra options go to the train command
# Inputs are normalised with Fashion-MNIST's mean and std (0.2860, 0.3530), as PyTorch's
# reference run does (torchvision Normalize); eval uses the same values.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/onnx-amp-train
OUT=build/lenet5
mkdir -p "$OUT"
"$BIN" zoo lenet5 -o "$OUT/lenet5.onnx" --seed 0
"$BIN" "$OUT/lenet5.onnx" --data fashion-mnist --epochs "${EPOCHS:-5}" --batch 64 \
  --optimizer adam --lr 1e-3 --seed 0 --normalize 0.2860,0.3530 --log "$OUT/lenet5.jsonl" -o "$OUT/lenet5.trained.onnx" "$@"
"$BIN" eval "$OUT/lenet5.trained.onnx" --data fashion-mnist --normalize 0.2860,0.3530
