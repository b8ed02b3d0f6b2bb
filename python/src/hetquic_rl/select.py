"""Choose among trained RIDE policies on the validation video, never the
test video (docs/ride.md):

    python -m hetquic_rl.select --out choice.json run1/policy.json run2/checkpoints/policy-800000.json …

plays each policy and the baselines on the same episode of the validation
video (`hetquic ride eval --video 5 --json`) and ranks the policies by the
mean true reward per frame; choice.json lists every candidate's numbers and
names the best."""

from __future__ import annotations

import argparse
import json
import sys

from .env import VALIDATION_VIDEO
from .train import compare


def validate(policies: list[str], frames: int = 0, seed: int = 1) -> dict:
    """Every candidate's validation numbers and the best one's path."""
    rows = []
    for p in policies:
        res = compare(p, video=VALIDATION_VIDEO, frames=frames, seed=seed)
        ride, rr, minrtt = res["ride"], res["rr"], res["minrtt"]
        rows.append({"policy": p, "mean_frame_reward": ride["mean_frame_reward"],
                     "rr_mean_frame_reward": rr["mean_frame_reward"],
                     "minrtt_mean_frame_reward": minrtt["mean_frame_reward"],
                     "viewport_mbps_median": ride["viewport_mbps_median"],
                     "zero_rebuffering_share_ipb": ride["zero_rebuffering_share_ipb"]})
    best = max(rows, key=lambda r: r["mean_frame_reward"])
    return {"video": VALIDATION_VIDEO, "frames": frames, "seed": seed, "best": best["policy"], "candidates": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policies", nargs="+", help="hetquic-ride-mlp/1 files")
    ap.add_argument("--frames", type=int, default=0, help="frames of the validation video (0: all 1800)")
    ap.add_argument("--seed", type=int, default=1, help="network and head-movement seed of the validation episode")
    ap.add_argument("--out", help="write the choice (JSON) here")
    args = ap.parse_args(argv)
    choice = validate(args.policies, frames=args.frames, seed=args.seed)
    for r in choice["candidates"]:
        print(f"{r['mean_frame_reward']:9.2f}  {r['policy']}", file=sys.stderr)
    text = json.dumps(choice, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
