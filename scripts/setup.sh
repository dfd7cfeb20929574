#!/usr/bin/env bash
# Installs everything onnx-amp-train needs on a Debian bookworm machine (run as root), then
# configures and builds it in ./build. Idempotent: safe to run again.
#
#   scripts/setup.sh            # packages + build
#   SKIP_APT=1 scripts/setup.sh # build only
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SKIP_APT:-}" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends \
    build-essential cmake git ca-certificates \
    libonnx-dev libprotobuf-dev protobuf-compiler libeigen3-dev doctest-dev zlib1g-dev \
    libcli11-dev nlohmann-json3-dev \
    libonnx-testdata dataset-fashion-mnist \
    python3 python3-pip python3-numpy python3-torch python3-torchvision
  # ONNX Runtime (the reference our outputs are checked against) and PyPI's onnx (opset 18+
  # conversion) for whichever python3 is first on PATH. Debian's own python3 is "externally
  # managed" (PEP 668), so fall back to --break-system-packages there.
  # Pinned to the versions the tests last passed with (2026-12-07), so a new release cannot
  # change a reference under CI; raise them together after a full ctest.
  PIP_PKGS="onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 onnxconverter-common==1.16.0"
  python3 -m pip install -q $PIP_PKGS 2>/dev/null ||
    python3 -m pip install -q --break-system-packages $PIP_PKGS
fi

JOBS=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$JOBS"
