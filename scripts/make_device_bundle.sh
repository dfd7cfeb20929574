#!/usr/bin/env bash
# Packs the GPU binaries built HERE (a real CUDA build: nvcc, sm_90) with the Debian shared
# libraries they load into .carry/bundle/bundle.tar.xz (git-ignored; MANIFEST.txt beside it), so a lent GPU machine runs them without
# building: a session's device time (15 minutes, machine start included) then goes to the tests,
# `check` and the benchmarks instead of a CUDA build on the device.
#
#   scripts/make_device_bundle.sh [BUILD_DIR]     # default build-bundle/, configured here when new
#   device run, carry [".carry/bundle"], timeout_s 600:
#     bash scripts/gpu_session.sh
#   (gpu_session.sh picks the bundle by itself when .carry/bundle/bundle.tar.xz is there, and its
#   `bundle` phase unpacks it into build-prebuilt/, its build dir.)
#
# Layout inside the tarball (the build tree's, so gpu_session.sh and the tests find everything where a build puts
# it): onnx-amp-train, bench/oat_train_step, bench/oat_cuda_ops, tests/cuda_tests, all stripped;
# lib/ the shared libraries that are neither glibc's nor the GPU stack's (libonnx, libprotobuf,
# libgomp), lib/fallback/ libstdc++, libgcc_s and zlib, which gpu_session.sh puts on the path only
# when the device's own are too old for these binaries (its CUDA libraries may need the newer
# ones). The CUDA runtime, cuBLAS(Lt) and cuDNN come from the device (its toolkit or the pip
# wheels of its PyTorch), as when it builds. MANIFEST.txt: commit, build flags, the newest glibc
# symbol version the binaries need (the device's glibc must be at least that), sizes.
# Fails above OAT_BUNDLE_MAX_MB (default 56: the device tool carries 64 MiB, tree included).
#
# The build is its own (build-bundle/), not setup.sh's build/: that one is -march=native (this
# machine's CPU: an AMD EPYC here, znver3, whose extensions an Intel host of the GPU may lack) and
# also builds the CUDA emulator. This one: Release, -march=x86-64-v3 (AVX2 + FMA: every x86 host
# of an H100 has them), CUDA for sm_90 only (90-real: H100/H200; no PTX), no emulator suites.
# A new build of these four targets took 18 minutes on 2 cores here (2026-12-07, ctest running
# beside it); later runs rebuild what changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-bundle}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
OUTDIR="$ROOT/.carry/bundle"
MAX_MB="${OAT_BUNDLE_MAX_MB:-56}"
TARGETS=(onnx-amp-train bench/oat_train_step bench/oat_cuda_ops tests/cuda_tests)

mkdir -p "$ROOT/.carry"
if ! git -C "$ROOT" check-ignore -q "$ROOT/.carry"; then
  echo "error: $ROOT/.carry is not git-ignored (add /.carry/ to .gitignore); refusing to fill it" >&2
  exit 1
fi
cache="$BUILD/CMakeCache.txt"
if [[ ! -f "$cache" ]]; then
  echo "configuring $BUILD (portable host code, sm_90)"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DOAT_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90-real -DOAT_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 \
    -DOAT_CUDA_EMULATOR_TESTS=OFF
fi
if grep -q '^OAT_NATIVE:BOOL=ON' "$cache" && [[ -z "${OAT_BUNDLE_ALLOW_NATIVE:-}" ]]; then
  echo "error: $BUILD is built with -march=native (OAT_NATIVE=ON): its binaries may not run on" \
       "the GPU machine's CPU; use a build with -DOAT_NATIVE=OFF (or OAT_BUNDLE_ALLOW_NATIVE=1)" >&2
  exit 1
fi
if ! compgen -G "$BUILD/CMakeFiles/*/CMakeCUDACompiler.cmake" > /dev/null ||
   grep -q '^OAT_CUDA:STRING=EMULATE' "$cache"; then
  echo "error: $BUILD is not a real CUDA build (nvcc not configured, or OAT_CUDA=EMULATE)" >&2
  exit 1
fi

echo "building ${TARGETS[*]##*/} in $BUILD"
cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" --target "${TARGETS[@]##*/}"

# The device code must hold sm_90 machine code (a PTX-only build would JIT for minutes there):
# what nvcc was told to generate (this machine has no cuobjdump to read the fatbins back).
arch="$(grep -o 'code=\[[a-z_0-9,]*\]' "$BUILD/CMakeFiles/oat_runtime.dir/flags.make" | tr '\n' ' ')"
if [[ "$arch" != *sm_90* ]]; then
  echo "error: $BUILD compiles no sm_90 code (nvcc: '${arch:-nothing}')" >&2
  exit 1
fi

STAGE="$BUILD/bundle_stage"
rm -rf "$STAGE"
mkdir -p "$STAGE/lib/fallback" "$STAGE/bench" "$STAGE/tests"
for t in "${TARGETS[@]}"; do
  [[ -x "$BUILD/$t" ]] || { echo "error: $BUILD/$t was not built" >&2; exit 1; }
  strip -o "$STAGE/$t" "$BUILD/$t"
done

# The shared libraries the binaries load, by what the loader here resolves them to. Left out:
# glibc's (the device's own must be used) and the GPU stack (the device's driver, toolkit and
# cuDNN match its GPU).
is_system() {
  case "$1" in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*|libresolv.so*) return 0 ;;
    libcuda.so*|libcudart*|libcublas*|libcudnn*|libnvrtc*|libnvJitLink*|libcufft*|libcurand*) return 0 ;;
  esac
  return 1
}
declare -A seen=()
for t in "${TARGETS[@]}"; do
  while read -r name _ path _; do
    [[ -n "$name" && "$path" == /* ]] || continue
    is_system "$name" && continue
    [[ -n "${seen[$name]:-}" ]] && continue
    seen[$name]=1
    case "$name" in
      libstdc++.so*|libgcc_s.so*|libz.so*) dest="$STAGE/lib/fallback/$name" ;;
      *) dest="$STAGE/lib/$name" ;;
    esac
    cp -L "$path" "$dest"
    strip --strip-unneeded "$dest" 2>/dev/null || true
  done < <(ldd "$BUILD/$t" | grep '=>')
done
missing="$(for t in "${TARGETS[@]}"; do ldd "$BUILD/$t"; done | grep 'not found' | sort -u || true)"
if [[ -n "$missing" ]]; then
  echo "error: libraries not found here:" >&2
  echo "$missing" >&2
  exit 1
fi

# The newest versioned glibc and libstdc++ symbols anything in the bundle imports.
newest() {  # newest PREFIX FILES...: the highest PREFIX_x.y.z version imported
  local prefix="$1"; shift
  objdump -T "$@" 2>/dev/null | grep -o "${prefix}_[0-9.]*" | sort -u -V | tail -1
}
bins=("${TARGETS[@]/#/$STAGE/}")
libs=("$STAGE"/lib/*.so*)
{
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) by scripts/make_device_bundle.sh"
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD)$( [[ -n "$(git -C "$ROOT" status --short -uno)" ]] && echo ' (with uncommitted changes)')"
  echo "build $BUILD: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$cache"), device code $arch, nvcc $(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")/\1/p' "$BUILD"/CMakeFiles/*/CMakeCUDACompiler.cmake | head -1)"
  echo "needs glibc >= $(newest GLIBC "${bins[@]}" "${libs[@]}" | sed 's/GLIBC_//')"
  echo "needs libstdc++ $(newest GLIBCXX "${bins[@]}" "${libs[@]}") (lib/fallback has $(newest GLIBCXX "$STAGE"/lib/fallback/libstdc++.so* 2>/dev/null || echo none))"
  echo "loads from the device: $(for t in "${TARGETS[@]}"; do ldd "$BUILD/$t"; done | awk '{print $1}' | grep -E '^lib(cuda|cudart|cublas|cudnn)' | sort -u | tr '\n' ' ')"
  echo "files:"
  (cd "$STAGE" && find . -type f ! -name MANIFEST.txt -printf '  %P %s\n' | sort)
} > "$STAGE/MANIFEST.txt"

# Four statically linked binaries of ~23 MB each (every kernel's sm_90 code in each) do not fit
# the 64 MiB the device tool carries; xz takes them to about a seventh.
echo "compressing $(du -sh "$STAGE" | cut -f1) (xz)"
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"
tar -C "$STAGE" -cf - . | xz -T0 -6 > "$OUTDIR/bundle.tar.xz"
cp "$STAGE/MANIFEST.txt" "$OUTDIR/MANIFEST.txt"
rm -rf "$STAGE"
size_kb="$(du -sk "$OUTDIR" | cut -f1)"
cat "$OUTDIR/MANIFEST.txt"
echo "$(du -sh "$OUTDIR/bundle.tar.xz" | cut -f1) in $OUTDIR/bundle.tar.xz"
if (( size_kb > MAX_MB * 1024 )); then
  echo "error: the bundle is over ${MAX_MB} MiB (the device tool carries 64 MiB with the tree)" >&2
  exit 1
fi
