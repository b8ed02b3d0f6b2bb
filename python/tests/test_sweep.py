"""The Ray driver against a local two-worker cluster (loopback only)."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Every Ray process on 127.0.0.1: Ray otherwise binds the address of the
# machine's outward interface, and tests talk only to loopback. (Ray reads
# this at import.)
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from hetquic_sweep import driver  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SPEC = "sweep-telecom-delay"  # built in: 5 points x 4 strategies x 5 seeds = 100 runs


@pytest.fixture(scope="module")
def hetquic(tmp_path_factory) -> str:
    given = os.environ.get("HETQUIC_BIN")
    if given:
        return given
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain to build hetquic (set HETQUIC_BIN)")
    out = tmp_path_factory.mktemp("bin") / "hetquic"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/hetquic"], cwd=REPO, check=True)
    return str(out)


def tree(d: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.relative_to(d).parts[0] != "shards"
    }


def test_bad_spec_is_one_line(hetquic, tmp_path, capsys):
    code = driver.main(["no-such-experiment", "--hetquic", hetquic, "--out", str(tmp_path), "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file, nor a built-in experiment" in err[0]


def test_sweep_survives_a_lost_worker(hetquic, tmp_path):
    single = tmp_path / "single"
    subprocess.run([hetquic, "exp", "run", SPEC, "--quiet", "--out", str(single)], check=True,
                   stdout=subprocess.DEVNULL)

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
        res = driver.run_sweep(SPEC, binary=hetquic, out=tmp_path / "merged", address=cluster.address,
                               shards=20, progress=False, on_done=kill_one)
    finally:
        cluster.shutdown()
    assert killed and killed[0] > 0, "the worker was not lost mid-sweep"
    assert res.shards == 20
    want, got = tree(single), tree(tmp_path / "merged")
    assert want.keys() == got.keys()
    for name in want:
        assert want[name] == got[name], f"{name} differs from the single-process run"
