#!/usr/bin/env bash
# lanes, jax, PyTorch and MLX side by side on every workload of bench/workloads.cpp, in one run,
# with lanes' Python API (bench/peers/lanes_workloads.py) as an informational extra column:
#
#   scripts/bench_peers.sh [--threads N] [--quick] [--workload NAME]... [--beside-twin]
#
# 1. a virtual environment under build/peers-venv with the pinned versions of
#    bench/peers/requirements.txt (made once, reused while that file is unchanged; torch brings
#    a few GB of CUDA libraries with it, which is why it lives under build/);
# 2. lanes in Release (build/, targets workloads and the Python extension _lanes, built against
#    build/venv's Python, the interpreter build/peers-venv was made from);
#    LANES_BENCH_SKIP_BUILD=1 skips this step (no Debian packages, no cmake) and uses the
#    build/bench/workloads and build/python that are there (no lanes-python run without the
#    latter);
# 3. the inputs: build/bench/workloads --dump-inputs build/peers-inputs;
# 4. lanes, lanes-python (PYTHONPATH=build/python), jax, torch and mlx (when build/peers-venv
#    has it: mlx[cpu]) one after the other on each workload in turn (a process per system and
#    row, so a row's cells are measured minutes, not the whole run, apart), each
#    pinned to the same N cores (default 2) with taskset and told to use N threads
#    (bench/peers/README.md);
# 5. bench/peers/report.py: checks every peer's checksums against lanes' and writes
#    bench/results/peers.md and bench/results/peers.png (with --quick, build/peers-results/
#    instead: 2 timed runs per cell, for development, never committed; with --workload, a subset,
#    bench/results/peers_subset.md and .png, so the committed full run stays).
#
# --beside-twin: how each system slows down when a second copy of itself shares its cores (two
# training jobs on one machine, MPI ranks on one node). Step 4 runs each system twice: quiet, to
# $results/S.jsonl (as above), then again to $results/S-twin.jsonl while a twin -- the same
# command, same taskset and threads, output discarded -- runs beside it, restarted whenever it
# exits until the measured run ends; then the twin's process group is killed (also on Ctrl-C,
# SIGTERM or an error: a trap); lanes-python too. Step 5 writes bench/peers/contention_report.py's table to
# $out_dir/contention_peers.md (bench/results/, or build/peers-results/ with --quick) and prints
# it; peers.md and peers.png are NOT overwritten: they are written from the quiet runs into
# build/peers-results/ (results=, below), whatever --quick says.
#
# Exits 1 when a peer's output disagrees with lanes' (the rows are flagged in the table) or a
# system failed to run.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LANES_ROOT"

threads=2
quick=()
selected=()
twin=0
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --workload) selected+=(--workload "$2"); shift 2 ;;
    --beside-twin) twin=1; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--threads N] [--quick] [--workload NAME]... [--beside-twin]" >&2
       exit 2 ;;
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
  say "installing the peers into $venv (jax, torch, mlx, numpy, matplotlib; a few minutes, once)"
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
if [ "${LANES_BENCH_SKIP_BUILD:-0}" = 1 ]; then
  [ -x build/bench/workloads ] || { echo "bench_peers: LANES_BENCH_SKIP_BUILD=1 but no" \
    "build/bench/workloads" >&2; exit 1; }
  say "not building lanes (LANES_BENCH_SKIP_BUILD=1): using build/bench/workloads as it is"
else
  lanes_install_deps
  lanes_python_env  # build/venv: nanobind, for the Python extension
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  say "building lanes (Release, targets workloads and _lanes)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLANES_BUILD_PYTHON=ON \
    -DPython_EXECUTABLE="$LANES_VENV/bin/python" "${launcher[@]}" >/dev/null
  cmake --build build -j "$(nproc)" --target workloads _lanes >/dev/null
fi
# lanes' Python package (build/python): its extension is built for build/venv's Python, which
# must be the CPython build/peers-venv runs (both are made from python3).
lanes_python=0
if ! compgen -G "build/python/lanes/_lanes*.so" >/dev/null; then
  echo "bench_peers: no build/python/lanes/_lanes*.so: no lanes-python run" >&2
elif ! PYTHONPATH=build/python "$py" -c "import lanes" 2>/dev/null; then
  echo "bench_peers: build/python/lanes does not import in $py (built for another Python?):" \
    "no lanes-python run" >&2
else
  lanes_python=1
fi
# MLX (mlx[cpu]: the mlx wheel and its CPU library mlx-cpu): a peer when it imports.
mlx=0
if ! "$py" -c "import mlx.core" 2>/dev/null; then
  echo "bench_peers: mlx does not import in $py (pip install 'mlx[cpu]'): no mlx run" >&2
else
  mlx=1
fi

# ---- 3. the inputs -------------------------------------------------------------------------------
inputs=build/peers-inputs
rm -rf "$inputs"
# --quick too: a workload that shrinks under it (perex_grad_norms) dumps the inputs it runs on.
build/bench/workloads --dump-inputs "$inputs" "${quick[@]}" "${selected[@]}" >/dev/null
say "inputs in $inputs"

# ---- 4. the systems on the same cores ------------------------------------------------------------
pin=()
if [ "$(nproc)" -ge "$threads" ] && command -v taskset >/dev/null; then
  pin=(taskset -c "0-$((threads - 1))")
else
  echo "bench_peers: $threads threads on $(nproc) cores: not pinning to cores" >&2
fi
failed=0
say_errors() {  # say_errors NAME: the failing variants in $results/NAME.jsonl, on stderr
  if grep -q '"error"' "$results/$1.jsonl"; then
    echo "bench_peers: $1 had failing variants:" >&2
    grep '"error"' "$results/$1.jsonl" | cut -c1-300 >&2
  fi
}
run() {  # run NAME COMMAND...: its JSON lines to $results/NAME.jsonl, its stderr to NAME.log
  local name=$1
  shift
  say "running $name"
  if ! "${pin[@]}" "$@" > "$results/$name.jsonl" 2> "$results/$name.log"; then
    echo "bench_peers: $name exited nonzero; see $results/$name.log" >&2
    failed=1
  fi
  say_errors "$name"
}
# run_row NAME WORKLOAD COMMAND...: as run, for one workload, appending to NAME.jsonl / NAME.log.
run_row() {
  local name=$1 row=$2
  shift 2
  if ! "${pin[@]}" "$@" --workload "$row" >> "$results/$name.jsonl" 2>> "$results/$name.log"; then
    echo "bench_peers: $name exited nonzero on $row; see $results/$name.log" >&2
    failed=1
  fi
}
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
lanes_cmd=(build/bench/workloads --json-only --threads "$threads" "${quick[@]}")
lanes_py_cmd=(env "PYTHONPATH=$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" "$py"
  bench/peers/lanes_workloads.py --inputs "$inputs" --threads "$threads" "${quick[@]}")
jax_cmd=("$py" bench/peers/jax_workloads.py --inputs "$inputs" --threads "$threads"
  "${quick[@]}")
torch_cmd=("$py" bench/peers/torch_workloads.py --inputs "$inputs" --threads "$threads"
  "${quick[@]}")
mlx_cmd=("$py" bench/peers/mlx_workloads.py --inputs "$inputs" --threads "$threads"
  "${quick[@]}")

if [ "$twin" = 1 ]; then
  # The twin and the run measured beside it each get a session and so a process group of their
  # own (setsid: PID = PGID, as a background job of this non-interactive shell is never a group
  # leader), which is what is killed, torch's compile workers included; the trap does it when
  # this script exits early. Ctrl-C reaches this script, whose trap then kills both groups.
  groups=()
  group_alive() {  # group_alive PGID: a process of the group is left, zombies aside
    ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ {f = 1} END {exit !f}'
  }
  kill_groups() {  # SIGTERM to every group in $groups, SIGKILL to what is left after 5 s
    local g left
    [ ${#groups[@]} -gt 0 ] || return 0
    for g in "${groups[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
    for _ in {1..50}; do
      left=0
      for g in "${groups[@]}"; do
        if group_alive "$g"; then left=1; fi
      done
      if [ "$left" = 0 ]; then break; fi
      sleep 0.1
    done
    for g in "${groups[@]}"; do
      kill -KILL -- "-$g" 2>/dev/null || true
      wait "$g" 2>/dev/null || true
    done
    groups=()
  }
  trap kill_groups EXIT
  trap 'kill_groups; exit 129' HUP
  trap 'kill_groups; exit 130' INT
  trap 'kill_groups; exit 143' TERM
  # run_beside_twin NAME COMMAND...: COMMAND's JSON lines to $results/NAME-twin.jsonl (its stderr
  # to NAME-twin.log) while a twin of COMMAND, output discarded, runs beside it in a loop; one
  # line per twin run in NAME-twin.twin.log.
  run_beside_twin() {
    local name=$1-twin rc=0 measured
    shift
    say "running $name (a twin of the same command on the same cores, restarted until done)"
    : > "$results/$name.twin.log"
    # shellcheck disable=SC2016  # $1, $@, $SECONDS: the twin's shell expands them
    setsid bash -c 'log=$1; shift
      while :; do
        t=$SECONDS; rc=0; "$@" > /dev/null 2>&1 || rc=$?
        echo "twin exited $rc after $((SECONDS - t)) s" >> "$log"
        [ "$rc" = 0 ] || sleep 1  # no busy loop when it cannot start
      done' twin "$results/$name.twin.log" "${pin[@]}" "$@" < /dev/null > /dev/null 2>&1 &
    groups+=($!)
    setsid "${pin[@]}" "$@" < /dev/null > "$results/$name.jsonl" 2> "$results/$name.log" &
    measured=$!
    groups+=("$measured")
    wait "$measured" || rc=$?
    kill_groups
    say "$name: twin runs finished beside it: $(grep -c . "$results/$name.twin.log")" \
      "($results/$name.twin.log; the one cut short at the end not counted)"
    if [ "$rc" != 0 ]; then
      echo "bench_peers: $name exited with $rc; see $results/$name.log" >&2
      failed=1
    fi
    say_errors "$name"
  }
  run lanes "${lanes_cmd[@]}" "${selected[@]}"
  run_beside_twin lanes "${lanes_cmd[@]}" "${selected[@]}"
  if [ "$lanes_python" = 1 ]; then
    run lanes-python "${lanes_py_cmd[@]}" "${selected[@]}"
    run_beside_twin lanes-python "${lanes_py_cmd[@]}" "${selected[@]}"
  fi
  run jax "${jax_cmd[@]}" "${selected[@]}"
  run_beside_twin jax "${jax_cmd[@]}" "${selected[@]}"
  run torch "${torch_cmd[@]}" "${selected[@]}"
  run_beside_twin torch "${torch_cmd[@]}" "${selected[@]}"
  if [ "$mlx" = 1 ]; then
    run mlx "${mlx_cmd[@]}" "${selected[@]}"
    run_beside_twin mlx "${mlx_cmd[@]}" "${selected[@]}"
  fi
else
  # Row by row, every system one after the other on each workload: a row's cells are measured
  # within a minute or two of each other, not the whole run apart. This VM's speed drifts by
  # 20-40% over tens of minutes (host load it cannot see), which moved whole columns against
  # each other when each system ran all its rows in turn.
  rows=()
  for ((i = 1; i < ${#selected[@]}; i += 2)); do rows+=("${selected[i]}"); done
  [ ${#rows[@]} -gt 0 ] || mapfile -t rows < <(build/bench/workloads --list)
  systems=(lanes)
  if [ "$lanes_python" = 1 ]; then systems+=(lanes-python); fi
  systems+=(jax torch)
  if [ "$mlx" = 1 ]; then systems+=(mlx); fi
  for s in "${systems[@]}"; do : > "$results/$s.jsonl"; : > "$results/$s.log"; done
  for row in "${rows[@]}"; do
    say "$row: ${systems[*]}"
    run_row lanes "$row" "${lanes_cmd[@]}"
    if [ "$lanes_python" = 1 ]; then run_row lanes-python "$row" "${lanes_py_cmd[@]}"; fi
    run_row jax "$row" "${jax_cmd[@]}"
    run_row torch "$row" "${torch_cmd[@]}"
    if [ "$mlx" = 1 ]; then run_row mlx "$row" "${mlx_cmd[@]}"; fi
  done
  for s in "${systems[@]}"; do say_errors "$s"; done
fi

# ---- 5. the table and the chart ------------------------------------------------------------------
peers_dir=$out_dir
peers_name=peers
[ ${#selected[@]} -gt 0 ] && peers_name=peers_subset  # a subset never replaces the full table
[ "$twin" = 1 ] && peers_dir=$results  # --beside-twin leaves bench/results/peers.* alone
say "writing $peers_dir/$peers_name.md and $peers_dir/$peers_name.png"
report=0
python_report=()
[ "$lanes_python" = 1 ] && python_report=(--lanes-python "$results/lanes-python.jsonl")
mlx_report=()
[ "$mlx" = 1 ] && mlx_report=(--mlx "$results/mlx.jsonl")
"$py" bench/peers/report.py --lanes "$results/lanes.jsonl" --jax "$results/jax.jsonl" \
  --torch "$results/torch.jsonl" "${mlx_report[@]}" "${python_report[@]}" --threads "$threads" --load "$load" \
  "${quick[@]}" \
  --elapsed "$((SECONDS - start)) s (${installed:-no installs})" \
  --md "$peers_dir/$peers_name.md" --png "$peers_dir/$peers_name.png" || report=1
if [ "$twin" = 1 ]; then
  say "writing $out_dir/contention_peers.md"
  "$py" bench/peers/contention_report.py --results "$results" --threads "$threads" \
    --load "$load" "${quick[@]}" --md "$out_dir/contention_peers.md" || report=1
fi
say "done"
exit $((failed | report))
