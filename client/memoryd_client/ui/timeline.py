"""The viewer's Timeline: how memory grew, per agent and per kind (charts drawn here as
inline SVG, no chart library), and what happened lately (entries written, runs of passes).
"""

from __future__ import annotations

import time

from memoryd_client.ui.html import (
    Page,
    ago,
    clipped,
    entry_link,
    esc,
    isolated,
    link,
    status_badges,
)
from memoryd_client.views import when

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client

#: Colours of the series, in order (distinct for the colour-blind first: blue, orange, …).
PALETTE = ("#2f5fb3", "#d9822b", "#1f7a4a", "#b3261e", "#7b4fb3", "#5f6b7a", "#c2a000",
           "#2a9d9d")
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 900, 260, 52, 28, 12, 16
DAY_S = 86_400
#: Beyond this many days of history a chart counts by week (its lines stay readable).
DAILY_UP_TO = 180


def timeline_page(client: Client, query: dict[str, str]) -> Page:
    counts = client.timeline()["counts"]
    recent = client.list_entries(limit=15, agents=["*"], status="any")
    runs = client.pass_runs(limit=8)["runs"]
    if counts:
        span_days = (counts[-1]["start"] - counts[0]["start"]) / DAY_S
        bucket = DAY_S if span_days <= DAILY_UP_TO else 7 * DAY_S
        charts = (chart(series(counts, "agent", bucket), "Entries per agent", bucket)
                  + chart(series(counts, "kind", bucket), "Entries per kind", bucket))
    else:
        charts = "<p>No entries yet.</p>"
    written = "".join(
        f'<li>{ago(e["created"])} · {isolated(e["agent"])}/{isolated(e.get("category") or "-")} '
        f'{esc(e["kind"])} {status_badges(e)}: {entry_link(e["id"], clipped(e["text"], 140))}'
        "</li>" for e in recent["entries"])
    ran = "".join(
        f'<li>{ago(r["started"])} · {link("passes", r["run"], r["run"])} {esc(r["pass"])} '
        f'{esc(r["status"])}</li>' for r in runs)
    body = ("<h1>Timeline</h1>" + charts
            + '<div class="columns"><section><h2>Written lately</h2>'
            + (f'<ul class="recent">{written}</ul>' if written else "<p>Nothing yet.</p>")
            + "</section><section><h2>Passes lately</h2>"
            + (f'<ul class="recent">{ran}</ul>' if ran else "<p>No run yet.</p>")
            + "</section></div>")
    return Page("Timeline", "timeline", body)


def series(counts: list[dict[str, Any]], by: str, bucket: int, now: float | None = None
           ) -> dict[str, list[tuple[float, int]]]:
    """Cumulative entries per value of ``by`` (agent or kind) at the end of each period of
    ``bucket`` seconds, every period from the first to the last (one without entries too, so
    that a line joining two points rises only within the period its entries were written
    in), the last one ending ``now`` at the latest (not in the future): name → [(time,
    total so far)], biggest series first."""
    now = time.time() if now is None else now
    periods: dict[str, dict[float, int]] = {}
    for row in counts:
        start = (row["start"] // bucket) * bucket
        named = periods.setdefault(row[by], {})
        named[start] = named.get(start, 0) + row["count"]
    first = min(start for named in periods.values() for start in named)
    last = max(start for named in periods.values() for start in named)
    every = [first + n * bucket for n in range(int((last - first) // bucket) + 1)]
    totals: dict[str, list[tuple[float, int]]] = {}
    for name, named in periods.items():
        total, points = 0, [(first, 0)]
        for start in every:
            total += named.get(start, 0)
            points.append((max(min(start + bucket, now), points[-1][0]), total))
        totals[name] = points
    return dict(sorted(totals.items(), key=lambda item: -item[1][-1][1]))


def chart(lines: dict[str, list[tuple[float, int]]], title: str, bucket: int) -> str:
    """A line chart of cumulative counts as an SVG figure with its legend."""
    shown = dict(list(lines.items())[:len(PALETTE)])
    start = min(points[0][0] for points in shown.values())
    end = max(points[-1][0] for points in shown.values())
    top = max(max(n for _, n in points) for points in shown.values()) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - start) / max(end - start, 1) * plot_w

    def y(n: float) -> float:
        return TOP + plot_h - n / top * plot_h

    axis = (f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" '
            f'y2="{TOP + plot_h}"/>')
    parts = [axis]
    for fraction in (0, 0.5, 1):
        value = round(top * fraction)
        parts.append(f'<line class="axis" x1="{LEFT}" y1="{y(value):.1f}" x2="{WIDTH - RIGHT}" '
                     f'y2="{y(value):.1f}" stroke-dasharray="2 4"/>'
                     f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">'
                     f"{value:,}</text>")
    for t, anchor in ((start, "start"), ((start + end) / 2, "middle"), (end, "end")):
        parts.append(f'<text x="{x(t):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}">'
                     f"{esc(when(t)[:10])}</text>")
    legend = []
    for colour, (name, points) in zip(PALETTE, shown.items()):
        path = " ".join(f"{x(t):.1f},{y(n):.1f}" for t, n in points)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                     f'points="{path}"><title>{esc(name)}: {points[-1][1]:,}</title></polyline>')
        legend.append(f'<span><svg class="swatch" viewBox="0 0 10 10" width="12" height="12">'
                      f'<rect width="10" height="10" fill="{colour}"/></svg>'
                      f"{esc(name)} {points[-1][1]:,}</span>")
    more = len(lines) - len(shown)
    period = "day" if bucket == DAY_S else "week"
    return (f'<figure class="chart"><figcaption>{esc(title)}, all written (also those since '
            f"superseded or forgotten), counted by {period}</figcaption>"
            f'<div class="legend">{"".join(legend)}'
            + (f"<span>and {more} more</span>" if more > 0 else "")
            + f'</div><svg class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="{esc(title)}">{"".join(parts)}</svg></figure>')
