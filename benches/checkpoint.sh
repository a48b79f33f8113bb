#!/usr/bin/env bash
# What a checkpoint costs: seconds and bytes of one checkpoint of std PHOLD (1 024 LPs, end
# 1000, saved at 500), big PHOLD (16 384 LPs, end 100, at 50) and a million LPs (1 048 576 LPs,
# end 2, at 1), each executor at 2 threads, beside the run's own time per simulated time unit
# (wall / end of the same run without a checkpoint). Also checks that the run with the
# checkpoint and the run restored from it end with the fingerprint of the run without.
#
# Usage: benches/checkpoint.sh path/to/chronon [DIR]   (DIR: where checkpoints go; default a
# temporary directory on the disk of /tmp). CONFIGS="std big" picks configurations (also
# `tiny`, 64 LPs, to try the script).
set -euo pipefail
bin=${1:?usage: $0 CHRONON [DIR]}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
trap 'rm -rf "$dir"/ck "$dir"/*.json' EXIT
execs=("--sync seq" "--sync window --threads 2" "--sync null-message --threads 2"
       "--sync lockstep --threads 2" "--sync timewarp --threads 2")
# run_s: the run without a checkpoint (wall, initialization excluded); s/unit: run_s / end;
# ckpt_s: writing the checkpoint (first part started to directory in place); extra_s: what the
# run with the checkpoint took more than the one without, initialization included (writing,
# reading it back, starting the executor again); restore_s: initialization of the run restored
# from it (reading, checking, building the LPs and pending sets).
printf '%-7s %-34s %9s %9s %12s %9s %9s %9s %5s\n' config executor run_s s/unit ckpt_bytes ckpt_s extra_s restore_s same
for cfg in ${CONFIGS:-std big million}; do
  case $cfg in
    tiny) model="--lps 64 --end 20"; at=10; end=20 ;;
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
extra = (c["wall_s"] + c["init_s"]) - (p["wall_s"] + p["init_s"])
print(f"{cfg:7s} {e:34s} {p['wall_s']:9.3f} {p['wall_s']/end:9.4f} {ck['bytes']:12d} "
      f"{ck['seconds']:9.3f} {extra:9.3f} {r['init_s']:9.3f} {str(same):>5s}")
PY
  done
done
