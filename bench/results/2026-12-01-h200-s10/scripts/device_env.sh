# Sourced by run1.sh .. run5.sh (the repository root is the current folder on the device
# machine): the carried build and libraries, the 9B Q4_K_M shape file written in the
# background into $W (wait_for_model sets M), and `el` for elapsed-time headings.
set -u
R=$PWD
B=$R/build-h200
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
W=${W:-/tmp/w}; mkdir -p $W
( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz; export PYTHONPATH=$W/gguf-py; cd $R; python3 tools/make_shape_gguf.py 9b $W/9b-q4km.gguf --type Q4_K_M > $W/gguf.log 2>&1; echo "gguf rc $?" >> $W/gguf.log ) &
t0=$(date +%s)
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
wait_for_model() {
  while ! grep -q "gguf rc" $W/gguf.log 2>/dev/null; do sleep 2; done; tail -1 $W/gguf.log
  M=$W/9b-q4km.gguf
}
