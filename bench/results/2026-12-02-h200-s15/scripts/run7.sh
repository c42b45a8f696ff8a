#!/usr/bin/env bash
# Session 15, call 7: serving side by side with llama.cpp's llama-server (built on the machine,
# outside the repository, while hostlm is measured; LLAMA_BIN points at its bin folder). The
# 9B Q4_K_M shape with the real Qwen3.5 vocabulary (tokenizer.json from
# `tools/make_tokenizer_reference.py --qwen35-real`, carried gzipped in .devcheck); 1, 8, 32
# and 64 streams of 512-token prompts and 128 tokens each, then three times an 8,192-token
# prompt and the same prompt plus 32 new tokens (time to first token with the prefix cached),
# on each server in turn (tools/device/run_serving_compare.sh).
set -u
W=/tmp/w15g; R=$PWD; B=$R/build-h200; t0=$(date +%s)
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
mkdir -p $W && ( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz ) && gunzip -c .devcheck/qwen35-tokenizer.json.gz > $W/tokenizer.json
PYTHONPATH=$W/gguf-py python3 tools/make_shape_gguf.py 9b $W/9b-q4km-vocab.gguf --type Q4_K_M --tokenizer $W/tokenizer.json > $W/gguf.log 2>&1
echo "gguf rc $?"; tail -1 $W/gguf.log
el "serving side by side"
STREAMS=1,8,32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 LLAMA_WAIT=400 RESULTS=$OUT/serving \
  timeout 480 bash tools/device/run_serving_compare.sh $W/9b-q4km-vocab.gguf $B > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || { cat $OUT/serving/*.md; tail -20 $OUT/serving-log.txt; }
el done
