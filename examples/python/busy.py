# %% [markdown]
# # Parallel Python that pays: work per event, worker processes
#
# `lps` LPs in `groups` groups; every LP starts `jobs` jobs. Handling a job costs `work`
# iterations of a pure-Python loop (with work=1000, about 170 µs per event under `seq` on the
# 2-core machine, docs/benchmarks.md: the model's own computation, which the GIL serializes
# under threads but two worker processes run side by side), then the job moves on after
# 1 + Exp(1) time units (the lookahead is 1): to a random LP of its own group, or with
# probability `remote` to a random LP anywhere.
#
# With `procs=2` and the block mapping each process holds whole groups, so most events stay in
# their process and are never pickled (only an event to an LP of another process is). Run it
# as a script to compare `seq` with `procs=2`:
#
#     python examples/python/busy.py [--work 1000] [--end 40] [--reps 3]

# %%
import argparse
import time

import chronon_pdes as chronon


class Busy:
    lookahead = 1.0
    counters = ["remote"]

    def __init__(self, lps=64, groups=2, jobs=4, work=1000, remote=0.02, end=40.0):
        self.lps = lps
        self.groups = groups
        self.jobs = jobs
        self.work = work
        self.remote = remote
        self.end = end

    def init(self, ctx):
        for j in range(self.jobs):
            ctx.send(ctx.me(), 1.0 + ctx.rng().expovariate(1.0), (ctx.me(), j))
        return {"handled": 0, "checksum": 0}

    def on_event(self, st, job, ctx):
        acc = ctx.me()
        for i in range(self.work):
            acc = (acc * 31 + i) % 1000003
        st["handled"] += 1
        st["checksum"] = (st["checksum"] + acc) % 1000003
        rng = ctx.rng()
        if rng.random() < self.remote:
            dst = rng.randrange(self.lps)
            ctx.count("remote")
        else:
            size = self.lps // self.groups
            first = ctx.me() // size * size
            dst = first + rng.randrange(size)
        ctx.send(dst, 1.0 + rng.expovariate(1.0), job)

    def finish(self, lp, st, stats):
        stats.add("handled", st["handled"])
        stats.add("checksum", st["checksum"])


# %%
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=int, default=1000)
    ap.add_argument("--end", type=float, default=40.0)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    model = Busy(work=a.work, end=a.end)
    runs = {}
    for name, opts in [("seq", {}), ("procs=2", dict(sync="window", threads=1, procs=2))]:
        best = None
        for _ in range(a.reps):
            t0 = time.perf_counter()
            r = chronon.run(model, progress=False, **opts)
            total = time.perf_counter() - t0
            if best is None or r.wall_s < best[0].wall_s:
                best = (r, total)
        runs[name] = best
        r, total = best
        print(f"{name:8} {r.committed} events, {r.wall_s:.3f} s ({total:.3f} s with the child's "
              f"start), {1e6 * r.wall_s / r.committed:.1f} us per event, fingerprint {r.fingerprint}")
    (s, s_total), (p, p_total) = runs["seq"], runs["procs=2"]
    assert s.fingerprint == p.fingerprint and s.model_stats == p.model_stats
    print(f"procs=2 / seq: {s.wall_s / p.wall_s:.2f}x ({s_total / p_total:.2f}x with the child's "
          f"start); {p.model_stats.get('remote', 0):.0f} remote sends")


if __name__ == "__main__":
    main()
