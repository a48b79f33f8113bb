#!/bin/bash
# Old and new binaries side by side, window / lockstep / null-message x 2 threads, one model.
# Usage: OLD=/work/chronon-old NEW=target/release/chronon docs/topology-bench.sh MODEL [flags...]
# Prints events, wall seconds, rounds, events per round, null messages and the fingerprint.
OLD=${OLD:-/work/chronon-old}
NEW=${NEW:-target/release/chronon}
model=$1
shift
out=$(mktemp -d)
for sync in window lockstep null-message; do
  for which in old new; do
    bin=$OLD
    [ "$which" = new ] && bin=$NEW
    rm -f "$out/r.json"
    if "$bin" run "$model" "$@" --sync "$sync" --threads 2 --output "$out/r.json" >"$out/log" 2>&1; then
      python3 - "$out/r.json" "$which" "$sync" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["executor_stats"]
ev = r["committed"]
rounds = s.get("rounds")
per = f"{rounds / ev:.3f}" if rounds else "-"
print(f"{sys.argv[2]:<4} {sys.argv[3]:<13} events={ev} wall={r['wall_s']:.3f}s "
      f"rounds={rounds and int(rounds)} rounds/event={per} "
      f"nulls={s.get('null_messages') and int(s['null_messages'])} fp={r['fingerprint']}")
PY
    else
      echo "$which $sync: $(tail -1 "$out/log")"
    fi
  done
done
rm -rf "$out"
