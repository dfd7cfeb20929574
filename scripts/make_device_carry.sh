#!/usr/bin/env bash
# Fills .carry/ (git-ignored) with what a lent GPU machine lacks to build onnx-amp-train: Debian
# bookworm's libonnx (1.12), protobuf (3.21), Eigen 3.4, doctest, CLI11, nlohmann-json and zlib
# headers, unpacked (not installed) under .carry/root. Run HERE, on the development machine
# (needs apt-get and dpkg-deb, no root); the device machine has no package registry.
#
#   scripts/make_device_carry.sh            # then: device run with carry [".carry"] and
#                                           #   scripts/gpu_session.sh  (bench/README.md)
#
# The device (the 'cuda' image: nvcc 13.0, CMake, g++, PyTorch) then builds against
# .carry/root/usr by CMAKE_PREFIX_PATH / CPATH / LD_LIBRARY_PATH (scripts/gpu_session.sh sets
# them). What is kept: headers, CMake package files, shared libraries (.so, .so.N); what is
# dropped: docs, man pages, static archives the build does not link (libprotobuf.a, libz.a...).
# Absolute symlinks (zlib1g-dev's libz.so -> /lib/...) are rewritten to point inside .carry/root
# (zlib1g itself is carried for that), and CMake package files that hard-code /usr are made
# relative, so nothing the build reads resolves to the device's /usr.
# The result must stay well under the device tool's 64 MiB for tree + carry; the script prints
# its size and fails above OAT_CARRY_MAX_MB (default 50).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/.carry"
MAX_MB="${OAT_CARRY_MAX_MB:-50}"

# Build-time packages (headers, CMake configs, .so links) and the runtime libraries they need.
PACKAGES=(
  libonnx-dev libonnx1 libonnxifi           # ONNXConfig.cmake imports onnxifi_* files too
  libprotobuf-dev libprotobuf32 libprotobuf-lite32
  libeigen3-dev
  doctest-dev
  libcli11-dev
  nlohmann-json3-dev
  zlib1g-dev zlib1g
)

mkdir -p "$CARRY"
if ! git -C "$ROOT" check-ignore -q "$CARRY"; then
  echo "error: $CARRY is not git-ignored (add /.carry/ to .gitignore); refusing to fill it" >&2
  exit 1
fi

rm -rf "$CARRY/debs" "$CARRY/root"
mkdir -p "$CARRY/debs" "$CARRY/root"
cd "$CARRY/debs"
echo "downloading: ${PACKAGES[*]}"
# apt-get download warns when it runs as root and '_apt' cannot write here; harmless.
apt-get download "${PACKAGES[@]}" 2> >(grep -v "unsandboxed" >&2)
for deb in *.deb; do
  dpkg-deb -x "$deb" "$CARRY/root"
done

R="$CARRY/root"
# Drop what the build does not read.
rm -rf "$R/usr/share/doc" "$R/usr/share/man" "$R/usr/share/lintian" "$R/usr/share/bug" \
       "$R/usr/share/pkgconfig/eigen3.pc.in"
find "$R" -name '*.a' ! -name 'libonnxifi_loader.a' -delete  # ONNXTargets checks onnxifi_loader.a exists

# Absolute symlinks -> relative ones inside the carry (e.g. usr/lib/x86_64-linux-gnu/libz.so ->
# /lib/x86_64-linux-gnu/libz.so.1.2.13, which zlib1g unpacked under $R/lib/...).
while IFS= read -r -d '' link; do
  target="$(readlink "$link")"
  [[ "$target" == /* ]] || continue
  inside="$R$target"
  if [[ ! -e "$inside" ]]; then
    echo "error: $link -> $target: no such file in the carry" >&2
    exit 1
  fi
  ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$inside")" "$link"
done < <(find "$R" -type l -print0)
# (zlib1g's libz.so.1 stays under $R/lib, off LD_LIBRARY_PATH: at run time the device's own
# libz.so.1, which its other libraries may need in a newer version, is the one loaded; the
# carried copy only gives the dev link libz.so a target.)
rm -rf "$CARRY/debs"

# CMake package files that hard-code the install prefix (doctestTargets.cmake: set(_IMPORT_PREFIX
# "/usr")) would point the build at the device's /usr/include: make them relative to themselves.
while IFS= read -r -d '' f; do
  up="$(realpath --relative-to="$(dirname "$f")" "$R/usr")"
  sed -i "s|^set(_IMPORT_PREFIX \"/usr\")|get_filename_component(_IMPORT_PREFIX \"\${CMAKE_CURRENT_LIST_DIR}/$up\" ABSOLUTE)  # was \"/usr\" (make_device_carry.sh)|" "$f"
done < <(grep -rlZ --include='*.cmake' '^set(_IMPORT_PREFIX "/usr")' "$R")

# A record of what is in it, read by scripts/gpu_session.sh's summary.
{
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) by scripts/make_device_carry.sh"
  for p in "${PACKAGES[@]}"; do
    echo "$p $(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')"
  done
} > "$CARRY/MANIFEST.txt"

# Dangling links would fail on the device, not here: check now.
if bad="$(find "$R" -xtype l)" && [[ -n "$bad" ]]; then
  echo "error: dangling symlinks in the carry:" >&2
  echo "$bad" >&2
  exit 1
fi
for f in usr/include/onnx/onnx_pb.h usr/include/google/protobuf/message.h \
         usr/include/eigen3/Eigen/Core usr/include/doctest/doctest.h usr/include/CLI/CLI.hpp \
         usr/include/nlohmann/json.hpp usr/include/zlib.h \
         usr/lib/x86_64-linux-gnu/libonnx.so.1 usr/lib/x86_64-linux-gnu/libprotobuf.so \
         usr/lib/x86_64-linux-gnu/libz.so usr/lib/x86_64-linux-gnu/cmake/ONNX/ONNXConfig.cmake; do
  [[ -e "$R/$f" ]] || { echo "error: the carry lacks $f" >&2; exit 1; }
done

size_kb="$(du -sk "$CARRY" | cut -f1)"
echo "$(du -sh "$CARRY" | cut -f1) in $CARRY ($(find "$R" -type f | wc -l) files)"
if (( size_kb > MAX_MB * 1024 )); then
  echo "error: the carry is over ${MAX_MB} MiB" >&2
  exit 1
fi
