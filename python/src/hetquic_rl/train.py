"""Train RIDE with PPO (skrl, JAX backend) on hetquic's simulator.

    python -m hetquic_rl.train --budget short --out results/ride-train

writes curve.csv (one row per finished episode), curve.svg, policy.json
(the actor, for `hetquic ride eval`), summary.json and, every
--checkpoint-every steps, checkpoints/policy-<steps>.json. Budgets (§5.5.1
uses 30 000 episodes of ~40 decisions, 1.2 M steps):

  short   300 000 steps   (the least at which seed 1 beats RR and minRTT on
                           the validation video, docs/ride.md; ~5 min on 2 cores)
  thesis  1 200 000 steps (30 000 episodes × 40 decisions; ~20 min on 2 cores)

Choose among runs and checkpoints on the validation video with
`python -m hetquic_rl.select`, never on the test video.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

BUDGETS = {"short": 300_000, "thesis": 1_200_000}

# §5.5.1: actor and critic of two hidden layers of 64 ReLU units, lr 3e-4, γ 0.99.
HIDDEN = 64
LEARNING_RATE = 3e-4
GAMMA = 0.99
# PPO's other settings (the thesis does not give them): skrl's defaults
# except these, sized for ~2000-step episodes on two environments.
ROLLOUTS = 64  # steps per environment between updates (skrl unrolls GAE over them in one XLA compile: 512 took minutes)
LEARNING_EPOCHS = 4
MINI_BATCHES = 2
ENTROPY = 0.01


def make_models(observation_space, action_space, device=None):
    """The actor and critic of §5.5.1: 2×64 ReLU each (skrl JAX models)."""
    import flax.linen as nn
    from skrl.models.jax import CategoricalMixin, DeterministicMixin, Model

    class Actor(CategoricalMixin, Model):
        def __init__(self, observation_space, action_space, device=None, **kwargs):
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device, **kwargs)
            CategoricalMixin.__init__(self, unnormalized_log_prob=True)

        @nn.compact
        def __call__(self, inputs, role=""):
            x = inputs["observations"]
            x = nn.relu(nn.Dense(HIDDEN)(x))
            x = nn.relu(nn.Dense(HIDDEN)(x))
            return nn.Dense(self.action_space.n)(x), {}

    class Critic(DeterministicMixin, Model):
        def __init__(self, observation_space, action_space, device=None, **kwargs):
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device, **kwargs)
            DeterministicMixin.__init__(self)

        @nn.compact
        def __call__(self, inputs, role=""):
            x = inputs["observations"]
            x = nn.relu(nn.Dense(HIDDEN)(x))
            x = nn.relu(nn.Dense(HIDDEN)(x))
            return nn.Dense(1)(x), {}

    models = {"policy": Actor(observation_space, action_space, device),
              "value": Critic(observation_space, action_space, device)}
    for role, m in models.items():
        m.init_state_dict(role=role)
    return models


def build_agent(env, seed: int):
    from skrl import config
    from skrl.agents.jax.ppo import PPO, PPO_CFG
    from skrl.memories.jax import RandomMemory
    from skrl.utils import set_seed

    set_seed(seed)
    config.jax.backend = "jax"
    models = make_models(env.observation_space, env.action_space, env.device)
    cfg = PPO_CFG(rollouts=ROLLOUTS, learning_epochs=LEARNING_EPOCHS, mini_batches=MINI_BATCHES,
                  discount_factor=GAMMA, learning_rate=LEARNING_RATE, entropy_loss_scale=ENTROPY,
                  value_loss_scale=1.0, time_limit_bootstrap=True)
    cfg.experiment.write_interval = 0
    cfg.experiment.checkpoint_interval = 0
    memory = RandomMemory(memory_size=ROLLOUTS, num_envs=env.num_envs, device=env.device)
    agent = PPO(models=models, memory=memory, observation_space=env.observation_space,
                action_space=env.action_space, device=env.device, cfg=cfg)
    agent.init()
    agent.enable_training_mode(True)
    return agent, models


def export(models, paths: int, features: int, steps: int, seed: int, run_steps: int):
    """The actor as a hetquic-ride-mlp/1 document that records the steps it
    trained for (a checkpoint's, not its run's budget) and its seed."""
    from .mlp import from_flax
    doc = from_flax(models["policy"].state_dict.params, paths, features)
    doc["training"] = {"steps": int(steps), "seed": int(seed), "run_steps": int(run_steps)}
    return doc


def compare(policy: str, video: int | None = None, frames: int = 100, seed: int = 1,
            baselines: bool = True) -> dict[str, dict]:
    """The exported policy and (unless baselines is false) RR, minRTT and
    Peekaboo on one episode of a fixed video, through `hetquic ride eval
    --json` (the Go forward pass and the true, settled rewards): {policy
    name: summary}."""
    from .binary import hetquic_binary
    from .env import VALIDATION_VIDEO

    video = VALIDATION_VIDEO if video is None else video
    out = subprocess.run([hetquic_binary(), "ride", "eval", "--json", "--policy", policy, "--video", str(video),
                          "--frames", str(frames), "--seed", str(seed), f"--baselines={str(baselines).lower()}"], check=True, capture_output=True, text=True)
    return {p["policy"]: p for p in json.loads(out.stdout)["policies"]}


CURVE_FIELDS = ["episode", "timesteps", "steps", "return", "predicted_return", "wall_s"]


def write_curve(out: Path, rows: list[dict]) -> None:
    """curve.csv and curve.svg: the true return per episode (the step
    rewards sum to it) beside what Eq. 5.1's predictions alone add up to."""
    from .svg import line_chart

    with open(out / "curve.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
        w.writeheader()
        w.writerows(rows)
    xs = [r["episode"] for r in rows]
    k = max(1, len(rows) // 50)
    smooth = lambda v: [float(np.mean(v[max(0, i - k + 1): i + 1])) for i in range(len(v))]
    line_chart(str(out / "curve.svg"), "RIDE training (PPO, skrl/JAX)", "episode", "return per episode (Eq. 5.13)",
               [("true reward (the step rewards' sum)", xs, smooth([r["return"] for r in rows])),
                ("Eq. 5.1 prediction alone", xs, smooth([r["predicted_return"] for r in rows]))])


def train(timesteps: int, out: Path, seed: int = 1, num_envs: int = 8, frames: int = 10, log=print,
          ray_address: str | None = None, checkpoint_every: int = 100_000) -> dict:
    """PPO for timesteps steps; every checkpoint_every steps the actor is
    exported to checkpoints/policy-<steps>.json with curve.csv and
    summary.json so far, so that a run cut short is usable and labelled
    with the steps it really trained."""
    import jax.numpy as jnp
    from skrl.envs.wrappers.jax import wrap_env
    from skrl.utils import set_seed

    from .env import make_vector_env
    from .mlp import save

    out.mkdir(parents=True, exist_ok=True)
    (out / "checkpoints").mkdir(exist_ok=True)
    if ray_address is not None:  # the environments as Ray actors, on any machine of the cluster
        from .ray_env import make_ray_vector_env

        venv = make_ray_vector_env(num_envs, address=None if ray_address == "local" else ray_address, frames=frames)
    else:
        venv = make_vector_env(num_envs, frames=frames)
    venv.reset(seed=seed)  # seeds every worker's RNG; later resets continue it
    # skrl's wrapper resets the environments once more, with a seed drawn
    # from its global JAX key: seeded here, before it, or two runs with one
    # seed start from different episodes.
    set_seed(seed)
    env = wrap_env(venv, wrapper="gymnasium")
    rows = []
    t0 = time.time()
    try:
        agent, models = build_agent(env, seed)
        obs, infos = env.reset()
        ret = np.zeros(num_envs)
        predicted = np.zeros(num_envs)
        paths, features = int(venv.single_action_space.n) - 1, int(venv.single_observation_space.shape[0])
        summary = lambda steps: {"timesteps": steps, "episodes": len(rows), "wall_s": round(time.time() - t0, 1),
                                 "steps_per_s": round(steps / max(time.time() - t0, 1e-9), 1), "seed": seed,
                                 "num_envs": num_envs, "frames": frames, "hidden": [HIDDEN, HIDDEN],
                                 "learning_rate": LEARNING_RATE, "gamma": GAMMA}
        steps = np.zeros(num_envs, dtype=int)
        total = 0
        # The untrained start (the seed's initial weights, no training
        # record: it trained for no step), which a run must beat on the
        # same evaluation episodes.
        start = export(models, paths, features, 1, seed, timesteps)
        del start["training"]
        save(start, str(out / "checkpoints" / "policy-0.json"))
        vsteps = timesteps // num_envs
        for t in range(vsteps):
            agent.pre_interaction(timestep=t, timesteps=vsteps)
            actions, _ = agent.act(obs, None, timestep=t, timesteps=vsteps)
            nobs, rew, term, trunc, infos = env.step(actions)
            agent.record_transition(observations=obs, states=None, actions=actions, rewards=rew,
                                    next_observations=nobs, next_states=None, terminated=term, truncated=trunc,
                                    infos=infos, timestep=t, timesteps=vsteps)
            agent.post_interaction(timestep=t, timesteps=vsteps)
            r = np.asarray(rew).reshape(-1)
            done = (np.asarray(term) | np.asarray(trunc)).reshape(-1)
            ret += r
            steps += 1
            total += num_envs
            if isinstance(infos, dict) and "predicted_reward" in infos:
                predicted += np.asarray(infos["predicted_reward"], dtype=float).reshape(-1)
            for i in np.flatnonzero(done):
                rows.append({"episode": len(rows) + 1, "timesteps": total, "steps": int(steps[i]),
                             "return": round(float(ret[i]), 4), "predicted_return": round(float(predicted[i]), 4),
                             "wall_s": round(time.time() - t0, 1)})
                if len(rows) % 10 == 0:
                    log(f"episode {len(rows)}: {total} steps, return {ret[i]:.1f}, {time.time() - t0:.0f} s")
                ret[i], predicted[i], steps[i] = 0, 0, 0
            obs = nobs  # the gymnasium vector env resets finished episodes itself
            if checkpoint_every and total // checkpoint_every != (total - num_envs) // checkpoint_every:
                save(export(models, paths, features, total, seed, timesteps), str(out / "checkpoints" / f"policy-{total}.json"))
                write_curve(out, rows)
                with open(out / "summary.json", "w") as f:
                    json.dump(summary(total), f, indent=2)
                log(f"checkpoint at {total} steps, {time.time() - t0:.0f} s")
        doc = export(models, paths, features, total, seed, timesteps)
    finally:
        env.close()
    save(doc, str(out / "policy.json"))
    write_curve(out, rows)
    s = summary(total)
    with open(out / "summary.json", "w") as f:
        json.dump(s, f, indent=2)
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", choices=sorted(BUDGETS), default="short")
    ap.add_argument("--timesteps", type=int, help="override the budget's step count")
    ap.add_argument("--out", default="results/ride-train")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--envs", type=int, default=8, help="env servers stepped in parallel (AsyncVectorEnv; default 8: both cores busy, and one policy call serves 8 decisions)")
    ap.add_argument("--frames", type=int, default=10, help="frames per training episode (default 10, about 430 decisions; the thesis counts one frame, ~40 decisions, as an episode, but every reset here also warms the network up)")
    ap.add_argument("--ray", metavar="ADDRESS", default=None,
                    help="run the environments as Ray actors: 'local', 'auto' or ray://HEAD:10001 (pip install 'hetquic[sweep]')")
    ap.add_argument("--checkpoint-every", type=int, default=100_000, help="export the actor every N steps (checkpoints/policy-N.json; 0: never)")
    ap.add_argument("--eval", action="store_true", help="after training, compare the policy with RR, minRTT and Peekaboo on the validation video")
    args = ap.parse_args(argv)
    steps = args.timesteps or BUDGETS[args.budget]
    out = Path(args.out)
    s = train(steps, out, seed=args.seed, num_envs=args.envs, frames=args.frames, ray_address=args.ray,
              checkpoint_every=args.checkpoint_every)
    print(json.dumps(s))
    if args.eval:
        print(json.dumps({k: v["mean_frame_reward"] for k, v in compare(str(out / "policy.json")).items()}))


if __name__ == "__main__":
    main()
