#!/usr/bin/env bash
# Two chronon binaries side by side over every transport: std and big PHOLD at 2 threads (seq
# and each parallel executor), std PHOLD at --procs 2 --threads 1, and, given two MPI builds,
# std PHOLD under `mpiexec -n 2` (window and Time Warp, 1 thread per rank). Runs are interleaved
# and the order flips every repetition, so that load from elsewhere hits both alike. Writes one
# row per run (config|executor|old or new|events/s|fingerprint|wall s) to ROWS and prints the
# best and median new/old per row.
#
# Usage: benches/ab-transports.sh OLD NEW [OLD_MPI NEW_MPI]
#   REPS (default 3), ROWS (default ab-rows.txt), STD and BIG (the two PHOLD sizes).
set -uo pipefail
old=${1:?usage: $0 OLD NEW [OLD_MPI NEW_MPI]}
new=${2:?usage: $0 OLD NEW [OLD_MPI NEW_MPI]}
old_mpi=${3:-}
new_mpi=${4:-}
reps=${REPS:-3}
rows=${ROWS:-ab-rows.txt}
std=${STD:-"--lps 1024 --end 1000"}
big=${BIG:-"--lps 16384 --end 100"}
: > "$rows"

one() { # config label old|new command...
  local cfg=$1 label=$2 which=$3 out eps fp wall
  shift 3
  out=$(timeout 120 "$@" --seed 1 --pin off 2>&1)
  eps=$(awk '/^events\/s/ {print $2}' <<<"$out")
  fp=$(awk '/^fingerprint/ {print $2}' <<<"$out")
  wall=$(awk '/^wall/ {print $2}' <<<"$out")
  echo "$cfg|$label|$which|${eps:-FAIL}|$fp|$wall" >> "$rows"
  [ -n "$eps" ] || echo "failed: $cfg $label $which: $(tail -c 300 <<<"$out")" >&2
}

threads=("seq|--sync seq" "window|--sync window --threads 2"
  "null-message|--sync null-message --threads 2" "lockstep|--sync lockstep --threads 2"
  "timewarp|--sync timewarp --threads 2")
procs=("window-p2|--sync window --threads 1 --procs 2"
  "null-message-p2|--sync null-message --threads 1 --procs 2"
  "lockstep-p2|--sync lockstep --threads 1 --procs 2"
  "timewarp-p2|--sync timewarp --threads 1 --procs 2")
for rep in $(seq "$reps"); do
  order="old new"
  [ $((rep % 2)) -eq 0 ] && order="new old"
  for e in "${threads[@]}" "${procs[@]}"; do
    for which in $order; do
      bin=$old; [ "$which" = new ] && bin=$new
      # shellcheck disable=SC2086
      one std "${e%%|*}" "$which" "$bin" run phold $std ${e#*|}
    done
  done
  for e in "${threads[@]}"; do
    for which in $order; do
      bin=$old; [ "$which" = new ] && bin=$new
      # shellcheck disable=SC2086
      one big "${e%%|*}" "$which" "$bin" run phold $big ${e#*|}
    done
  done
  if [ -n "$new_mpi" ]; then
    for s in window timewarp; do
      for which in $order; do
        bin=$old_mpi; [ "$which" = new ] && bin=$new_mpi
        # shellcheck disable=SC2086
        one mpi "$s-n2" "$which" mpiexec -n 2 "$bin" run phold $std --sync "$s" --threads 1
      done
    done
  fi
done

python3 - "$rows" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
prints = collections.defaultdict(set)
for line in open(sys.argv[1]):
    cfg, label, which, eps, fp, _ = line.rstrip("\n").split("|")
    if eps != "FAIL":
        runs[(cfg, label, which)].append(float(eps))
        prints[cfg].add(fp)
print(f"{'config':6} {'executor':16} {'runs':>4} {'best new/old':>12} {'median new/old':>14}")
for cfg, label in sorted({(c, l) for c, l, _ in runs}):
    o, n = runs[(cfg, label, "old")], runs[(cfg, label, "new")]
    if o and n:
        print(f"{cfg:6} {label:16} {len(o):4} {max(n) / max(o):12.3f} "
              f"{statistics.median(n) / statistics.median(o):14.3f}")
for cfg, fps in sorted(prints.items()):
    print(f"fingerprints of {cfg}: {' '.join(sorted(fps))}")
PY
