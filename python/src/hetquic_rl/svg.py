"""A dependency-free SVG line chart for training curves."""

from __future__ import annotations

from typing import Sequence


def line_chart(path: str, title: str, xlabel: str, ylabel: str,
               series: Sequence[tuple[str, Sequence[float], Sequence[float]]]) -> None:
    w, h, ml, mr, mt, mb = 640, 400, 70, 150, 40, 50
    xs = [x for _, sx, _ in series for x in sx]
    ys = [y for _, _, sy in series for y in sy]
    if not xs:
        xs, ys = [0, 1], [0, 1]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1
    X = lambda x: ml + (x - x0) / (x1 - x0) * (w - ml - mr)
    Y = lambda y: h - mb - (y - y0) / (y1 - y0) * (h - mt - mb)
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{ml}" y1="{h - mb}" x2="{w - mr}" y2="{h - mb}" stroke="black"/>',
           f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{h - mb}" stroke="black"/>',
           f'<text x="{(ml + w - mr) / 2}" y="{h - 12}" text-anchor="middle">{xlabel}</text>',
           f'<text x="16" y="{(mt + h - mb) / 2}" text-anchor="middle" transform="rotate(-90 16 {(mt + h - mb) / 2})">{ylabel}</text>']
    for k in range(5):
        xv, yv = x0 + (x1 - x0) * k / 4, y0 + (y1 - y0) * k / 4
        out.append(f'<text x="{X(xv)}" y="{h - mb + 16}" text-anchor="middle">{xv:.4g}</text>')
        out.append(f'<text x="{ml - 6}" y="{Y(yv) + 4}" text-anchor="end">{yv:.4g}</text>')
    for i, (name, sx, sy) in enumerate(series):
        c = colors[i % len(colors)]
        pts = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in zip(sx, sy))
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
        out.append(f'<line x1="{w - mr + 10}" y1="{mt + 16 * i}" x2="{w - mr + 30}" y2="{mt + 16 * i}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{w - mr + 34}" y="{mt + 16 * i + 4}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
