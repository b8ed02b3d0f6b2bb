"""RIDE (thesis chapter 5) on hetquic's simulator: a gymnasium environment,
PPO training (skrl, JAX backend) and export of the trained actor to the
JSON format hetquic's Go forward pass reads (ride.MLPPolicy)."""

from .env import RideEnv, make_vector_env, ACTIONS

__all__ = ["RideEnv", "make_vector_env", "ACTIONS"]
