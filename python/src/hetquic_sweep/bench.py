"""``hetquic-sweep-bench``: what Ray adds to a sweep on this machine.

Prints a Markdown table (for a ``gen measured`` block in docs/sweeps.md):
the same experiment in one ``hetquic exp run --workers 1`` process and as
shards on a local Ray cluster of two one-CPU workers, and Ray's cost per task
from two shard counts: (T(many) − T(few)) × workers / (many − few).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .driver import SweepError, _find_binary, run_sweep

WORKERS = 2  # this machine's cores; each worker node gets one


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hetquic-sweep-bench", description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default="sweep-wifi-loss", help="experiment (default sweep-wifi-loss)")
    ap.add_argument("--hetquic", default=None, help="the hetquic binary (default: hetquic on PATH)")
    ap.add_argument("--few", type=int, default=4, help="shards in the speed-up run")
    ap.add_argument("--many", type=int, default=24, help="shards in the overhead run")
    ap.add_argument("--seeds", type=int, default=100, help="seeds per point (exp run --seeds)")
    args = ap.parse_args(argv)
    # Every Ray process on loopback (Ray reads this at import).
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from ray.cluster_utils import Cluster

    try:
        binary = _find_binary(args.hetquic)
        if not 0 < args.few < args.many:
            raise SweepError("need 0 < --few < --many")
        with tempfile.TemporaryDirectory(prefix="hetquic-bench-") as tmp:
            start = time.monotonic()
            seeds = ["--seeds", str(args.seeds)]
            p = subprocess.run([binary, "exp", "run", args.spec, *seeds, "--workers", "1", "--quiet",
                                "--out", str(Path(tmp) / "single")], capture_output=True, text=True)
            single = time.monotonic() - start
            if p.returncode != 0:
                raise SweepError(p.stderr.strip().splitlines()[-1])
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
            for _ in range(WORKERS):
                cluster.add_node(num_cpus=1)
            try:
                times = {}
                # The first sweep sets up each worker's runtime environment
                # (the binary is copied to every node): not a per-task cost.
                # Many shards, so that every worker gets some.
                for n in ("warm-up", args.few, args.many):
                    n_shards = args.many if n == "warm-up" else n
                    res = run_sweep(args.spec, binary=binary, out=Path(tmp) / f"ray{n}", extra=seeds,
                                    address=cluster.address, shards=n_shards, progress=False)
                    times[n] = res.seconds
            finally:
                cluster.shutdown()
    except SweepError as e:
        print(f"hetquic-sweep-bench: {e}", file=sys.stderr)
        return 2
    per_task = (times[args.many] - times[args.few]) * WORKERS / (args.many - args.few)
    print(f"| {args.spec}, {args.seeds} seeds a point | seconds |")
    print("|---|---|")
    print(f"| one process, `hetquic exp run --workers 1` | {single:.2f} |")
    print(f"| Ray, {WORKERS} one-CPU workers, {args.few} shards | {times[args.few]:.2f} |")
    print(f"| Ray, {WORKERS} one-CPU workers, {args.many} shards | {times[args.many]:.2f} |")
    print()
    print(f"Speed-up of {WORKERS} Ray workers over one process ({args.few} shards): "
          f"**{single / times[args.few]:.2f}×**. Ray's cost per task (start of a worker "
          f"process, the binary's start-up, results through the object store): "
          f"**{per_task * 1000:.0f} ms**, from ({args.many} − {args.few}) more shards. "
          f"Not in these times: Ray's own start-up and a first sweep that sets up the workers.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
