"""RIDE's environments as Ray actors: a gymnasium VectorEnv whose sub-envs
run anywhere in a Ray cluster.

skrl (like every gymnasium-based PPO) takes any ``gymnasium.vector.VectorEnv``,
so spreading the environments over machines needs no change to the trainer:
``make_ray_vector_env(16, address="ray://HEAD:10001")`` in place of
``make_vector_env``. Each actor holds one :class:`RideEnv` (one env server);
``step`` sends every actor its action at once and waits for all, so the
actors step in parallel. Episodes that end are reset on the next step, as
gymnasium's own vector envs do (autoreset mode NEXT_STEP).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .binary import hetquic_binary


class _EnvActor:
    """One RideEnv inside a Ray worker."""

    def __init__(self, binary: str, kwargs: dict[str, Any]):
        from .env import RideEnv

        try:  # the binary shipped in the runtime environment, if any
            import hetquic_sweep_bin

            binary = hetquic_sweep_bin.PATH
        except ImportError:
            pass
        import os

        if not os.access(binary, os.X_OK):
            os.chmod(binary, 0o755)
        self.env = RideEnv(binary=binary, **kwargs)

    def spaces(self):
        return self.env.observation_space, self.env.action_space

    def reset(self, seed, options):
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        return self.env.step(action)

    def close(self):
        self.env.close()


class RayVectorEnv(gym.vector.VectorEnv):
    """num_envs RideEnvs as Ray actors (one CPU each)."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, binary: str | None = None, **env_kwargs):
        import ray

        if not ray.is_initialized():
            raise RuntimeError("RayVectorEnv: call ray.init (or use make_ray_vector_env) first")
        actor = ray.remote(num_cpus=1)(_EnvActor)
        binary = binary or hetquic_binary()
        self._actors = [actor.remote(binary, env_kwargs) for _ in range(num_envs)]
        obs_space, act_space = ray.get(self._actors[0].spaces.remote())
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = obs_space, act_space
        self.observation_space = gym.vector.utils.batch_space(obs_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(act_space, num_envs)
        self._autoreset = np.zeros(num_envs, dtype=bool)

    def reset(self, *, seed=None, options=None):
        import ray

        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        outs = ray.get([a.reset.remote(s, options) for a, s in zip(self._actors, seeds)])
        self._autoreset[:] = False
        infos: dict[str, Any] = {}
        for i, (_, info) in enumerate(outs):
            infos = self._add_info(infos, info, i)
        return np.stack([o for o, _ in outs]), infos

    def step(self, actions):
        import ray

        refs = [a.reset.remote(None, None) if self._autoreset[i] else a.step.remote(actions[i])
                for i, a in enumerate(self._actors)]
        outs = ray.get(refs)
        obs, rew = [], np.zeros(self.num_envs)
        term, trunc = np.zeros(self.num_envs, bool), np.zeros(self.num_envs, bool)
        infos: dict[str, Any] = {}
        for i, out in enumerate(outs):
            if self._autoreset[i]:  # a reset answers (obs, info): no reward, not done
                o, info = out
            else:
                o, rew[i], term[i], trunc[i], info = out
            obs.append(o)
            infos = self._add_info(infos, info, i)
        self._autoreset = term | trunc
        return np.stack(obs), rew, term, trunc, infos

    def close_extras(self, **kwargs):
        import ray

        ray.get([a.close.remote() for a in self._actors])
        for a in self._actors:
            ray.kill(a)


def make_ray_vector_env(num_envs: int, address: str | None = None, binary: str | None = None,
                        **env_kwargs) -> RayVectorEnv:
    """Connects to the Ray cluster at ADDRESS (None: a new local one) and
    starts num_envs environment actors. The hetquic binary travels to the
    workers in the job's runtime environment, so no shared file system is
    needed."""
    import ray
    import tempfile
    from pathlib import Path

    from hetquic_sweep.driver import stage_binary

    binary = binary or hetquic_binary()
    if not ray.is_initialized():
        stage = tempfile.mkdtemp(prefix="hetquic-ride-ray-")
        import hetquic_rl

        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                 runtime_env={"py_modules": [str(stage_binary(binary, Path(stage))), hetquic_rl]})
    return RayVectorEnv(num_envs, binary=binary, **env_kwargs)
