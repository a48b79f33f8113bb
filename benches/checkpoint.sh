#!/usr/bin/env bash
# What a checkpoint costs: seconds and bytes of one checkpoint of std PHOLD (1 024 LPs, end
# 1000, saved at 500), big PHOLD (16 384 LPs, end 100, at 50) and a million LPs (1 048 576 LPs,
# end 2, at 1), each executor at 2 threads, beside the run's own time per simulated time unit
# (wall / end of the same run without a checkpoint). Also checks that the run with the
# checkpoint and the run restored from it end with the fingerprint of the run without.
#
# Usage: benches/checkpoint.sh path/to/chronon [DIR]   (DIR: where checkpoints go; default a
# temporary directory on the disk of /tmp)
set -euo pipefail
bin=${1:?usage: $0 CHRONON [DIR]}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
trap 'rm -rf "$dir"/ck "$dir"/*.json' EXIT
execs=("--sync seq" "--sync window --threads 2" "--sync null-message --threads 2"
       "--sync lockstep --threads 2" "--sync timewarp --threads 2")
printf '%-7s %-34s %10s %10s %12s %10s %10s %6s\n' config executor "run_s" "s/unit" "ckpt_bytes" "ckpt_s" "restore_s" same
for cfg in std big million; do
  case $cfg in
    std) model="--lps 1024 --end 1000"; at=500; end=1000 ;;
    big) model="--lps 16384 --end 100"; at=50; end=100 ;;
    million) model="--lps 1048576 --end 2"; at=1; end=2 ;;
  esac
  for e in "${execs[@]}"; do
    # shellcheck disable=SC2086
    "$bin" run phold $model $e --seed 1 --pin off --output "$dir/plain.json" >/dev/null
    rm -rf "$dir/ck"
    # shellcheck disable=SC2086
    "$bin" run phold $model $e --seed 1 --pin off --checkpoint-at $at --checkpoint-dir "$dir/ck" \
      --output "$dir/ck.json" >/dev/null
    # shellcheck disable=SC2086
    "$bin" run phold $model $e --seed 1 --pin off --restore "$dir/ck/t$at" --output "$dir/rs.json" >/dev/null
    python3 - "$cfg" "$e" "$end" "$dir" <<'PY'
import json, sys
cfg, e, end, d = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
p, c, r = (json.load(open(f"{d}/{n}.json")) for n in ("plain", "ck", "rs"))
ck = c["checkpoints"][0]
same = p["fingerprint"] == c["fingerprint"] == r["fingerprint"]
print(f"{cfg:7s} {e:34s} {p['wall_s']:10.3f} {p['wall_s']/end:10.4f} {ck['bytes']:12d} "
      f"{ck['seconds']:10.3f} {r['init_s']:10.3f} {str(same):>6s}")
PY
  done
done
