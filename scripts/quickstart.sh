#!/usr/bin/env bash
# From a fresh clone on Debian 12: install dependencies, build, and run hostlm on the tiny
# Qwen3.5 model that ships in the repository (tests/data/models/tiny-tied-f32).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target hostlm_cli
./build/bin/hostlm plugins
./build/bin/hostlm run --tokens 1,17,42,1999,5,5,300 -n 16 --temp 0 --verbose
