#!/usr/bin/env bash
# lanes, jax and PyTorch side by side on every workload of bench/workloads.cpp, in one run:
#
#   scripts/bench_peers.sh [--threads N] [--quick] [--workload NAME]...
#
# 1. a virtual environment under build/peers-venv with the pinned versions of
#    bench/peers/requirements.txt (made once, reused while that file is unchanged; torch brings
#    a few GB of CUDA libraries with it, which is why it lives under build/);
# 2. lanes in Release (build/, target workloads only);
# 3. the inputs: build/bench/workloads --dump-inputs build/peers-inputs;
# 4. lanes, jax and torch one after the other, each pinned to the same N cores (default 2) with
#    taskset and told to use N threads (bench/peers/README.md);
# 5. bench/peers/report.py: checks every peer's checksums against lanes' and writes
#    bench/results/peers.md and bench/results/peers.png (with --quick, build/peers-results/
#    instead: 2 timed runs per cell, for development, never committed).
#
# Exits 1 when a peer's output disagrees with lanes' (the rows are flagged in the table) or a
# system failed to run.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LANES_ROOT"

threads=2
quick=()
selected=()
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --workload) selected+=(--workload "$2"); shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--threads N] [--quick] [--workload NAME]..." >&2; exit 2 ;;
  esac
done
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "--threads wants a positive integer" >&2; exit 2; }

results=build/peers-results
out_dir=bench/results
[ ${#quick[@]} -gt 0 ] && out_dir=$results
mkdir -p "$results" "$out_dir"
load=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
say() { printf '[bench_peers %4ds] %s\n' $((SECONDS - start)) "$*"; }

# ---- 1. the peers' environment -------------------------------------------------------------------
venv=build/peers-venv
stamp=$(sha256sum bench/peers/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null)" != "$stamp" ]; then
  say "installing the peers into $venv (jax, torch, numpy, matplotlib; a few minutes, once)"
  if ! python3 -c "import ensurepip, venv" 2>/dev/null; then  # Debian splits venv out
    [ "$(id -u)" -eq 0 ] || { echo "bench_peers: install python3-venv first" >&2; exit 1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r bench/peers/requirements.txt
  echo "$stamp" > "$venv/.requirements-sha256"
  installed="the peers' install included"
fi
py=$venv/bin/python

# ---- 2. lanes in Release -------------------------------------------------------------------------
lanes_install_deps
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
say "building lanes (Release, target workloads)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j "$(nproc)" --target workloads >/dev/null

# ---- 3. the inputs -------------------------------------------------------------------------------
inputs=build/peers-inputs
rm -rf "$inputs"
# --quick too: a workload that shrinks under it (perex_grad_norms) dumps the inputs it runs on.
build/bench/workloads --dump-inputs "$inputs" "${quick[@]}" "${selected[@]}" >/dev/null
say "inputs in $inputs"

# ---- 4. the three systems on the same cores ------------------------------------------------------
pin=()
if [ "$(nproc)" -ge "$threads" ] && command -v taskset >/dev/null; then
  pin=(taskset -c "0-$((threads - 1))")
else
  echo "bench_peers: $threads threads on $(nproc) cores: not pinning to cores" >&2
fi
failed=0
run() {  # run NAME COMMAND...: its JSON lines to $results/NAME.jsonl, its stderr to NAME.log
  local name=$1
  shift
  say "running $name"
  if ! "${pin[@]}" "$@" > "$results/$name.jsonl" 2> "$results/$name.log"; then
    echo "bench_peers: $name exited nonzero; see $results/$name.log" >&2
    failed=1
  fi
  if grep -q '"error"' "$results/$name.jsonl"; then
    echo "bench_peers: $name had failing variants:" >&2
    grep '"error"' "$results/$name.jsonl" | cut -c1-300 >&2
  fi
}
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
run lanes build/bench/workloads --json-only --threads "$threads" "${quick[@]}" "${selected[@]}"
run jax "$py" bench/peers/jax_workloads.py --inputs "$inputs" --threads "$threads" \
  "${quick[@]}" "${selected[@]}"
run torch "$py" bench/peers/torch_workloads.py --inputs "$inputs" --threads "$threads" \
  "${quick[@]}" "${selected[@]}"

# ---- 5. the table and the chart ------------------------------------------------------------------
say "writing $out_dir/peers.md and $out_dir/peers.png"
report=0
"$py" bench/peers/report.py --lanes "$results/lanes.jsonl" --jax "$results/jax.jsonl" \
  --torch "$results/torch.jsonl" --threads "$threads" --load "$load" "${quick[@]}" \
  --elapsed "$((SECONDS - start)) s (${installed:-no installs})" \
  --md "$out_dir/peers.md" --png "$out_dir/peers.png" || report=1
say "done"
exit $((failed | report))
