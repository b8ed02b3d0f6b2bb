"""Choose among trained RIDE policies on the validation video, never the
test video (docs/ride.md):

    python -m hetquic_rl.select --out choice.json run1/policy.json run2/checkpoints/policy-800000.json …

plays each policy on the same episodes of the validation video (`hetquic
ride eval --video 5 --json`, seeds 1…3, 600 frames each) and ranks the
policies by the mean true reward per frame; choice.json lists every
candidate's numbers, the baselines' on the same episodes, and names the
best."""

from __future__ import annotations

import argparse
import json
import sys

from .env import VALIDATION_VIDEO
from .train import compare


def validate(policies: list[str], frames: int = 600, seeds: tuple[int, ...] = (1, 2, 3)) -> dict:
    """Every candidate's mean true reward per frame over the validation
    episodes (one per seed, frames long), the baselines' for reference, and
    the best candidate's path."""
    def mean(runs, name, key="mean_frame_reward"):
        return float(sum(r[name][key] for r in runs) / len(runs))

    base = [compare(policies[0], video=VALIDATION_VIDEO, frames=frames, seed=s) for s in seeds]
    rows = []
    for p in policies:
        runs = [compare(p, video=VALIDATION_VIDEO, frames=frames, seed=s, baselines=False) for s in seeds]
        rows.append({"policy": p, "mean_frame_reward": mean(runs, "ride"),
                     "viewport_mbps_mean": mean(runs, "ride", "viewport_mbps_mean")})
    best = max(rows, key=lambda r: r["mean_frame_reward"])
    return {"video": VALIDATION_VIDEO, "frames": frames, "seeds": list(seeds), "best": best["policy"],
            "baselines": {b: mean(base, b) for b in ("rr", "minrtt", "peekaboo")}, "candidates": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policies", nargs="+", help="hetquic-ride-mlp/1 files")
    ap.add_argument("--frames", type=int, default=600, help="frames of each validation episode (0: all 1800)")
    ap.add_argument("--seeds", type=int, default=3, help="validation episodes (network and head-movement seeds 1…N)")
    ap.add_argument("--out", help="write the choice (JSON) here")
    args = ap.parse_args(argv)
    choice = validate(args.policies, frames=args.frames, seeds=tuple(range(1, args.seeds + 1)))
    for r in choice["candidates"]:
        print(f"{r['mean_frame_reward']:9.2f}  {r['policy']}", file=sys.stderr)
    text = json.dumps(choice, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
