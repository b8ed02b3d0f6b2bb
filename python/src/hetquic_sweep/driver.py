"""The ``hetquic-sweep`` command: shards on Ray, then ``hetquic exp merge``."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

# Shards per worker CPU: more shards than CPUs keep every CPU busy when some
# shards are slower, and make a lost worker cost only a small part of the work.
SHARDS_PER_CPU = 4

# Retries of a shard whose task failed (a worker that died, a process that
# crashed). A shard is deterministic, so a retry computes the same files.
DEFAULT_RETRIES = 3

# Name of the package that carries the binary to the workers.
_BIN_PKG = "hetquic_sweep_bin"


class SweepError(Exception):
    """Bad input or a failed shard; the message is one line for the user."""


@dataclass
class Result:
    out: Path  # the merged results directory
    shards: int
    seconds: float  # wall time of the shards, without start-up and merge


def _hetquic(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], capture_output=True, text=True)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def stage_binary(binary: str, into: Path) -> Path:
    """Makes a package holding the binary, for Ray's ``py_modules``."""
    pkg = into / _BIN_PKG
    pkg.mkdir()
    shutil.copy2(binary, pkg / "hetquic")
    (pkg / "__init__.py").write_text(
        "import os\nPATH = os.path.join(os.path.dirname(__file__), 'hetquic')\n"
    )
    return pkg


def _run_shard(spec: str, i: int, n: int, extra: list[str]) -> bytes:
    """Runs on a worker: one shard, returned as a gzipped tar of its files."""
    import hetquic_sweep_bin  # shipped by the runtime environment

    # The runtime environment may unpack files without their modes.
    binary = hetquic_sweep_bin.PATH
    if not os.access(binary, os.X_OK):
        os.chmod(binary, 0o755)
    with tempfile.TemporaryDirectory(prefix="hetquic-shard-") as out:
        p = _hetquic(
            binary, "exp", "run", spec, "--shard", f"{i}/{n}", "--out", out,
            "--quiet", "--workers", "1", *extra,
        )
        if p.returncode != 0:
            raise RuntimeError(f"shard {i}/{n}: {_last_line(p.stderr)}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(out, arcname=".")
        return buf.getvalue()


def _safe_extract(data: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")


def run_sweep(
    spec: str,
    *,
    binary: str,
    out: Path,
    address: Optional[str] = None,
    shards: int = 0,
    retries: int = DEFAULT_RETRIES,
    extra: Optional[list[str]] = None,
    working_dir: Optional[Path] = None,
    progress: bool = True,
    on_done: Optional[Callable[[int, int], None]] = None,
) -> Result:
    """Runs SPEC's shards on the Ray cluster at ADDRESS (None: a new local
    one) and merges them into OUT.

    The binary and this package travel to the workers in the job's runtime
    environment (Ray accepts local directories only there, in ``ray.init``),
    so this function connects and disconnects itself.
    ``on_done(done, total)`` is called after each shard arrives (tests use it
    to kill a worker mid-sweep).
    """
    import ray

    import hetquic_sweep

    extra = list(extra or [])
    check = _hetquic(binary, "exp", "validate", spec)
    if check.returncode != 0:
        raise SweepError(_last_line(check.stderr))

    out = Path(out)
    parts = out / "shards"
    if parts.exists():
        shutil.rmtree(parts)
    parts.mkdir(parents=True)

    with tempfile.TemporaryDirectory(prefix="hetquic-sweep-") as stage:
        runtime_env: dict = {
            "py_modules": [str(stage_binary(binary, Path(stage))), hetquic_sweep],
        }
        if working_dir is not None:
            runtime_env["working_dir"] = str(working_dir)
            runtime_env["excludes"] = [".git", "results", "python/build", "*.egg-info"]
        ray.init(address=address, runtime_env=runtime_env, include_dashboard=False,
                 log_to_driver=False, logging_level="ERROR")
        try:
            if shards <= 0:
                cpus = int(ray.cluster_resources().get("CPU", 1))
                shards = max(1, SHARDS_PER_CPU * cpus)
            seconds = _run_shards(spec, shards, retries, extra, parts, progress, on_done)
        finally:
            ray.shutdown()

    merged = _hetquic(binary, "exp", "merge", "--out", str(out), *sorted(str(p) for p in parts.iterdir()))
    if merged.returncode != 0:
        raise SweepError(f"merge: {_last_line(merged.stderr)}")
    return Result(out=out, shards=shards, seconds=seconds)


def _run_shards(spec, shards, retries, extra, parts: Path, progress: bool, on_done) -> float:
    """Submits every shard, collects each as it arrives; returns wall seconds."""
    import ray

    task = ray.remote(_run_shard).options(num_cpus=1, max_retries=retries, retry_exceptions=True)
    start = time.monotonic()
    pending = {task.remote(spec, i, shards, extra): i for i in range(shards)}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=shards, unit="shard", desc=f"hetquic-sweep {spec}")
    done = 0
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    data = ray.get(ref)
                except Exception as e:  # the task failed after its retries
                    for r in pending:
                        ray.cancel(r, force=True)
                    raise SweepError(f"shard {i}/{shards} failed: {_last_line(str(e))}") from e
                _safe_extract(data, parts / f"{i:05d}-of-{shards:05d}")
                done += 1
                if bar is not None:
                    bar.update(1)
                if on_done is not None:
                    on_done(done, shards)
    finally:
        if bar is not None:
            bar.close()
    return time.monotonic() - start


def _find_binary(given: Optional[str]) -> str:
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise SweepError(f"--hetquic {given}: not an executable file")
        return given
    found = shutil.which("hetquic")
    if not found:
        raise SweepError("no hetquic binary: pass --hetquic PATH (go build -o hetquic ./cmd/hetquic)")
    return found


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="hetquic-sweep",
        description="Run a hetquic experiment (a built-in name or a file) as shards on Ray and merge them.",
    )
    ap.add_argument("spec", help="experiment: a built-in name or a file (relative to --working-dir)")
    ap.add_argument("--address", default=None,
                    help="Ray cluster: 'auto' (a running local cluster), 'ray://HOST:10001' (a remote one); "
                         "default: start a local one")
    ap.add_argument("--out", default=None, help="results directory (default results/NAME)")
    ap.add_argument("--shards", type=int, default=0, help=f"number of shards (default {SHARDS_PER_CPU} per CPU)")
    ap.add_argument("--retries", type=int, default=DEFAULT_RETRIES, help="retries per failed shard")
    ap.add_argument("--hetquic", default=None, help="the hetquic binary to ship (default: hetquic on PATH)")
    ap.add_argument("--working-dir", default=None,
                    help="directory shipped to the workers for a spec file and what it names (default: the current one)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)

    try:
        binary = _find_binary(args.hetquic)
        if args.shards < 0:
            raise SweepError(f"--shards {args.shards}: must be ≥ 0")
        is_file = os.path.exists(os.path.join(args.working_dir or ".", args.spec))
        working_dir = Path(args.working_dir or ".").resolve() if is_file else None
        name = Path(args.spec).stem
        out = Path(args.out or os.path.join("results", name))

        res = run_sweep(args.spec, binary=binary, out=out, address=args.address, shards=args.shards,
                        retries=args.retries, working_dir=working_dir, progress=not args.no_progress)
    except SweepError as e:
        print(f"hetquic-sweep: {e}", file=sys.stderr)
        return 2
    print(f"hetquic-sweep: {res.shards} shards in {res.seconds:.1f} s; merged into {res.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
