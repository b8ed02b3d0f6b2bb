"""python/README.md's smallest example runs as written (needs only the env extra)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import REPO


def test_smallest_example_runs(hetquic):
    readme = (REPO / "python" / "README.md").read_text()
    m = re.search(r"## Smallest example.*?```python\n(.*?)```", readme, re.S)
    assert m, "python/README.md has no smallest example"
    env = dict(os.environ, HETQUIC_BIN=hetquic)
    out = subprocess.run([sys.executable, "-c", m.group(1)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.match(r"random policy: return -?[0-9.]+ over 2 frames", out.stdout), out.stdout
