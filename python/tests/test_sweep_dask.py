"""The Dask engine of the sweep driver against a local two-worker cluster
(loopback only)."""

from __future__ import annotations

import logging
import os
import signal

import pytest

distributed = pytest.importorskip("distributed")

from conftest import SWEEP_SPEC, assert_same_files, tree  # noqa: E402
from hetquic_sweep import driver  # noqa: E402


def test_dask_sweep_survives_a_killed_worker(hetquic, single_run, tmp_path):
    # Two one-thread worker processes, each under a nanny, on 127.0.0.1.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=logging.ERROR)
    killed, lost = [], []

    def kill_one(done: int, total: int) -> None:
        # SIGKILL the process of a worker that holds shards, as a crash
        # would: the scheduler must send them to a worker again, and the
        # worker its nanny restarts must get the binary again.
        if done != 2 or killed:
            return
        with distributed.Client(cluster.scheduler_address, timeout=10) as c:
            busy = [(w, keys) for w, keys in c.processing().items() if keys]
            assert busy, "no worker holds a shard mid-sweep"
            worker, keys = busy[0]
            pid = c.run(os.getpid, workers=[worker])[worker]
        os.kill(pid, signal.SIGKILL)
        killed.append(total - done)
        lost.extend(keys)

    try:
        res = driver.run_sweep(SWEEP_SPEC, binary=hetquic, out=tmp_path / "merged", engine="dask",
                               address=cluster.scheduler_address, shards=20, progress=False,
                               on_done=kill_one)
        # The scheduler's story of each shard the killed worker held: it
        # was sent to a worker (state "processing") again.
        resent = {k: sum(1 for t in cluster.scheduler.story(k) if t[2] == "processing") for k in lost}
    finally:
        cluster.close()
    assert killed and killed[0] > 0, "the worker was not killed mid-sweep"
    assert lost and all(n >= 2 for n in resent.values()), f"shards not run again: {resent}"
    assert res.shards == 20
    assert_same_files(single_run, tree(tmp_path / "merged"))


def test_a_ray_address_is_one_line(hetquic, tmp_path, capsys):
    code = driver.main([SWEEP_SPEC, "--address", "auto", "--hetquic", hetquic, "--out", str(tmp_path),
                        "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--engine ray" in err[0], err


def test_a_failing_shard_is_retried_then_one_line(hetquic, tmp_path):
    # A hetquic whose `exp run` fails (validate and merge are the real
    # binary's), run on the default local cluster: each shard is tried
    # 1 + retries times, then the sweep stops with the shard's last line.
    tries = tmp_path / "tries"
    shim = tmp_path / "hetquic"
    shim.write_text(
        "#!/bin/sh\n"
        f'if [ "$1 $2" = "exp run" ]; then echo "$5" >> {tries}; echo "hetquic: disk on fire" >&2; exit 1; fi\n'
        f'exec {hetquic} "$@"\n'
    )
    shim.chmod(0o755)
    with pytest.raises(driver.SweepError) as e:
        driver.run_sweep(SWEEP_SPEC, binary=str(shim), out=tmp_path / "out", engine="dask", shards=2,
                         retries=2, progress=False)
    msg = str(e.value)
    assert "\n" not in msg and msg.endswith("hetquic: disk on fire"), msg
    shard = msg.split()[1]  # "shard I/N failed: …"
    assert tries.read_text().split().count(shard) == 3, tries.read_text()
