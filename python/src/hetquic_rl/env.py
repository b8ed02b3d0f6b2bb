"""gymnasium environment over `hetquic ride env` (protocol hetquic-ride-env/1,
docs/ride.md): each step decides one viewed tile of a 360° video — skip it
or send it on a path of the simulated LTE + Wi-Fi multipath QUIC connection."""

from __future__ import annotations

import functools
import json
import subprocess
from typing import Any

import gymnasium as gym
import numpy as np

from .binary import hetquic_binary

# Action index → protocol action: 0 skips the tile (the thesis's −1),
# k ≥ 1 sends it on path k−1.
ACTIONS = (-1, 0, 1)

TRAIN_VIDEOS = (0, 1, 2, 3)  # §5.5.1: four videos to train on …
TEST_VIDEO = 4  # … and one to test
VALIDATION_VIDEO = 5  # chooses among trained policies, so that the test video never does


class ProtocolError(RuntimeError):
    """The env server answered a request with an error."""


class RideEnv(gym.Env):
    """One hetquic env server process per instance.

    Episodes are `frames` frames of a training video (default 50 = one GoP,
    about 2000 tile decisions) starting at a GoP drawn from the seed; the
    video is drawn from `videos`. Observations are the scaled state features
    of ride.State.Features (Box ±10); the reward is Eq. 5.13 with the Eq. 5.1
    arrival estimate plus the corrections (true − predicted) of the decisions
    that settled in the step, so an episode's return is its true reward;
    info["predicted_reward"] is the prediction alone, info["settled_reward"]
    the true rewards settled in the step."""

    metadata = {"render_modes": []}

    def __init__(self, frames: int = 50, videos: tuple[int, ...] = TRAIN_VIDEOS, binary: str | None = None):
        super().__init__()
        self.frames = frames
        self.videos = tuple(videos)
        self._proc = subprocess.Popen(
            [binary or hetquic_binary(), "ride", "env"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        spec = self._call({"op": "spec"})["spec"]
        self.paths = spec["paths"]
        self.actions = tuple(spec["actions"])
        high = float(spec["obs_high"])
        self.observation_space = gym.spaces.Box(-high, high, shape=(spec["obs_dim"],), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(len(self.actions))
        self._done = True

    def _call(self, req: dict[str, Any]) -> dict[str, Any]:
        if self._proc.stdin is None or self._proc.stdout is None or self._proc.poll() is not None:
            raise ProtocolError("env server is not running")
        self._proc.stdin.write(json.dumps(req) + "\n")
        line = self._proc.stdout.readline()
        if not line:
            raise ProtocolError(f"env server exited (code {self._proc.poll()})")
        resp = json.loads(line)
        if "error" in resp:
            raise ProtocolError(resp["error"])
        return resp

    def _obs(self, resp: dict[str, Any]) -> np.ndarray:
        return np.asarray(resp.get("obs") or np.zeros(self.observation_space.shape), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        video = int(options.get("video", self.np_random.choice(self.videos)))
        req = {"op": "reset", "seed": int(self.np_random.integers(0, 2**63 - 1)), "video": video,
               "frames": int(options.get("frames", self.frames))}
        if "start" in options:
            req["start"] = int(options["start"])
        resp = self._call(req)
        self._done = False
        return self._obs(resp), resp.get("info", {})

    def step(self, action):
        if self._done:
            raise ProtocolError("step after the episode ended: call reset")
        a = int(action)
        if not 0 <= a < len(self.actions):
            raise ValueError(f"action {action!r}: want 0…{len(self.actions) - 1} (0 skips, k sends on path k−1)")
        resp = self._call({"op": "step", "action": self.actions[a]})
        term, trunc = bool(resp["terminated"]), bool(resp["truncated"])
        self._done = term or trunc
        return self._obs(resp), float(resp["reward"]), term, trunc, resp.get("info", {})

    def close(self):
        if getattr(self, "_proc", None) is not None and self._proc.poll() is None:
            try:
                self._call({"op": "close"})
            except (ProtocolError, BrokenPipeError, OSError):
                pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        super().close()

    def __del__(self):  # a forgotten env must not leave its server behind
        try:
            self.close()
        except Exception:
            pass


gym.register(id="hetquic/Ride-v0", entry_point="hetquic_rl.env:RideEnv")


def make_vector_env(num_envs: int = 2, asynchronous: bool = True, **kwargs) -> gym.vector.VectorEnv:
    """num_envs env servers stepped in parallel (AsyncVectorEnv: a worker
    process each, so both cores of a 2-core machine are used)."""
    binary = kwargs.pop("binary", None) or hetquic_binary()
    fns = [functools.partial(RideEnv, binary=binary, **kwargs) for _ in range(num_envs)]
    if asynchronous:
        # spawn, not fork: the trainer has JAX's threads running, and a
        # forked child of a multithreaded process may deadlock.
        return gym.vector.AsyncVectorEnv(fns, context="spawn")
    return gym.vector.SyncVectorEnv(fns)
