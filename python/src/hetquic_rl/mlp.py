"""The actor's weights as JSON (format hetquic-ride-mlp/1, read by Go's
ride.ReadMLP) and a NumPy forward pass with the same semantics: ReLU after
every layer but the last; the action is the argmax of the logits, index 0
being "skip"."""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np

FORMAT = "hetquic-ride-mlp/1"


def from_flax(params: Mapping[str, Any], paths: int, features: int, name: str = "ride") -> dict[str, Any]:
    """Export flax Dense params ({"Dense_0": {"kernel", "bias"}, …}, kernel
    in×out) as the JSON document (w out×in, row-major)."""
    p = params.get("params", params)
    layers = []
    for k in range(len(p)):
        d = p[f"Dense_{k}"]
        w = np.asarray(d["kernel"], dtype=np.float64).T
        b = np.asarray(d["bias"], dtype=np.float64)
        layers.append({"w": w.tolist(), "b": b.tolist()})
    return {"format": FORMAT, "paths": int(paths), "features": int(features), "layers": layers, "name": name}


def to_flax(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of from_flax (float32 arrays)."""
    return {"params": {f"Dense_{k}": {"kernel": np.asarray(l["w"], dtype=np.float32).T,
                                        "bias": np.asarray(l["b"], dtype=np.float32)}
                       for k, l in enumerate(doc["layers"])}}


def logits(doc: Mapping[str, Any], obs: np.ndarray) -> np.ndarray:
    """Forward pass in float64, obs of shape (n, features)."""
    x = np.asarray(obs, dtype=np.float64)
    layers = doc["layers"]
    for k, l in enumerate(layers):
        x = x @ np.asarray(l["w"]).T + np.asarray(l["b"])
        if k < len(layers) - 1:
            x = np.maximum(x, 0)
    return x


def actions(doc: Mapping[str, Any], obs: np.ndarray) -> np.ndarray:
    """Greedy action indices (0 = skip, k = path k−1)."""
    return np.argmax(logits(doc, obs), axis=-1)


def save(doc: Mapping[str, Any], path: str) -> None:
    with open(path, "w") as f:
        json.dump(doc, f)


def load(path: str) -> dict[str, Any]:
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}: format {doc.get('format')!r}, want {FORMAT!r}")
    return doc
