"""Locate or build the hetquic binary that serves the environment."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def repo_root() -> Path | None:
    """The hetquic checkout this package lives in (None when installed elsewhere)."""
    for p in Path(__file__).resolve().parents:
        if (p / "go.mod").is_file() and (p / "cmd" / "hetquic").is_dir():
            return p
    return None


def hetquic_binary() -> str:
    """$HETQUIC_BIN, else a binary built from the checkout (go build is
    incremental, so this is cheap after the first call), else hetquic on PATH."""
    env = os.environ.get("HETQUIC_BIN")
    if env:
        return env
    root = repo_root()
    if root is not None and shutil.which("go"):
        out = root / "python" / ".cache" / "hetquic"
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "build", "-o", str(out), "./cmd/hetquic"], cwd=root, check=True)
        return str(out)
    found = shutil.which("hetquic")
    if found:
        return found
    raise FileNotFoundError("no hetquic binary: set HETQUIC_BIN, or run from a checkout with Go installed")
