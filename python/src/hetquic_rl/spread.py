"""The spread of RIDE's results across training seeds, on the test video
(reporting only: policies are chosen on the validation video, by
hetquic_rl.select):

    python -m hetquic_rl.spread ride/policies/ride-seed*.json

prints one Markdown row per policy file: its training (seed, steps), mean
true reward per frame, mean viewport bitrate ÷ RR's and ÷ minRTT's, and
the I / P / B tile-frames played without rebuffering; then the baselines'
row and the range across the files. Baselines and policies play the same
episode (`hetquic ride eval --json`, the whole test video, seed 1)."""

from __future__ import annotations

import argparse
import json

from .env import TEST_VIDEO
from .train import compare


def spread(policies: list[str], frames: int = 0, seed: int = 1) -> str:
    base = compare(policies[0], video=TEST_VIDEO, frames=frames, seed=seed)
    rr, minrtt = base["rr"]["viewport_mbps_mean"], base["minrtt"]["viewport_mbps_mean"]
    pct = lambda z: " / ".join(f"{100 * x:.1f}" for x in z) + " %"
    lines = ["| policy (training seed, steps of the run) | reward / frame | viewport ÷ RR | viewport ÷ minRTT | no rebuffering I / P / B |",
             "|---|---|---|---|---|"]
    cols = []
    for p in policies:
        with open(p) as f:
            tr = json.load(f).get("training")
        if not tr:
            raise SystemExit(f"{p}: no training record (steps, seed): the spread needs to say what each file trained for")
        r = compare(p, video=TEST_VIDEO, frames=frames, seed=seed, baselines=False)["ride"]
        row = (r["mean_frame_reward"], r["viewport_mbps_mean"] / rr, r["viewport_mbps_mean"] / minrtt, r["zero_rebuffering_share_ipb"])
        cols.append(row)
        steps = f"{tr['steps']:,} of {tr.get('run_steps', tr['steps']):,} steps".replace(",", " ")
        lines.append(f"| `{p.rsplit('/', 1)[-1]}` (seed {tr['seed']}, {steps}) "
                     f"| {row[0]:.2f} | {row[1]:.2f}× | {row[2]:.2f}× | {pct(row[3])} |")
    lo = [min(c[k] for c in cols) for k in range(3)]
    hi = [max(c[k] for c in cols) for k in range(3)]
    zr = [f"{100 * min(c[3][t] for c in cols):.1f}–{100 * max(c[3][t] for c in cols):.1f}" for t in range(3)]
    lines.append(f"| range over the {len(cols)} policies above | {lo[0]:.2f} … {hi[0]:.2f} | {lo[1]:.2f}× … {hi[1]:.2f}× "
                 f"| {lo[2]:.2f}× … {hi[2]:.2f}× | {' / '.join(zr)} % |")
    for b in ("rr", "minrtt", "peekaboo"):
        lines.append(f"| {b} | {base[b]['mean_frame_reward']:.2f} | | | {pct(base[b]['zero_rebuffering_share_ipb'])} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policies", nargs="+", help="hetquic-ride-mlp/1 files, one per training seed")
    ap.add_argument("--frames", type=int, default=0, help="frames of the test video (0: all 1800)")
    ap.add_argument("--seed", type=int, default=1, help="the evaluation episode's seed")
    args = ap.parse_args(argv)
    print(spread(args.policies, frames=args.frames, seed=args.seed))


if __name__ == "__main__":
    main()
