"""Shared by the sweep drivers' tests (Ray and Dask)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Built in: 5 points x 4 strategies x 5 seeds = 100 runs.
SWEEP_SPEC = "sweep-telecom-delay"


@pytest.fixture(scope="session")
def hetquic(tmp_path_factory) -> str:
    """The hetquic binary: $HETQUIC_BIN, or one built from this tree."""
    given = os.environ.get("HETQUIC_BIN")
    if given:
        return given
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain to build hetquic (set HETQUIC_BIN)")
    out = tmp_path_factory.mktemp("bin") / "hetquic"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/hetquic"], cwd=REPO, check=True)
    return str(out)


@pytest.fixture(scope="session")
def single_run(hetquic, tmp_path_factory) -> dict[str, bytes]:
    """SWEEP_SPEC's files from one process: what every merge must equal."""
    out = tmp_path_factory.mktemp("single")
    subprocess.run([hetquic, "exp", "run", SWEEP_SPEC, "--quiet", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return tree(out)


def tree(d: Path) -> dict[str, bytes]:
    """Every file under D but the shards, by relative path, less the
    provenance (the version, cores and load of the process that wrote it,
    which two runs of one experiment need not share)."""
    return {
        str(p.relative_to(d)): without_provenance(p.name, p.read_bytes())
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.relative_to(d).parts[0] != "shards"
    }


# The line report.md ends with (internal/results.ProvenancePrefix).
PROVENANCE_PREFIX = b"Produced by "


def without_provenance(name: str, data: bytes) -> bytes:
    """DATA less its provenance: summary.json's "provenance" key, report.md's
    "Produced by ..." line; other files as they are."""
    if name == "summary.json":
        summary = json.loads(data)
        assert "provenance" in summary, "summary.json has no provenance"
        del summary["provenance"]
        return json.dumps(summary, sort_keys=True).encode()
    if name == "report.md":
        return b"\n".join(l for l in data.split(b"\n") if not l.startswith(PROVENANCE_PREFIX))
    return data


def assert_same_files(want: dict[str, bytes], got: dict[str, bytes]) -> None:
    assert want.keys() == got.keys()
    for name in want:
        assert want[name] == got[name], f"{name} differs from the single-process run"
