#!/usr/bin/env bash
# scripts/gpu_session.sh: everything issue #5 item 6 asks of a lent GPU, in one device call.
#
# Run ON the device machine, from the repository root, with one of two carries:
#
#   prebuilt (preferred: no build on the device's clock): binaries built here by
#   scripts/make_device_bundle.sh (a CUDA build for sm_90, stripped, with the Debian libraries):
#     device run, carry [".carry/bundle"], timeout_s 600:
#       bash scripts/gpu_session.sh
#   (with .carry/bundle/bundle.tar.xz present the build dir is build-prebuilt/, which the bundle
#   phase unpacks it into, and the phases are env,bundle,cuda_tests,check,export,bench,kernels)
#
#   build on the device: headers and libraries made here by scripts/make_device_carry.sh:
#     device run, carry [".carry"], timeout_s 600:
#       bash scripts/gpu_session.sh
#
# Phases, in this order (OAT_PHASES picks and orders them; comma-separated):
#   env        the machine: nvidia-smi, nvcc, g++, cmake, python3/torch/torchvision, where cuDNN
#              and cuBLAS are (the toolkit, or pip's nvidia/* folders of the torch install)
#   bundle     (prebuilt only) unpacks .carry/bundle/bundle.tar.xz; the binaries load here: glibc new enough, every library
#              found (lib/fallback's libstdc++ added only when the device's is too old); sets
#              OAT_CLI so cuda_tests' CLI cases run the carried onnx-amp-train
#   configure  cmake Release, CUDA on (OAT_CUDA=ON), sm_90 only, Ninja when there, against
#              .carry/root only for the Debian packages (CMAKE_PREFIX_PATH, CPATH, LD_LIBRARY_PATH)
#   build      onnx-amp-train, oat_train_step, cuda_tests (-j $OAT_JOBS, default nproc)
#   cuda_tests build/tests/cuda_tests: backends agree, zoo coverage, CLI on the device
#   check      `onnx-amp-train check` on every zoo model (zoo -o MODEL.onnx) and the Keras
#              fixtures (tests/data/keras) and the Hugging Face ones (tests/data/hf)
#              x fp16, bf16, fp32
#   export     torchvision ResNet-18 exported by torch.onnx (scripts/export_torchvision.py: eval
#              export with BN folded, opset 13; training export, opset 15), then `check` on both
#              x fp16, bf16, fp32, and `check --forward-only` fp16 on the eval export; says
#              so and goes on when torchvision is missing
#   bench      bench/train_vs_torch_amp.py: ours fp32/fp16 vs PyTorch fp32/AMP, samples/s, for
#              mlp, resnet18-cifar (32x32), resnet18 (224x224), transformer
#   kernels    bench/cuda_ops.cc: microseconds and GB/s of single kernels (reductions, LayerNormGrad,
#              softmax rows, Dropout/RandomNormalLike) at the bench models' shapes, F32 and F16
#              (OAT_KERNELS_ARGS, e.g. "--small --repeat 1" on the emulator)
#   ctest      builds the remaining test suites and runs ctest (-E conformance: ONNX's test data
#              is not carried), whatever time is left
#
# Time: the device tool stops a command at 600 s. Each phase gets the time left before
# OAT_DEADLINE seconds (default 560) from the start; a phase that would start with less than
# its minimum is skipped and the summary says so. If the build alone eats the budget, call
# again AT ONCE (the machine stays warm ~30 s and keeps build-gpu/): the build is then a no-op:
#     OAT_PHASES=cuda_tests,check,export,bench,kernels,ctest bash scripts/gpu_session.sh
#
# Output ($OUT, which the device tool returns; at most 8 files): summary.md (read this first),
# env.log, build.log, tests.log, check.log, bench.log, bench.json, check.json.
#
# Testing without a GPU (here): OAT_DEVICE=cpu runs check and bench on the CPU, skips
# cuda_tests' device cases (they skip themselves) and says so; OAT_BUILD_DIR reuses a build;
# OAT_CHECK_MODELS / OAT_CHECK_PRECISIONS / OAT_BENCH_ARGS narrow the work, e.g.
#   OAT_DEVICE=cpu OAT_BUILD_DIR=build-bench OAT_PHASES=env,check,bench OUT=/tmp/gs \
#     OAT_CHECK_MODELS=mlp OAT_BENCH_ARGS="--models mlp --steps 5 --warmup 2" \
#     bash scripts/gpu_session.sh
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
START=$SECONDS
OUT="${OUT:-$ROOT/gpu_session_out}"
mkdir -p "$OUT"
DEADLINE="${OAT_DEADLINE:-560}"
DEVICE="${OAT_DEVICE:-cuda}"
JOBS="${OAT_JOBS:-$(nproc)}"
BUNDLE="${OAT_BUNDLE:-$ROOT/.carry/bundle}"  # scripts/make_device_bundle.sh's output
PREBUILT=0
if [[ -z "${OAT_BUILD_DIR:-}" && -f "$BUNDLE/bundle.tar.xz" ]]; then
  PREBUILT=1
  OAT_BUILD_DIR="$ROOT/build-prebuilt"
fi
BUILD="${OAT_BUILD_DIR:-$ROOT/build-gpu}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
if (( PREBUILT )); then
  PHASES="${OAT_PHASES:-env,bundle,cuda_tests,check,export,bench,kernels}"
else
  PHASES="${OAT_PHASES:-env,configure,build,cuda_tests,check,export,bench,kernels,ctest}"
fi
CARRY="$ROOT/.carry/root"
PY="${OAT_PYTHON:-python3}"
CHECK_MODELS="${OAT_CHECK_MODELS:-mlp lenet5 resnet18-cifar transformer resnet18}"
CHECK_PRECISIONS="${OAT_CHECK_PRECISIONS:-fp16 bf16 fp32}"
BUILD_TARGETS="${OAT_BUILD_TARGETS:-onnx-amp-train oat_train_step oat_cuda_ops cuda_tests}"
WORK="$BUILD/gpu_session"   # zoo/exported models, per-run check JSON
mkdir -p "$WORK"
rm -f "$WORK"/bench.md "$WORK"/kernels.md "$WORK"/check_*.json  # only this run's results go into the summary

SUMMARY="$OUT/summary.md"
: > "$OUT/env.log"; : > "$OUT/build.log"; : > "$OUT/tests.log"; : > "$OUT/check.log"; : > "$OUT/bench.log"
PHASE_ROWS=()
CHECK_ROWS=()
CUDA_ARGS=()

LOGFILE=env.log
left() { echo $(( DEADLINE - (SECONDS - START) )); }
log() { echo "[$(date +%H:%M:%S) +$((SECONDS - START))s] $*" | tee -a "$OUT/$LOGFILE" >&2; }
# tmo LIMIT CMD...: run CMD with at most min(LIMIT, time left) seconds.
tmo() {
  local limit="$1"; shift
  local l; l="$(left)"
  (( l < limit )) && limit="$l"
  if (( limit < 5 )); then echo "(no time left for: $*)"; return 124; fi
  timeout -k 10 "$limit" "$@"
}

# ---- environment: the carry, CUDA libraries -----------------------------------------------
# prepend VAR DIR / append VAR DIR: colon lists without empty entries (an empty CPATH entry
# would mean the current directory).
prepend() { export "$1=$2${!1:+:${!1}}"; }
append() { export "$1=${!1:+${!1}:}$2"; }

setup_paths() {
  if [[ -d "$CARRY/usr" ]]; then
    prepend CMAKE_PREFIX_PATH "$CARRY/usr"
    prepend CPATH "$CARRY/usr/include"
    prepend LIBRARY_PATH "$CARRY/usr/lib/x86_64-linux-gnu"
    prepend LD_LIBRARY_PATH "$CARRY/usr/lib/x86_64-linux-gnu"
  fi
  NVCC="$(command -v nvcc || true)"
  [[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
  CUDA_HOME="${CUDA_HOME:-$( [[ -n "$NVCC" ]] && dirname "$(dirname "$(readlink -f "$NVCC")")" )}"
  # pip's CUDA wheels of the torch install: nvidia/cudnn, nvidia/cublas, nvidia/cu13 ...
  local pipdirs d f
  pipdirs="$("$PY" - 2>/dev/null <<'EOF'
import importlib, os
try:
    import nvidia
    for base in list(nvidia.__path__):
        for d in sorted(os.listdir(base)):
            if os.path.isdir(os.path.join(base, d)):
                print(os.path.join(base, d))
except Exception:
    pass
EOF
)"
  local dirs=("$CUDA_HOME" /usr/local/cuda /usr)
  mapfile -t -O 3 dirs <<< "$pipdirs"
  LIB_DIRS=()  # where the bundle phase looks for a library the loader does not find
  for d in "${dirs[@]}"; do
    [[ -n "$d" ]] && LIB_DIRS+=("$d/lib64" "$d/lib" "$d/lib/x86_64-linux-gnu")
  done
  if [[ -z "$NVCC" ]]; then  # nvcc of pip's cuda-toolkit wheels (nvidia/cu13/bin), if only there
    for d in "${dirs[@]}"; do
      [[ -n "$d" && -x "$d/bin/nvcc" ]] && { NVCC="$d/bin/nvcc"; CUDA_HOME="$d"; break; }
    done
  fi
  CUDNN_INC=""; CUDNN_LIB=""; CUBLAS_LIB=""; CUBLASLT_LIB=""; CUBLAS_INC=""
  for d in "${dirs[@]}"; do
    [[ -n "$d" && -d "$d" ]] || continue
    [[ -z "$CUDNN_INC" && -f "$d/include/cudnn.h" ]] && CUDNN_INC="$d/include"
    [[ -z "$CUBLAS_INC" && -f "$d/include/cublas_v2.h" ]] && CUBLAS_INC="$d/include"
    for f in "$d"/lib64/libcudnn.so "$d"/lib/libcudnn.so "$d"/lib/x86_64-linux-gnu/libcudnn.so \
             "$d"/lib64/libcudnn.so.9 "$d"/lib/libcudnn.so.9 "$d"/lib/x86_64-linux-gnu/libcudnn.so.9; do
      [[ -z "$CUDNN_LIB" && -e "$f" ]] && CUDNN_LIB="$f"
    done
    for f in "$d"/lib64/libcublas.so "$d"/lib/libcublas.so "$d"/lib64/libcublas.so.13 "$d"/lib/libcublas.so.13 \
             "$d"/lib/x86_64-linux-gnu/libcublas.so; do
      [[ -z "$CUBLAS_LIB" && -e "$f" ]] && CUBLAS_LIB="$f"
    done
    for f in "$d"/lib64/libcublasLt.so "$d"/lib/libcublasLt.so "$d"/lib64/libcublasLt.so.13 "$d"/lib/libcublasLt.so.13 \
             "$d"/lib/x86_64-linux-gnu/libcublasLt.so; do
      [[ -z "$CUBLASLT_LIB" && -e "$f" ]] && CUBLASLT_LIB="$f"
    done
  done
  if [[ -z "$CUDNN_INC" || -z "$CUDNN_LIB" ]]; then  # last resort: search
    [[ -z "$CUDNN_INC" ]] && f="$(find /usr /opt -name cudnn.h -print -quit 2>/dev/null)" && [[ -n "$f" ]] && CUDNN_INC="$(dirname "$f")"
    [[ -z "$CUDNN_LIB" ]] && CUDNN_LIB="$(find /usr /opt -name 'libcudnn.so*' ! -name '*_*' -print -quit 2>/dev/null)"
  fi
  CUDA_ARGS=()
  [[ -n "$NVCC" ]] && CUDA_ARGS+=("-DCMAKE_CUDA_COMPILER=$NVCC")
  [[ -n "$CUDNN_INC" ]] && CUDA_ARGS+=("-DOAT_CUDNN_INCLUDE=$CUDNN_INC")
  [[ -n "$CUDNN_LIB" ]] && CUDA_ARGS+=("-DOAT_CUDNN_LIB=$CUDNN_LIB")
  # cuBLAS outside the toolkit (pip's nvidia/cu13/lib): tell FindCUDAToolkit where it is.
  if [[ -n "$CUBLAS_LIB" && -n "$CUDA_HOME" && "$CUBLAS_LIB" != "$CUDA_HOME"/* ]]; then
    CUDA_ARGS+=("-DCUDA_cublas_LIBRARY=$CUBLAS_LIB")
    [[ -n "$CUBLASLT_LIB" ]] && CUDA_ARGS+=("-DCUDA_cublasLt_LIBRARY=$CUBLASLT_LIB")
    [[ -n "$CUBLAS_INC" ]] && append CPATH "$CUBLAS_INC"
  fi
  [[ -n "$CUDNN_INC" ]] && append CPATH "$CUDNN_INC"
  # The loader must find cuDNN's sub-libraries (libcudnn_ops.so.9 ...) and pip's cuBLAS at run time.
  for f in "$CUDNN_LIB" "$CUBLAS_LIB"; do
    [[ -n "$f" ]] && prepend LD_LIBRARY_PATH "$(dirname "$f")"
  done
  export OAT_TORCH_PYTHON="${OAT_TORCH_PYTHON:-$(command -v "$PY")}"
  export OAT_PYTHON="${OAT_PYTHON:-$(command -v "$PY")}"
  export PYTHONUNBUFFERED=1
}

phase_env() {
  LOGFILE=env.log
  {
    echo "== gpu_session.sh at $(date -u +%Y-%m-%dT%H:%M:%SZ), repo $ROOT, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) $(git -C "$ROOT" status --short 2>/dev/null | wc -l) changed files"
    echo "== device $DEVICE, build dir $BUILD, jobs $JOBS, deadline ${DEADLINE}s"
    echo "== cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc); $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
    echo "== os: $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME"), glibc $(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')"
    echo "== nvidia-smi"; nvidia-smi 2>&1 | head -20 || echo "(no nvidia-smi)"
    echo "== nvcc: ${NVCC:-none}"; [[ -n "$NVCC" ]] && "$NVCC" --version | tail -2
    echo "== g++: $(g++ --version 2>&1 | head -1)"
    echo "== cmake: $(cmake --version 2>&1 | head -1) ($(command -v cmake)); ninja: $(ninja --version 2>/dev/null || echo none)"
    echo "== cuDNN: include ${CUDNN_INC:-NOT FOUND}, lib ${CUDNN_LIB:-NOT FOUND}"
    echo "== cuBLAS: ${CUBLAS_LIB:-NOT FOUND} (Lt ${CUBLASLT_LIB:-?}, include ${CUBLAS_INC:-?})"
    (( PREBUILT )) && echo "== prebuilt: $BUNDLE/bundle.tar.xz ($(sed -n 1,2p "$BUNDLE/MANIFEST.txt" | tr '\n' ' ')) -> $BUILD"
    echo "== carry: $( [[ -d "$CARRY" ]] && { du -sh "$ROOT/.carry" | cut -f1; head -1 "$ROOT/.carry/MANIFEST.txt" 2>/dev/null; } || echo "NONE (.carry/root missing: run scripts/make_device_carry.sh here and carry .carry)")"
    echo "== CMAKE_PREFIX_PATH=${CMAKE_PREFIX_PATH:-}"
    echo "== CPATH=${CPATH:-}"
    echo "== LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "== python: $(command -v "$PY")"
    "$PY" - <<'EOF' 2>&1
import importlib
for m in ("torch", "torchvision", "numpy", "onnx", "onnxruntime"):
    try:
        v = importlib.import_module(m).__version__
    except Exception as e:
        v = f"missing ({type(e).__name__})"
    print(f"   {m} {v}")
try:
    import torch
    print("   cuda available:", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "",
          "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
except Exception as e:
    print("   torch.cuda:", e)
EOF
  } >> "$OUT/env.log" 2>&1
  [[ "$DEVICE" != cuda || -n "$CUDNN_LIB" ]]
}

# The prebuilt binaries of scripts/make_device_bundle.sh: can this machine load them?
phase_bundle() {
  LOGFILE=build.log
  (( PREBUILT )) || { log "bundle: no $BUNDLE/bundle.tar.xz (scripts/make_device_bundle.sh)"; return 1; }
  log "bundle: unpacking $BUNDLE/bundle.tar.xz into $BUILD ($(sed -n 2p "$BUNDLE/MANIFEST.txt"))"
  if command -v xz > /dev/null; then
    tmo 120 tar -C "$BUILD" -xJf "$BUNDLE/bundle.tar.xz" >> "$OUT/build.log" 2>&1 || return 1
  else  # no xz-utils there: Python's lzma reads it
    tmo 120 "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$BUNDLE/bundle.tar.xz" "$BUILD" >> "$OUT/build.log" 2>&1 || return 1
  fi
  cat "$BUILD/MANIFEST.txt" >> "$OUT/build.log"
  echo "== this machine: glibc $(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')" >> "$OUT/build.log"
  prepend LD_LIBRARY_PATH "$BUILD/lib"
  export OAT_CLI="$BUILD/onnx-amp-train"
  local b rc=0
  local bins=(onnx-amp-train bench/oat_train_step bench/oat_cuda_ops tests/cuda_tests)
  if ! "$BUILD/onnx-amp-train" --help > /dev/null 2>> "$OUT/build.log"; then
    # The device's libstdc++ may be older than the one these were built against (GLIBCXX_...
    # not found): the carried one then goes first.
    log "bundle: onnx-amp-train does not start with the device's libstdc++; trying lib/fallback"
    prepend LD_LIBRARY_PATH "$BUILD/lib/fallback"
  fi
  # A library the loader does not find (libcudart.so.13 outside ld.so.conf, say): the first of
  # the toolkit's and the pip wheels' lib folders that has it goes on the path.
  local lib d
  for lib in $(for b in "${bins[@]}"; do
                 ldd "$BUILD/$b" 2>&1 | awk '/not found/ {print $1}'; done | sort -u); do
    for d in "${LIB_DIRS[@]}"; do
      if [[ -e "$d/$lib" ]]; then
        echo "== $lib: found in $d" >> "$OUT/build.log"
        prepend LD_LIBRARY_PATH "$d"
        break
      fi
    done
  done
  for b in "${bins[@]}"; do
    if ldd "$BUILD/$b" 2>&1 | grep -q "not found"; then
      echo "== $b: missing libraries" >> "$OUT/build.log"
      ldd "$BUILD/$b" 2>&1 | grep "not found" >> "$OUT/build.log"
      rc=1
    fi
  done
  "$BUILD/onnx-amp-train" --help > /dev/null 2>> "$OUT/build.log" || rc=1
  echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$OUT/build.log"
  (( rc == 0 )) || log "bundle: the binaries do not load here (build.log); carry .carry (make_device_carry.sh) and build instead"
  return $rc
}

phase_configure() {
  LOGFILE=build.log
  local gen=()
  # Ninja for a new build dir; an existing one keeps its generator.
  command -v ninja >/dev/null && [[ ! -f "$BUILD/CMakeCache.txt" ]] && gen=(-G Ninja)
  local cuda=(-DOAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real)
  [[ "$DEVICE" != cuda ]] && cuda=(-DOAT_CUDA=AUTO)
  log "configure: cmake -S $ROOT -B $BUILD ${gen[*]} ${cuda[*]} ${CUDA_ARGS[*]}"
  tmo 120 cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${cuda[@]}" "${CUDA_ARGS[@]}" >> "$OUT/build.log" 2>&1
}

phase_build() {
  LOGFILE=build.log
  log "build: $BUILD_TARGETS (-j $JOBS)"
  # shellcheck disable=SC2086
  tmo 100000 cmake --build "$BUILD" -j "$JOBS" --target $BUILD_TARGETS >> "$OUT/build.log" 2>&1
  local rc=$?
  (( rc != 0 )) && grep -E "error|Error" "$OUT/build.log" | head -20 | sed 's/^/  /' >> "$OUT/build.log"
  return $rc
}

phase_cuda_tests() {
  LOGFILE=tests.log
  log "cuda_tests"
  (cd "$BUILD/tests" && tmo 240 ./cuda_tests --duration=true) >> "$OUT/tests.log" 2>&1
}

# check_one MODEL.onnx LABEL PRECISION [BATCH [FLAGS...]]: one `check`, its table in check.log,
# its JSON kept.
check_one() {
  local model="$1" label="$2" p="$3" batch="${4:-4}"
  shift $(( $# < 4 ? $# : 4 ))
  local json="$WORK/check_${label}_${p}.json"
  rm -f "$json"
  echo "=== check $label $p: onnx-amp-train check $model --device $DEVICE --precision $p --batch $batch $*" >> "$OUT/check.log"
  local t0=$SECONDS
  tmo 150 "$BUILD/onnx-amp-train" check "$model" --device "$DEVICE" --precision "$p" \
    --batch "$batch" --json "$json" "$@" >> "$OUT/check.log" 2>&1
  local rc=$?
  local s; s="$(grep -E '^(summary|error)' "$OUT/check.log" | tail -1 | cut -c1-220)"
  [[ $rc -eq 124 ]] && s="timed out"
  CHECK_ROWS+=("| $label | $p | $rc | $((SECONDS - t0)) | ${s//|//} |")
  return $rc
}

phase_check() {
  LOGFILE=check.log
  local rc=0 m p
  for m in $CHECK_MODELS; do
    "$BUILD/onnx-amp-train" zoo "$m" -o "$WORK/zoo_$m.onnx" >> "$OUT/check.log" 2>&1 || { rc=1; continue; }
    for p in $CHECK_PRECISIONS; do
      check_one "$WORK/zoo_$m.onnx" "$m" "$p" || rc=1
    done
  done
  # tf2onnx exports committed as test fixtures (tests/data/keras): merged initializers, the
  # LayerNorm-as-BatchNormalization gradient, Softmax heads, NHWC Transposes, an LSTM.
  local f
  for f in "$ROOT"/tests/data/keras/cnn.onnx "$ROOT"/tests/data/keras/transformer.onnx \
           "$ROOT"/tests/data/keras/lstm.onnx; do
    [[ -f "$f" ]] || continue
    for p in $CHECK_PRECISIONS; do
      check_one "$f" "keras_$(basename "$f" .onnx)" "$p" 4 || rc=1
    done
  done
  # Hugging Face exports (tests/data/hf): GPT-2's tied head, LLaMA's RMSNorm and rotary
  # embeddings, BERT's attention mask (check's default: all ones).
  for f in "$ROOT"/tests/data/hf/gpt2.onnx "$ROOT"/tests/data/hf/llama.onnx \
           "$ROOT"/tests/data/hf/bert.onnx; do
    [[ -f "$f" ]] || continue
    for p in $CHECK_PRECISIONS; do
      check_one "$f" "hf_$(basename "$f" .onnx)" "$p" 4 || rc=1
    done
  done
  return $rc
}

phase_export() {
  LOGFILE=check.log
  log "export: torchvision ResNet-18 by torch.onnx"
  tmo 120 "$PY" "$ROOT/scripts/export_torchvision.py" "$WORK/torchvision" >> "$OUT/check.log" 2>&1
  local erc=$? rc=0 f p
  if (( erc == 2 )); then
    CHECK_ROWS+=("| torchvision resnet18 | - | - | - | not run: torchvision is not installed for $PY |")
    return 2
  fi
  for f in "$WORK"/torchvision/resnet18_eval.onnx "$WORK"/torchvision/resnet18_train.onnx; do
    [[ -f "$f" ]] || { rc=1; continue; }
    for p in $CHECK_PRECISIONS; do
      check_one "$f" "tv_$(basename "$f" .onnx)" "$p" 2 || rc=1
    done
  done
  # The FP16 inference model (what `convert` writes) against FP32, forward only.
  f="$WORK"/torchvision/resnet18_eval.onnx
  [[ -f "$f" ]] && { check_one "$f" tv_resnet18_eval_forward fp16 2 --forward-only || rc=1; }
  (( erc != 0 )) && rc=1
  return $rc
}

phase_bench() {
  LOGFILE=bench.log
  local args=(--bin "$BUILD/bench/oat_train_step" --device "$DEVICE" --json "$OUT/bench.json"
              --markdown "$WORK/bench.md")
  # shellcheck disable=SC2206
  local extra=(${OAT_BENCH_ARGS:-})
  log "bench: $PY bench/train_vs_torch_amp.py ${args[*]} ${extra[*]}"
  rm -f "$WORK/bench.md"
  tmo 100000 "$PY" "$ROOT/bench/train_vs_torch_amp.py" "${args[@]}" "${extra[@]}" \
    --timeout "$(( $(left) > 60 ? $(left) / 3 : 30 ))" >> "$OUT/bench.log" 2>&1
}

phase_kernels() {
  LOGFILE=bench.log
  # shellcheck disable=SC2206
  local extra=(${OAT_KERNELS_ARGS:-})
  log "kernels: $BUILD/bench/oat_cuda_ops ${extra[*]}"
  tmo 120 "$BUILD/bench/oat_cuda_ops" "${extra[@]}" > "$WORK/kernels.md" 2>> "$OUT/bench.log"
  local rc=$?
  cat "$WORK/kernels.md" >> "$OUT/bench.log"  # summary.md has it too
  return $rc
}

phase_ctest() {
  LOGFILE=tests.log
  log "ctest: building every test suite"
  tmo 100000 cmake --build "$BUILD" -j "$JOBS" >> "$OUT/build.log" 2>&1 || log "(build of all targets failed or timed out; running what was built)"
  (cd "$BUILD" && tmo 100000 ctest --output-on-failure -j "$(( JOBS > 4 ? 4 : JOBS ))" --timeout 300 \
     -E conformance_tests) >> "$OUT/tests.log" 2>&1
}

# Minimum seconds a phase needs to be worth starting.
min_time() {
  case "$1" in
    env) echo 5 ;; configure) echo 20 ;; build) echo 60 ;; cuda_tests) echo 20 ;;
    check|export) echo 30 ;; bench) echo 60 ;; kernels) echo 20 ;; ctest) echo 60 ;; *) echo 10 ;;
  esac
}

setup_paths
FAILED=0
IFS=',' read -r -a phase_list <<< "$PHASES"
for ph in "${phase_list[@]}"; do
  if ! declare -F "phase_$ph" >/dev/null; then
    PHASE_ROWS+=("| $ph | unknown phase | - |"); FAILED=1; continue
  fi
  if (( $(left) < $(min_time "$ph") )); then
    PHASE_ROWS+=("| $ph | SKIPPED: $(left) s left of the ${DEADLINE} s budget | 0 |"); FAILED=1; continue
  fi
  t0=$SECONDS
  "phase_$ph"
  rc=$?
  case $rc in
    0) st="ok" ;;
    124|137) st="TIMED OUT (budget)"; FAILED=1 ;;
    2) [[ $ph == export ]] && st="not run (no torchvision)" || { st="FAILED (exit 2)"; FAILED=1; } ;;
    *) st="FAILED (exit $rc)"; FAILED=1 ;;
  esac
  PHASE_ROWS+=("| $ph | $st | $((SECONDS - t0)) |")
  # A failed configure/build leaves nothing to run.
  if [[ ($ph == bundle || $ph == configure || $ph == build) && $rc -ne 0 ]]; then
    PHASE_ROWS+=("| (rest) | not run: $ph failed, see build.log | 0 |")
    break
  fi
done

# ---- summary ----------------------------------------------------------------------------------
{
  echo "# gpu_session.sh summary"
  echo
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), device $DEVICE: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo 'no nvidia-smi'); $(( SECONDS - START )) s in all"
  echo
  echo "| phase | status | seconds |"
  echo "| --- | --- | ---: |"
  printf '%s\n' "${PHASE_ROWS[@]}"
  if (( ${#CHECK_ROWS[@]} )); then
    echo
    echo "## check (onnx-amp-train check --device $DEVICE; full tables in check.log)"
    echo
    echo "| model | precision | exit | s | summary |"
    echo "| --- | --- | ---: | ---: | --- |"
    printf '%s\n' "${CHECK_ROWS[@]}"
  fi
  if [[ -s "$OUT/tests.log" ]]; then
    echo
    echo "## tests (tests.log)"
    echo
    echo '```'
    grep -E "^\[doctest\] (test cases|assertions|Status)|tests passed|tests failed|The following tests|^\s+[0-9]+ - .*(Failed|Timeout|Not Run)|^[0-9]+/[0-9]+ Test" "$OUT/tests.log" | head -40
    echo "(lines saying SKIPPED: $(grep -c SKIPPED "$OUT/tests.log"))"
    echo '```'
  fi
  if [[ -s "$WORK/bench.md" ]]; then
    echo
    echo "## bench (bench/train_vs_torch_amp.py; bench.log, bench.json)"
    echo
    cat "$WORK/bench.md"
  elif grep -q "train_vs_torch_amp" "$OUT/bench.log" 2>/dev/null; then  # the bench phase ran
    echo; echo "## bench: no table; the end of bench.log:"; echo '```'; tail -15 "$OUT/bench.log"; echo '```'
  fi
  if [[ -s "$WORK/kernels.md" ]]; then
    echo
    echo "## kernels (bench/cuda_ops.cc)"
    echo
    cat "$WORK/kernels.md"
  fi
  if grep -qiE "error" "$OUT/build.log" 2>/dev/null; then
    echo; echo "## build errors (build.log)"; echo '```'
    grep -E "error" "$OUT/build.log" | head -15
    echo '```'
  fi
} > "$SUMMARY"

# All check reports in one JSON file (one object per run).
"$PY" - "$WORK" "$OUT/check.json" <<'EOF' 2>/dev/null
import glob, json, os, sys
runs = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "check_*.json"))):
    try:
        runs[os.path.basename(f)[6:-5]] = json.load(open(f))
    except Exception as e:
        runs[os.path.basename(f)[6:-5]] = {"error": str(e)}
json.dump(runs, open(sys.argv[2], "w"), indent=1)
EOF

cat "$SUMMARY"
exit $FAILED
