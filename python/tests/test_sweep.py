"""The Ray driver against a local two-worker cluster (loopback only)."""

from __future__ import annotations

import os

import pytest

# Every Ray process on 127.0.0.1: Ray otherwise binds the address of the
# machine's outward interface, and tests talk only to loopback. (Ray reads
# this at import.)
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from conftest import SWEEP_SPEC, assert_same_files, tree  # noqa: E402
from hetquic_sweep import driver  # noqa: E402


def test_bad_spec_is_one_line(hetquic, tmp_path, capsys):
    code = driver.main(["no-such-experiment", "--engine", "ray", "--hetquic", hetquic, "--out", str(tmp_path),
                        "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file, nor a built-in experiment" in err[0]


def test_sweep_survives_a_lost_worker(hetquic, single_run, tmp_path):
    # Head with no CPU, so every shard runs on one of the two workers; all
    # on 127.0.0.1.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    killed = []

    def kill_one(done: int, total: int) -> None:
        if done == 2 and not killed:
            cluster.remove_node(workers[1])
            killed.append(total - done)

    try:
        res = driver.run_sweep(SWEEP_SPEC, binary=hetquic, out=tmp_path / "merged", engine="ray",
                               address=cluster.address, shards=20, progress=False, on_done=kill_one)
    finally:
        cluster.shutdown()
    assert killed and killed[0] > 0, "the worker was not lost mid-sweep"
    assert res.shards == 20
    assert_same_files(single_run, tree(tmp_path / "merged"))
