"""``hetquic-sweep-bench``: what Ray and Dask add to a sweep on this machine.

Prints a Markdown table (for a ``gen measured`` block in docs/sweeps.md),
a column per engine: a sweep end to end on the driver's default local
cluster; the start-up of a local cluster of two one-CPU workers and a first
sweep on it; then, in rounds, the same experiment in one ``hetquic exp run
--workers 1`` process (the baseline) and as FEW and MANY shards on that
cluster. The engine's cost per task comes from the two shard counts:
(T(many) − T(few)) × workers / (many − few).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from statistics import median

from .driver import ENGINES, SweepError, _find_binary, run_sweep

WORKERS = 2  # this machine's cores; each worker gets one


@contextmanager
def _ray_cluster():
    """A head with no CPU and two one-CPU nodes, on 127.0.0.1: every shard
    runs on a worker node, as on two machines."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        for _ in range(WORKERS):
            cluster.add_node(num_cpus=1)
        yield cluster.address
    finally:
        cluster.shutdown()


@contextmanager
def _dask_cluster():
    """A scheduler and two one-thread worker processes, on 127.0.0.1."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=None, silence_logs=logging.ERROR)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


CLUSTERS = {"ray": _ray_cluster, "dask": _dask_cluster}


def _timed(f):
    start = time.monotonic()
    value = f()
    return time.monotonic() - start, value


def measure(engine: str, spec: str, binary: str, seeds: list[str], few: int, many: int, rounds: int,
            tmp: Path) -> dict[str, float]:
    """One engine's column: seconds, and the two ratios. Other jobs share
    the machine and its load drifts, so each round times one process, FEW
    shards and MANY shards back to back, and the ratios are taken within a
    round; the column gives the medians over the rounds."""
    m: dict[str, float] = {}

    def sweep(name: str, address, shards: int):
        return run_sweep(spec, binary=binary, out=tmp / f"{engine}-{name}", engine=engine,
                         extra=seeds, address=address, shards=shards, progress=False)

    def single() -> float:
        t, p = _timed(lambda: subprocess.run(
            [binary, "exp", "run", spec, *seeds, "--workers", "1", "--quiet", "--out", str(tmp / f"{engine}-single")],
            capture_output=True, text=True))
        if p.returncode != 0:
            raise SweepError(p.stderr.strip().splitlines()[-1])
        return t

    m["local"], _ = _timed(lambda: sweep("local", None, few))
    clusters = CLUSTERS[engine]()
    m["start"], address = _timed(clusters.__enter__)
    r: dict[str, list[float]] = {k: [] for k in ("single", "few", "fixed", "many")}
    try:
        # The first sweep sets the workers up (the binary reaches each of
        # them): not a per-task cost. Many shards, so that every worker
        # gets some.
        m["first"] = sweep("first", address, many).seconds
        for _ in range(rounds):
            r["single"].append(single())
            total, res = _timed(lambda: sweep("few", address, few))
            r["few"].append(res.seconds)
            r["fixed"].append(total - res.seconds)
            r["many"].append(sweep("many", address, many).seconds)
    finally:
        clusters.__exit__(None, None, None)
    m.update({k: median(v) for k, v in r.items()})
    m["speedup"] = median(s / f for s, f in zip(r["single"], r["few"]))
    m["per_task"] = median((n - f) * WORKERS / (many - few) for f, n in zip(r["few"], r["many"]))
    return m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hetquic-sweep-bench", description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default="sweep-wifi-loss", help="experiment (default sweep-wifi-loss)")
    ap.add_argument("--hetquic", default=None, help="the hetquic binary (default: hetquic on PATH)")
    ap.add_argument("--engine", default="ray,dask", help="engines to measure, comma-separated (default ray,dask)")
    ap.add_argument("--few", type=int, default=4, help="shards in the speed-up run")
    ap.add_argument("--many", type=int, default=24, help="shards in the overhead run")
    ap.add_argument("--seeds", type=int, default=100, help="seeds per point (exp run --seeds)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of (one process, few, many) per engine")
    args = ap.parse_args(argv)
    # Every Ray process on loopback (Ray reads this at import).
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    try:
        binary = _find_binary(args.hetquic)
        if not 0 < args.few < args.many:
            raise SweepError("need 0 < --few < --many")
        if args.rounds < 1:
            raise SweepError(f"--rounds {args.rounds}: must be ≥ 1")
        for e in engines:
            if e not in ENGINES:
                raise SweepError(f"--engine {e}: not one of {', '.join(ENGINES)}")
        seeds = ["--seeds", str(args.seeds)]
        cols = {}
        with tempfile.TemporaryDirectory(prefix="hetquic-bench-") as tmp:
            for e in engines:
                cols[e] = measure(e, args.spec, binary, seeds, args.few, args.many, args.rounds, Path(tmp))
    except SweepError as e:
        print(f"hetquic-sweep-bench: {e}", file=sys.stderr)
        return 2
    print(table(args.spec, args.seeds, args.few, args.many, args.rounds, cols))
    return 0


def table(spec: str, seeds: int, few: int, many: int, rounds: int, cols: dict[str, dict[str, float]]) -> str:
    names = {"ray": "Ray", "dask": "Dask"}
    med = f"median of {rounds}" if rounds > 1 else "one round"
    rows = [
        (f"`hetquic-sweep --engine E`, its own local cluster, {few} shards, end to end, s", "local", "{:.2f}"),
        (f"start a local cluster of {WORKERS} one-CPU workers, s", "start", "{:.2f}"),
        (f"first sweep on it, {many} shards (workers get the binary), s", "first", "{:.2f}"),
        (f"one process, `hetquic exp run --workers 1`, s ({med})", "single", "{:.2f}"),
        (f"{few} shards, s ({med})", "few", "{:.2f}"),
        (f"{many} shards, s ({med})", "many", "{:.2f}"),
        (f"a sweep's connect, shipping and merge, s ({med})", "fixed", "{:.2f}"),
        (f"speed-up of {WORKERS} workers over one process, {few} shards ({med})", "speedup", "**{:.2f}×**"),
        (f"cost per task, from ({many} − {few}) more shards, ms ({med})", "per_task", "**{:.0f}**"),
    ]
    lines = [f"| {spec}, {seeds} seeds a point | " + " | ".join(names[e] for e in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for label, key, fmt in rows:
        scale = 1000 if key == "per_task" else 1
        lines.append(f"| {label} | " + " | ".join(fmt.format(c[key] * scale) for c in cols.values()) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
