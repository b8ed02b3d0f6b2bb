"""Write the Go/Python equivalence fixture (ride/testdata/policy_fixture.json):
an actor with the training architecture, seeded weights, observations from
a short episode, and the greedy actions JAX computes for them. Go's
TestPolicyFixture checks that ride.MLPPolicy picks the same actions.

    python -m hetquic_rl.fixture ride/testdata/policy_fixture.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

# Observations whose two best logits are closer than this are left out:
# JAX computes in float32, Go in float64, and a near tie may round apart.
MARGIN = 1e-3


def build(n: int = 200, seed: int = 3):
    import jax
    import jax.numpy as jnp
    from skrl.utils import set_seed

    from .env import RideEnv
    from .mlp import from_flax
    from .train import make_models

    set_seed(seed)
    env = RideEnv(frames=5)
    try:
        models = make_models(env.observation_space, env.action_space)
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed, options={"video": 4})
        xs = []
        while len(xs) < 4 * n:
            xs.append(obs)
            obs, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
            if term or trunc:
                obs, _ = env.reset()
        paths, features = env.action_space.n - 1, env.observation_space.shape[0]
    finally:
        env.close()
    pol = models["policy"]
    x = np.asarray(xs, dtype=np.float32)
    # Weights drawn wider than the initialiser's, so that every action is
    # the greedy one for some observations (a fresh actor picks one action
    # almost everywhere, and a fixture of one action proves little).
    # Redraw until each action is the greedy one for ≥ 10 % of the kept
    # observations.
    for _ in range(100):
        params = jax.tree_util.tree_map(lambda a: jnp.asarray(rng.normal(0, 0.5, np.shape(a)), dtype=jnp.float32),
                                        pol.state_dict.params)
        logits, _ = pol.apply(params, {"observations": jnp.asarray(x)})
        logits = np.asarray(logits)
        top2 = np.sort(logits, axis=-1)[:, -2:]
        keep = np.flatnonzero(top2[:, 1] - top2[:, 0] > MARGIN)[:n]
        counts = np.bincount(np.argmax(logits[keep], axis=-1), minlength=logits.shape[1])
        if len(keep) == n and counts.min() >= n // 10:
            break
    else:
        raise RuntimeError("no draw gives every action: widen the search")
    doc = from_flax(params, paths, features, name="fixture")
    return {"policy": doc, "obs": x[keep].astype(float).tolist(),
            "actions": np.argmax(logits[keep], axis=-1).astype(int).tolist()}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit("usage: python -m hetquic_rl.fixture OUT.json")
    fx = build()
    with open(argv[0], "w") as f:
        json.dump(fx, f)
    print(f"{argv[0]}: {len(fx['actions'])} observations, actions {np.bincount(fx['actions'], minlength=3).tolist()}")


if __name__ == "__main__":
    main()
