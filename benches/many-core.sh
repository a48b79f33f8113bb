#!/usr/bin/env bash
# The many-core scaling study in one run: `chronon experiment ours-scaling` on PHOLD big
# (16 384 LPs) and large (262 144 LPs, end 20), every executor at 1, 2, 4, 8 and 16 threads
# (pinned: `--pin auto` pins workers that fit the cores), and --procs 16 --threads 1 /
# --procs 4 --threads 4 under window and Time Warp; one repetition. About 6 minutes on a
# 16-core machine. Writes under $OUT:
#   machine.txt               the machine (lscpu, NUMA nodes, the binary's --version)
#   big/ours-scaling.{csv,md,svg}, large/ours-scaling.{csv,md,svg}, */runs/*.json
#   log.txt                   every measurement's wall time as it ran
#
# Usage: OUT=/tmp/out benches/many-core.sh path/to/chronon
#   MANY_CORE_TINY=1   tiny sizes (--quick, threads 1,2, split 2x1): a check of the script
#                      itself on any machine, under a minute
#   THREADS=1,2,4,8,16 the thread counts; SPLITS=16x1,4x4 the process splits; REPS=1
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
echo "== [$((SECONDS - start)) s] done: $out" | tee -a "$out/log.txt"
