"""What a lookahead costs and buys, on the machine shop: a call between a cell and the depot
takes `call` time units, the model's lookahead. Prints, for each call time, the availability
(fidelity: machines wait 2 x call longer per failure) and the parallel executors' work per
round (what a window as wide as the lookahead holds) and wall time.

    python examples/python/simpy/lookahead.py [--end 2000] [--reps 4]
"""

import argparse
import statistics

import chronon_pdes as chronon
from machineshop import MachineShop, availability_theory


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--end", type=float, default=2000.0)
    ap.add_argument("--reps", type=int, default=4)
    a = ap.parse_args()
    print(f"machine shop: 4 cells x 5 machines, 3 repairmen, mttf 10, mttr 1; end {a.end}; "
          f"theory without delay {availability_theory(20, 3, 10.0, 1.0):.4f}\n")
    print("| call (lookahead) | availability (seq, mean of reps) | window x2: events per round | window x2 wall s "
          "| null-message x2 wall s | seq wall s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for call in [0.0, 0.01, 0.05, 0.2, 1.0]:
        seq = [chronon.run(MachineShop(call=call, end=a.end), seed=s + 1, progress=False) for s in range(a.reps)]
        av = statistics.fmean(r.model_stats["up"] / r.model_stats["machine_time"] for r in seq)
        w = chronon.run(MachineShop(call=call, end=a.end), sync="window", threads=2, progress=False)
        if call > 0:
            n = chronon.run(MachineShop(call=call, end=a.end), sync="null-message", threads=2, progress=False)
            nwall = f"{n.wall_s:.2f}"
        else:
            nwall = "refused (needs lookahead > 0)"
        print(f"| {call} | {av:.4f} | {w.executor_stats['events_per_round']:.1f} | {w.wall_s:.2f} | {nwall} | "
              f"{min(r.wall_s for r in seq):.2f} |")


if __name__ == "__main__":
    main()
