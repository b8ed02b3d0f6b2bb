"""RIDE's environments as Ray actors step exactly as gymnasium's own vector env."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # Ray on 127.0.0.1 only
ray = pytest.importorskip("ray")
gym = pytest.importorskip("gymnasium")

from hetquic_rl.binary import hetquic_binary  # noqa: E402
from hetquic_rl.env import make_vector_env  # noqa: E402
from hetquic_rl.ray_env import RayVectorEnv  # noqa: E402


def test_ray_vector_env_matches_sync():
    binary = hetquic_binary()
    kwargs = dict(frames=1, binary=binary)  # one frame: ~40 decisions, so episodes end and reset
    sync = make_vector_env(2, asynchronous=False, **kwargs)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        remote = RayVectorEnv(2, **kwargs)
        a, _ = sync.reset(seed=7)
        b, _ = remote.reset(seed=7)
        assert np.array_equal(a, b)
        rng = np.random.default_rng(1)
        ended = 0
        for _ in range(120):
            act = rng.integers(0, sync.single_action_space.n, size=2)
            oa, ra, ta, ua, _ = sync.step(act)
            ob, rb, tb, ub, _ = remote.step(act)
            assert np.array_equal(oa, ob) and np.array_equal(ra, rb)
            assert np.array_equal(ta, tb) and np.array_equal(ua, ub)
            ended += int((ta | ua).sum())
        assert ended > 0, "no episode ended: autoreset not exercised"
        remote.close()
    finally:
        sync.close()
        ray.shutdown()
