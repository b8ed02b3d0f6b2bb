"""The ``hetquic-sweep`` command: shards on Ray or Dask, then ``hetquic exp merge``."""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generator, Iterator, Optional

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


def _hetquic(binary: str, *args: str, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], capture_output=True, text=True, cwd=cwd)


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


def _shard_archive(binary: str, spec: str, i: int, n: int, extra: list[str],
                   cwd: Optional[str] = None) -> bytes:
    """Runs on a worker, for either engine: shard i/n of SPEC, returned as a
    gzipped tar of its files."""
    # The engines may deliver files without their modes.
    if not os.access(binary, os.X_OK):
        os.chmod(binary, 0o755)
    with tempfile.TemporaryDirectory(prefix="hetquic-shard-") as out:
        p = _hetquic(
            binary, "exp", "run", spec, "--shard", f"{i}/{n}", "--out", out,
            "--quiet", "--workers", "1", *extra, cwd=cwd,
        )
        if p.returncode != 0:
            raise RuntimeError(f"shard {i}/{n}: {_last_line(p.stderr)}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(out, arcname=".")
        return buf.getvalue()


def _run_shard(spec: str, i: int, n: int, extra: list[str]) -> bytes:
    """A Ray task: the binary comes in the runtime environment; the working
    directory, if any, is the task's current one."""
    import hetquic_sweep_bin  # shipped by the runtime environment

    return _shard_archive(hetquic_sweep_bin.PATH, spec, i, n, extra)


def _safe_extract(data: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")


def run_sweep(
    spec: str,
    *,
    binary: str,
    out: Path,
    engine: str = "dask",
    address: Optional[str] = None,
    shards: int = 0,
    retries: int = DEFAULT_RETRIES,
    extra: Optional[list[str]] = None,
    working_dir: Optional[Path] = None,
    progress: bool = True,
    on_done: Optional[Callable[[int, int], None]] = None,
) -> Result:
    """Runs SPEC's shards on the ENGINE ("ray" or "dask") cluster at ADDRESS
    (None or "local": a new local one) and merges them into OUT.

    The binary (and WORKING_DIR, for a spec file and the files it names)
    travel to the workers by the engine's own means, so this function
    connects and disconnects itself. ``on_done(done, total)`` is called after
    each shard arrives (tests use it to kill a worker mid-sweep).
    """
    if engine not in ENGINES:
        raise SweepError(f"--engine {engine}: not one of {', '.join(ENGINES)}")
    connect, module, extra_name = ENGINES[engine]
    if importlib.util.find_spec(module) is None:
        raise SweepError(f"--engine {engine} needs {module}: pip install 'hetquic[{extra_name}]'")
    if address == "local":
        address = None
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
        with connect(address, binary, working_dir, Path(stage)) as cluster:
            if shards <= 0:
                shards = max(1, SHARDS_PER_CPU * cluster.cpus())
            results = cluster.run(spec, shards, retries, extra)
            seconds = _collect(results, spec, shards, parts, progress, on_done)

    merged = _hetquic(binary, "exp", "merge", "--out", str(out), *sorted(str(p) for p in parts.iterdir()))
    if merged.returncode != 0:
        raise SweepError(f"merge: {_last_line(merged.stderr)}")
    return Result(out=out, shards=shards, seconds=seconds)


def _collect(results: Generator[tuple[int, bytes], None, None], spec: str, shards: int, parts: Path,
             progress: bool, on_done) -> float:
    """Unpacks each shard's files as they arrive; returns the wall seconds
    from the first submission to the last shard."""
    start = time.monotonic()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=shards, unit="shard", desc=f"hetquic-sweep {spec}")
    done = 0
    try:
        for i, data in results:
            _safe_extract(data, parts / f"{i:05d}-of-{shards:05d}")
            done += 1
            if bar is not None:
                bar.update(1)
            if on_done is not None:
                on_done(done, shards)
    finally:
        results.close()  # a sweep that stops early cancels the shards still out
        if bar is not None:
            bar.close()
    return time.monotonic() - start


class _Ray:
    """A connected Ray driver (see run_sweep)."""

    def cpus(self) -> int:
        import ray

        return int(ray.cluster_resources().get("CPU", 1))

    def run(self, spec, shards, retries, extra) -> Iterator[tuple[int, bytes]]:
        """Submits every shard and yields each one's files as it finishes; a
        shard that failed after its retries cancels the rest."""
        import ray

        task = ray.remote(_run_shard).options(num_cpus=1, max_retries=retries, retry_exceptions=True)
        pending = {task.remote(spec, i, shards, extra): i for i in range(shards)}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        data = ray.get(ref)
                    except Exception as e:  # the task failed after its retries
                        raise SweepError(f"shard {i}/{shards} failed: {_last_line(str(e))}") from e
                    yield i, data
        finally:
            for r in pending:
                ray.cancel(r, force=True)


@contextmanager
def _connect_ray(address, binary, working_dir, stage: Path):
    """The binary and this package travel in the job's runtime environment
    (``py_modules``; Ray accepts local directories only there, in
    ``ray.init``), the working directory as its ``working_dir``. Retries of
    lost tasks are per task (run)."""
    import ray

    import hetquic_sweep

    runtime_env: dict = {
        "py_modules": [str(stage_binary(binary, stage)), hetquic_sweep],
    }
    if working_dir is not None:
        runtime_env["working_dir"] = str(working_dir)
        runtime_env["excludes"] = [".git", "results", "python/build", "*.egg-info"]
    ray.init(address=address, runtime_env=runtime_env, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    try:
        yield _Ray()
    finally:
        ray.shutdown()


# What of a working directory is not shipped to Dask workers (as Ray's
# excludes above): history, results and build products.
_BUNDLE_SKIP = {".git", "results", "build", ".cache", "__pycache__"}


def _bundle(binary: str, working_dir: Optional[Path], stage: Path) -> Path:
    """Packs the binary (and WORKING_DIR, under work/) into one gzipped tar
    named for its content, for Dask's UploadFile plugin."""
    tmp = stage / "bundle.tar.gz"
    with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:  # fast: the binary is most of it
        tar.add(binary, arcname="hetquic")
        if working_dir is not None:
            tar.add(working_dir, arcname="work", filter=lambda ti: None if (
                _BUNDLE_SKIP.intersection(Path(ti.name).parts) or ti.name.endswith(".egg-info")) else ti)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()[:16]
    return tmp.rename(stage / f"hetquic-bundle-{digest}.tar.gz")


def _unpack_once(archive: Path) -> Path:
    """Unpacks a bundle beside itself, once per worker: concurrent tasks
    each unpack into a temporary directory and the first rename wins."""
    dest = archive.with_name(archive.name.removesuffix(".tar.gz"))
    if not dest.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix=dest.name + "-", dir=archive.parent))
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(tmp, filter="tar")  # keeps the binary's mode
        try:
            tmp.rename(dest)
        except OSError:  # another task was first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _dask_shard(bundle: str, spec: str, i: int, n: int, extra: list[str]) -> bytes:
    """A Dask task: the bundle is in the worker's local directory (UploadFile)."""
    from distributed import get_worker

    root = _unpack_once(Path(get_worker().local_directory) / bundle)
    work = root / "work"
    return _shard_archive(str(root / "hetquic"), spec, i, n, extra,
                          cwd=str(work) if work.is_dir() else None)


class _Dask:
    """A connected Dask client (see run_sweep)."""

    def __init__(self, client, bundle: str):
        self.client = client
        self.bundle = bundle

    def cpus(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def run(self, spec, shards, retries, extra) -> Iterator[tuple[int, bytes]]:
        """As _Ray.run; ``retries`` reruns a task that raised, and the
        scheduler's allowed-failures one whose worker died."""
        from distributed import as_completed

        futures = {
            self.client.submit(_dask_shard, self.bundle, spec, i, shards, extra,
                               retries=retries, pure=False): i
            for i in range(shards)
        }
        try:
            for fut in as_completed(futures):
                i = futures.pop(fut)
                try:
                    data = fut.result()
                except Exception as e:  # failed after its retries, or its worker died too often
                    raise SweepError(f"shard {i}/{shards} failed: {_last_line(str(e))}") from e
                yield i, data
        finally:
            if futures:
                self.client.cancel(list(futures))


@contextmanager
def _connect_dask(address, binary, working_dir, stage: Path):
    """The binary and the working directory travel as one archive in Dask's
    UploadFile worker plugin, which the scheduler also gives to workers that
    join later; the task function and its helpers in this module travel by
    value in the task (cloudpickle), so workers need Dask but not this
    package."""
    import logging

    import cloudpickle
    from distributed import Client, LocalCluster
    from distributed.diagnostics.plugin import UploadFile

    if address is not None and "://" not in address:
        raise SweepError(f"--address {address}: a Dask scheduler is tcp://HOST:PORT "
                         "(Ray's 'auto' and ray:// addresses need --engine ray)")
    bundle = _bundle(binary, working_dir, stage)
    cluster = None
    try:
        if address is None:
            # One task per CPU at a time, as Ray's num_cpus=1. The work is
            # the hetquic process each task waits for, so one in-process
            # worker with a thread per CPU will do, and no worker process
            # has to start.
            cluster = LocalCluster(n_workers=1, threads_per_worker=os.cpu_count() or 1,
                                   processes=False, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
        else:
            client = Client(address)
    except (OSError, ValueError) as e:
        if cluster is not None:
            cluster.close()
        raise SweepError(f"--address {address}: {_last_line(str(e))}") from e
    module = sys.modules[__name__]
    plugin = f"hetquic-sweep-{bundle.name}"
    try:
        cloudpickle.register_pickle_by_value(module)
        client.register_plugin(UploadFile(str(bundle), load=False), name=plugin)
        try:
            yield _Dask(client, bundle.name)
        finally:
            client.unregister_worker_plugin(plugin)
    finally:
        if module.__name__ in cloudpickle.list_registry_pickle_by_value():
            cloudpickle.unregister_pickle_by_value(module)
        client.close()
        if cluster is not None:
            cluster.close()


# The engines run_sweep can use, by name: a context manager that connects to
# (or starts) a cluster, ships the binary and yields an object with cpus()
# and run(); the module it needs; the package extra that installs it.
ENGINES = {"ray": (_connect_ray, "ray", "sweep"), "dask": (_connect_dask, "distributed", "dask")}


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
        description="Run a hetquic experiment (a built-in name or a file) as shards on Ray or Dask and merge them.",
    )
    ap.add_argument("--engine", default="dask", choices=sorted(ENGINES),
                    help="distributed engine: dask (the default; the [dask] extra) or ray (the [sweep] extra)")
    ap.add_argument("spec", help="experiment: a built-in name or a file (relative to --working-dir)")
    ap.add_argument("--address", default=None,
                    help="'local' (the default): start a cluster on this machine; Ray: 'auto' (a running "
                         "local cluster), 'ray://HOST:10001' (a remote one); Dask: 'tcp://HOST:8786' (a scheduler)")
    ap.add_argument("--out", default=None, help="results directory (default results/NAME/<UTC start time>)")
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
        # a run directory of its own, as `hetquic exp run` makes: results/NAME/<UTC start>
        out = Path(args.out or os.path.join("results", name, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))

        res = run_sweep(args.spec, binary=binary, out=out, engine=args.engine, address=args.address, shards=args.shards,
                        retries=args.retries, working_dir=working_dir, progress=not args.no_progress)
    except SweepError as e:
        print(f"hetquic-sweep: {e}", file=sys.stderr)
        return 2
    print(f"hetquic-sweep: {res.shards} shards in {res.seconds:.1f} s; merged into {res.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
