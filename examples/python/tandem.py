# %% [markdown]
# # An M/M/1 tandem in Python, checked against queueing theory
#
# Customers arrive at the first of `stations` single-server stations (Poisson, rate `rate`),
# are served at each in turn (exponential service, rate `service`) and take `transit` time
# units to walk to the next one. With `lines` > 1 the model is that many independent tandems
# side by side (work for parallel runs). By Burke's theorem every station is an M/M/1 queue,
# whose mean time in the station (waiting plus service) is 1 / (service - rate).
#
# Run it as a script (`python examples/python/tandem.py`) or cell by cell in Jupyter (the
# `# %%` markers); `--quick` makes it short.

# %%
import sys

import chronon_pdes as chronon


class Tandem:
    counters = ["arrivals"]

    def __init__(self, stations=4, rate=0.5, service=1.0, transit=1.0, lines=1, end=20000.0):
        self.stations = stations
        self.rate = rate
        self.service = service
        self.transit = transit
        self.lines = lines
        self.end = end

    @property
    def lps(self):
        return self.stations * self.lines

    @property
    def lookahead(self):
        return self.transit

    def init(self, ctx):
        if ctx.me() % self.stations == 0:
            ctx.send(ctx.me(), ctx.rng().expovariate(self.rate), "new")
        return {"queue": [], "served": 0, "time_in_station": 0.0}

    def arrive(self, st, ctx):
        st["queue"].append(ctx.now())
        ctx.count("arrivals")
        if len(st["queue"]) == 1:
            ctx.send(ctx.me(), ctx.rng().expovariate(self.service), "done")

    def on_event(self, st, event, ctx):
        if event == "new":
            ctx.send(ctx.me(), ctx.rng().expovariate(self.rate), "new")
            self.arrive(st, ctx)
        elif event == "arrive":
            self.arrive(st, ctx)
        else:
            came = st["queue"].pop(0)
            st["served"] += 1
            st["time_in_station"] += ctx.now() - came
            if (ctx.me() + 1) % self.stations != 0:
                ctx.send(ctx.me() + 1, self.transit, "arrive")
            if st["queue"]:
                ctx.send(ctx.me(), ctx.rng().expovariate(self.service), "done")

    def finish(self, lp, st, stats):
        stats.add("served", st["served"])
        stats.add("time_in_station", st["time_in_station"])


# %% [markdown]
# ## One long run against the theory

# %%
if __name__ == "__main__":
    quick = "--quick" in sys.argv
    model = Tandem(end=2000.0 if quick else 20000.0)
    report = chronon.run(model)
    stats = report.model_stats
    measured = stats["time_in_station"] / stats["served"]
    theory = 1.0 / (model.service - model.rate)
    print(f"{report.committed} events in {report.wall_s:.2f} s ({report.events_per_s:,.0f} events/s)")
    print(f"mean time in a station: {measured:.3f} (M/M/1 theory: {theory:.3f})")
    assert abs(measured - theory) / theory < (0.25 if quick else 0.1)

    # %% [markdown]
    # ## The same history under every executor

    # %%
    for opts in [dict(sync="window", threads=2), dict(sync="timewarp", threads=2),
                 dict(sync="null-message", threads=1, procs=2)]:
        r = chronon.run(model, **opts)
        print(f"{str(opts):48} fingerprint {r.fingerprint} "
              f"{'same' if r.fingerprint == report.fingerprint else 'DIFFERENT'}")
        assert r.fingerprint == report.fingerprint

    # %% [markdown]
    # ## A sweep over the arrival rate, with 95 % confidence intervals

    # %%
    import tempfile

    rates = [0.3, 0.5, 0.7]
    out = tempfile.mkdtemp(prefix="tandem-study-")
    study = chronon.sweep(Tandem(end=1000.0 if quick else 5000.0), out,
                          params={"rate": rates}, replications=3 if quick else 5, progress=False)
    print(f"{len(study.runs)} runs in {out}")
    rows = study.runs if isinstance(study.runs, list) else study.runs.to_dict("records")

    def per_run(rate):
        """Each replication's mean time in a station at this rate."""
        return [float(r["time_in_station"]) / float(r["served"])
                for r in rows if float(r["rate"]) == rate]

    for rate in rates:
        values = per_run(rate)
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
        print(f"rate {rate}: mean time in a station {mean:.3f} ± {sd:.3f} (sd of "
              f"{len(values)} replications; theory {1 / (1 - rate):.3f})")

    # %% [markdown]
    # ## A plot (with matplotlib installed)

    # %%
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        xs = [0.1 * k for k in range(1, 10)]
        plt.plot(xs, [1 / (1 - x) for x in xs], label="M/M/1 theory")
        for rate in rates:
            values = per_run(rate)
            plt.scatter([rate] * len(values), values, color="k", s=8)
        plt.xlabel("arrival rate (service rate 1)")
        plt.ylabel("mean time in a station")
        plt.legend()
        plt.savefig(f"{out}/time-in-station.png")
        print(f"plot: {out}/time-in-station.png")
