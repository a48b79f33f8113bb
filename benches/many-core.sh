#!/usr/bin/env bash
# The many-core scaling study in one run: `chronon experiment ours-scaling` on PHOLD big
# (16 384 LPs) and large (262 144 LPs, end 20), every executor at 1, 2, 4, 8 and 16 threads
# (pinned: `--pin auto` pins workers that fit the cores), and --procs 16 --threads 1 /
# --procs 4 --threads 4 under window and Time Warp; one repetition. Then the moving hot spot
# (PHOLD, 4 096 LPs, 256 hot LPs of 20 us moving every 5 time units) under every executor at
# 2-16 threads (lock-step and null messages at 16) with the block and round-robin mappings and
# --balance 1 / auto; then the seed
# experiments that need more than 2 cores, quick (003 PHOLD phases, 001 partition sets, 002
# graph 2). About 9 minutes on a 16-core machine. Writes under $OUT:
#   machine.txt               the machine (lscpu, NUMA nodes, the binary's --version)
#   big/ours-scaling.{csv,md,svg}, large/ours-scaling.{csv,md,svg}, */runs/*.json
#   hotspot.csv               sync, threads, mapping, balance, wall and elapsed seconds,
#                             imbalance, LPs moved, fingerprint (one line per run; seq first)
#   seeds/<experiment>/       each seed experiment's CSV, table and figure
#   log.txt                   every measurement's wall time as it ran
#   bundle.tgz                all of the above in one file (a machine that returns few files)
#
# Usage: OUT=/tmp/out benches/many-core.sh path/to/chronon
#   MANY_CORE_TINY=1   tiny sizes (--quick, threads 1,2, split 2x1): a check of the script
#                      itself on any machine, under a minute
#   THREADS=1,2,4,8,16 the thread counts; SPLITS=16x1,4x4 the process splits; REPS=1
#   HOT_THREADS=2,4,8,16 the hot spot's thread counts
set -euo pipefail
bin=${1:?usage: OUT=DIR $0 path/to/chronon}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }
out=${OUT:-many-core-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "${MANY_CORE_TINY:-0}" = 1 ]; then
  size=(--quick) threads=${THREADS:-1,2} splits=${SPLITS:-2x1}
else
  size=() threads=${THREADS:-1,2,4,8,16} splits=${SPLITS:-16x1,4x4}
fi
reps=${REPS:-1}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "binary: $("$bin" --version)"
  echo "nproc: $(nproc)"
  echo "numa nodes: $(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
  for n in /sys/devices/system/node/node[0-9]*; do
    [ -e "$n/cpulist" ] && echo "  $(basename "$n"): cpus $(cat "$n/cpulist")"
  done
  command -v lscpu >/dev/null && lscpu
} >"$out/machine.txt" 2>&1

start=$SECONDS
for config in big large; do
  echo "== [$((SECONDS - start)) s] $config" | tee -a "$out/log.txt"
  "$bin" experiment ours-scaling "${size[@]}" --configs "$config" --threads "$threads" \
    --splits "$splits" --reps "$reps" --out "$out/$config" 2>&1 | tee -a "$out/log.txt"
done

# The moving hot spot: balancing off (block, round-robin) and on (--balance 1, auto).
if [ "${MANY_CORE_TINY:-0}" = 1 ]; then
  hot=(--lps 256 --hot-lps 16 --hot-move 5 --end 10) hot_threads=${HOT_THREADS:-2}
else
  hot=(--lps 4096 --hot-lps 256 --hot-move 5 --end 20) hot_threads=${HOT_THREADS:-2,4,8,16}
fi
echo "== [$((SECONDS - start)) s] hot spot" | tee -a "$out/log.txt"
csv="$out/hotspot.csv"
echo "sync,threads,mapping,balance,wall_s,elapsed_s,imbalance,lps_moved,fingerprint" >"$csv"
hot_run() { # sync threads mapping balance
  local r="$out/hotspot-run.json" t0 t1
  t0=$(date +%s.%N)
  local how=(--mapping "$3" --balance "$4")
  [ "$1" = seq ] && how=()
  "$bin" run phold "${hot[@]}" --hot-work-us 20 --seed 1 --sync "$1" --threads "$2" \
    "${how[@]}" --output "$r" >/dev/null
  t1=$(date +%s.%N)
  python3 - "$r" "$1" "$2" "$3" "$4" "$t0" "$t1" >>"$csv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
par, st = r.get("parallelism", {}), r.get("executor_stats", {})
print(",".join([sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], f"{r['wall_s']:.4f}",
                f"{float(sys.argv[7]) - float(sys.argv[6]):.4f}", str(par.get("imbalance") or ""),
                str(st.get("lps_moved", 0)), r["fingerprint"]]))
PY
  tail -1 "$csv" | tee -a "$out/log.txt"
}
hot_run seq 1 block off
# Window and Time Warp at every thread count; lock-step and null messages at the largest.
for sync in window timewarp lockstep null-message; do
  counts=${hot_threads//,/ }
  case $sync in lockstep | null-message) counts=${counts##* } ;; esac
  for t in $counts; do
    for variant in "block off" "round-robin off" "block 1" "block auto"; do
      # shellcheck disable=SC2086
      hot_run "$sync" "$t" $variant
    done
  done
done
rm -f "$out/hotspot-run.json"

# The seed experiments that need more than 2 cores, quick.
for e in 003-phold-phases 001-balance 002-graph2; do
  echo "== [$((SECONDS - start)) s] $e" | tee -a "$out/log.txt"
  "$bin" experiment "$e" --quick --out "$out/seeds/$e" 2>&1 | tail -3 | tee -a "$out/log.txt" ||
    echo "$e failed" | tee -a "$out/log.txt"
done
echo "== [$((SECONDS - start)) s] done: $out" | tee -a "$out/log.txt"
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" && mv "$out.tgz" "$out/bundle.tgz"
