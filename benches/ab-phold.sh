#!/usr/bin/env bash
# Two chronon binaries side by side on std PHOLD (1024 LPs, end 1000) and big PHOLD (16 384 LPs,
# end 100), seq and every parallel executor at 2 threads, interleaved (old, new, old, new, ...)
# so that load from elsewhere hits both alike; the fastest of REPS runs of each is kept.
# Prints events/s of each and new/old.
#
# Usage: benches/ab-phold.sh path/to/old/chronon path/to/new/chronon [REPS]
set -euo pipefail
old=${1:?usage: $0 OLD NEW [REPS]}
new=${2:?usage: $0 OLD NEW [REPS]}
reps=${3:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
execs=("--sync seq" "--sync window --threads 2" "--sync null-message --threads 2"
       "--sync lockstep --threads 2" "--sync timewarp --threads 2")
for cfg in std big; do
  if [ "$cfg" = std ]; then model="--lps 1024 --end 1000"; else model="--lps 16384 --end 100"; fi
  for _ in $(seq "$reps"); do
    for e in "${execs[@]}"; do
      for which in old new; do
        bin=$old; [ "$which" = new ] && bin=$new
        # shellcheck disable=SC2086
        "$bin" run phold $model $e --seed 1 --pin off --output "$dir/r.json" >/dev/null
        eps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events_per_s'])" "$dir/r.json")
        echo "$cfg|$e|$which|$eps" >> "$dir/rows"
      done
    done
  done
done
python3 - "$dir/rows" <<'PY'
import collections, sys
best = collections.defaultdict(float)
for line in open(sys.argv[1]):
    c, e, b, v = line.strip().split('|')
    best[(c, e, b)] = max(best[(c, e, b)], float(v))
print(f"{'config':6} {'executor':34} {'old ev/s':>12} {'new ev/s':>12} {'new/old':>8}")
for c, e in sorted({(c, e) for c, e, _ in best}):
    o, n = best[(c, e, 'old')], best[(c, e, 'new')]
    print(f"{c:6} {e:34} {o:12.0f} {n:12.0f} {n / o:8.3f}")
PY
