#!/usr/bin/env bash
# Packs a CUDA build of this machine for a call on the lent GPU machine, whose checkout gets
# only tracked files plus the paths a call carries (64 MiB in all):
#
#   tools/device/pack_build.sh [BUILD_DIR] [ARCHIVE_NAME]   (default: build-h200 h200)
#
#   .devcarry/NAME.tar.xz  BUILD_DIR's binaries (hostlm, test_cuda_backend, bench_cuda_*),
#                          lib/*.so and manifests, under their BUILD_DIR/ paths
#   .devlibs/libs.tar.xz   the shared libraries they load from this system (Boost, utf8proc,
#                          curl, ...), less glibc's and CUDA's own: the GPU machine's image is
#                          another distribution, so put .devlibs/lib LAST in LD_LIBRARY_PATH
#                          there, to fill in what it lacks without replacing what it has
#   .devlibs/stdcxx/       this system's libstdc++ and libgcc_s, for a machine whose own are
#                          older than the build's
#
# The call scripts (bench/results/*/scripts/env.sh) unpack both. Both folders must be ignored
# by git (.git/info/exclude) and named in the call's carry list with .devcheck (gguf-py and,
# outside the repository's history, llama.cpp's sources and build script).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-h200}
name=${2:-h200}
[ -x "$build/bin/hostlm" ] || { echo "pack_build.sh: no $build/bin/hostlm: build first" >&2; exit 1; }
for dir in .devcarry .devlibs; do
  git check-ignore -q "$dir/x" || { echo "pack_build.sh: $dir is not ignored by git" >&2; exit 1; }
done
mkdir -p .devcarry .devlibs/stdcxx
binaries=()
for b in hostlm test_cuda_backend bench_cuda_quant bench_cuda_attention bench_cuda_delta; do
  [ -x "$build/bin/$b" ] && binaries+=("$build/bin/$b")
done
tar cJf ".devcarry/$name.tar.xz" "${binaries[@]}" "$build"/lib/*.so "$build/manifests"

# Every library the binaries and plugins resolve, less the C library's, the dynamic loader's
# and the GPU driver's or toolkit's (the GPU machine has its own, matched to its driver).
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
LD_LIBRARY_PATH=$build/lib ldd "${binaries[@]}" "$build"/lib/*.so 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libcuda|libcudart|libcublas|libcublasLt|libnvidia)[.-]' |
  grep -v "^$(realpath "$build")/" |
  while read -r lib; do
    case $(basename "$lib") in
      libstdc++*|libgcc_s*) cp -L "$lib" .devlibs/stdcxx/ ;;
      *) cp -L "$lib" "$staging/" ;;
    esac
  done
tar cJf .devlibs/libs.tar.xz -C "$staging" .
du -h ".devcarry/$name.tar.xz" .devlibs/libs.tar.xz .devlibs/stdcxx | sed 's/^/pack_build.sh: /'
tar tJf .devlibs/libs.tar.xz | sed -n 's|^\./\(.\)|pack_build.sh:   \1|p'
