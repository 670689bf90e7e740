"""Charts as plain inline SVG (no library, no network): rates with confidence
intervals, distributions, a run's timeline and its tokens per step."""

from __future__ import annotations

from html import escape
from typing import Any, Sequence

PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"]
FONT = 'font-family="inherit" font-size="11"'


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{"".join(body)}</svg>')


def legend(labels: Sequence[str]) -> str:
    return "".join(f'<span class="key"><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{escape(label)}</span>'
                   for i, label in enumerate(labels))


def rate_bars(groups: list[str], series: list[tuple[str, list[dict[str, Any] | None]]], *, title: str) -> str:
    """Grouped bars: one group per dimension, one bar per series; each value a dict
    with rate, low, high (Wilson interval) and n, or None (no decided case)."""
    bar, gap, pad_l, pad_b, h = 18, 26, 40, 34, 180
    per_group = max(1, len(series)) * bar
    width = pad_l + len(groups) * (per_group + gap) + 10
    body = []
    for i, frac in enumerate((0, .25, .5, .75, 1)):
        y = 10 + h * (1 - frac)
        body.append(f'<line x1="{pad_l}" x2="{width - 5}" y1="{y}" y2="{y}" class="grid"/>'
                    f'<text x="{pad_l - 6}" y="{y + 4}" text-anchor="end" {FONT}>{int(frac * 100)}%</text>')
    for g, group in enumerate(groups):
        x0 = pad_l + gap / 2 + g * (per_group + gap)
        body.append(f'<text x="{x0 + per_group / 2}" y="{10 + h + 16}" text-anchor="middle" {FONT}>{escape(group)}</text>')
        for s, (label, values) in enumerate(series):
            v = values[g] if g < len(values) else None
            x = x0 + s * bar
            color = PALETTE[s % len(PALETTE)]
            if v is None:
                body.append(f'<text x="{x + bar / 2}" y="{10 + h - 4}" text-anchor="middle" {FONT} class="muted">–</text>')
                continue
            y = 10 + h * (1 - v["rate"])
            tip = f'{label} · {group}: {v["rate"]:.0%} [{v["low"]:.0%}, {v["high"]:.0%}] n={v["n"]}'
            body.append(f'<rect x="{x + 2}" y="{y:.1f}" width="{bar - 4}" height="{10 + h - y:.1f}" fill="{color}" '
                        f'opacity=".85"><title>{escape(tip)}</title></rect>')
            body.append(f'<circle cx="{x + bar / 2}" cy="{y:.1f}" r="3.5" fill="{color}" stroke="#fff">'
                        f'<title>{escape(tip)}</title></circle>')
            ylo, yhi = 10 + h * (1 - v["low"]), 10 + h * (1 - v["high"])
            cx = x + bar / 2
            body.append(f'<path d="M{cx} {ylo:.1f}V{yhi:.1f}M{cx - 4} {ylo:.1f}h8M{cx - 4} {yhi:.1f}h8" '
                        f'class="whisker"/>')
    return _svg(int(width), h + pad_b + 10, body, title)


def distribution(series: list[tuple[str, list[float]]], *, title: str, unit: str = "", digits: int = 0) -> str:
    """One row per series: every value as a dot, the median as a bar, the range as a line."""
    row, pad_l, width = 26, 190, 640
    values = [v for _, vs in series for v in vs]
    top = max(values) if values else 1.0
    top = top if top > 0 else 1.0
    plot = width - pad_l - 20
    body = []
    for i, frac in enumerate((0, .5, 1)):
        x = pad_l + plot * frac
        body.append(f'<line x1="{x}" x2="{x}" y1="4" y2="{len(series) * row + 6}" class="grid"/>'
                    f'<text x="{x}" y="{len(series) * row + 20}" text-anchor="middle" {FONT}>'
                    f'{top * frac:.{digits}f}{escape(unit)}</text>')
    for s, (label, vs) in enumerate(series):
        y = 8 + s * row + row / 2
        color = PALETTE[s % len(PALETTE)]
        body.append(f'<text x="{pad_l - 8}" y="{y + 4}" text-anchor="end" {FONT}>{escape(label)}</text>')
        if not vs:
            continue
        ordered = sorted(vs)
        lo, hi, med = ordered[0], ordered[-1], ordered[len(ordered) // 2]
        body.append(f'<line x1="{pad_l + plot * lo / top:.1f}" x2="{pad_l + plot * hi / top:.1f}" y1="{y}" y2="{y}" '
                    f'stroke="{color}" stroke-width="2" opacity=".4"/>')
        for k, v in enumerate(vs):
            jitter = ((k * 7919) % 11 - 5) * 1.1
            body.append(f'<circle cx="{pad_l + plot * v / top:.1f}" cy="{y + jitter:.1f}" r="3" fill="{color}" '
                        f'opacity=".6"><title>{escape(label)}: {v:.{max(digits, 0)}f}{escape(unit)}</title></circle>')
        mx = pad_l + plot * med / top
        body.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{y - 9}" y2="{y + 9}" stroke="#111" stroke-width="2">'
                    f'<title>median {med:.{digits}f}{escape(unit)}</title></line>')
    return _svg(width, len(series) * row + 28, body, title)


LANES = ["model", "tool", "guard"]
LANE_COLOR = {"model": "#2563eb", "tool": "#059669", "guard": "#dc2626"}


def timeline(spans: list[dict[str, Any]], *, title: str) -> str:
    """A run on its clock: model requests and tool calls as bars, guard trips as marks."""
    lanes = LANES + sorted({s["lane"] for s in spans} - set(LANES))
    end = max([s["end"] for s in spans] + [1.0])
    pad_l, width, row = 60, 900, 22
    plot = width - pad_l - 10
    body = []
    for i, lane in enumerate(lanes):
        y = 6 + i * row
        body.append(f'<text x="{pad_l - 6}" y="{y + 14}" text-anchor="end" {FONT}>{escape(lane)}</text>'
                    f'<line x1="{pad_l}" x2="{width - 10}" y1="{y + row - 2}" y2="{y + row - 2}" class="grid"/>')
    for s in spans:
        i = lanes.index(s["lane"])
        y = 6 + i * row
        x = pad_l + plot * s["start"] / end
        color = LANE_COLOR.get(s["lane"], "#7c3aed")
        if s.get("ok") is False:
            color = "#d97706"
        if s.get("mark"):
            body.append(f'<path d="M{x:.1f} {y + 2}l5 8l-5 8l-5-8z" fill="{color}"><title>{escape(s["label"])} at '
                        f'{s["start"]:.0f} ms</title></path>')
        else:
            w = max(2.0, plot * (s["end"] - s["start"]) / end)
            body.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" rx="2" fill="{color}" '
                        f'opacity=".8"><title>{escape(s["label"])}</title></rect>')
    y = 6 + len(lanes) * row
    body.append(f'<text x="{pad_l}" y="{y + 12}" {FONT}>0 ms</text>'
                f'<text x="{width - 10}" y="{y + 12}" text-anchor="end" {FONT}>{end:.0f} ms</text>')
    return _svg(width, y + 18, body, title)


def step_bars(steps: list[Any], *, title: str) -> str:
    """Tokens per step (input and output stacked), cost in the tooltip."""
    if not steps:
        return ""
    bar, pad_l, h = 22, 50, 110
    top = max([s.input_tokens + s.output_tokens for s in steps] + [1])
    width = pad_l + len(steps) * bar + 10
    body = [f'<text x="{pad_l - 6}" y="16" text-anchor="end" {FONT}>{top}</text>'
            f'<text x="{pad_l - 6}" y="{10 + h}" text-anchor="end" {FONT}>0</text>']
    for i, s in enumerate(steps):
        x = pad_l + i * bar
        hin = h * s.input_tokens / top
        hout = h * s.output_tokens / top
        tip = (f"step {s.step}: {s.input_tokens} in + {s.output_tokens} out tokens · cost {s.cost:.6f} · "
               f"model {s.latency_ms:.0f} ms · tools {s.tool_ms:.0f} ms" + (f" · {s.trips} guard trip(s)" if s.trips else ""))
        body.append(f'<g><title>{escape(tip)}</title>'
                    f'<rect x="{x + 2}" y="{10 + h - hin:.1f}" width="{bar - 4}" height="{hin:.1f}" fill="#93c5fd"/>'
                    f'<rect x="{x + 2}" y="{10 + h - hin - hout:.1f}" width="{bar - 4}" height="{hout:.1f}" fill="#1d4ed8"/>'
                    + (f'<circle cx="{x + bar / 2}" cy="{4}" r="3" fill="#dc2626"/>' if s.trips else "")
                    + f'<text x="{x + bar / 2}" y="{10 + h + 13}" text-anchor="middle" {FONT}>{s.step}</text></g>')
    return _svg(width, h + 30, body, title)
