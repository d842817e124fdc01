#!/usr/bin/env python3
"""Writes docs/benchmarks/gossip.md and gossip-convergence.svg from the runs of
yip-gossip-sim found in DIR (gossip-<name>.json and gossip-<name>.csv, as
`make gossip-sim` leaves them). Uses only the standard library: the plot is
SVG written by hand.

usage: report.py DIR
"""
import csv
import glob
import json
import os
import sys

GOALS = {"join": 10.0, "rev": 30.0, "steady": 1024.0}
DEFAULT_REFRESH_S = 21600  # yipd's YIP_RECORD_RESIGN_S (src/peer/peer.h)
COLOURS = ["#1f5fa8", "#c0392b", "#2e8b57", "#8e44ad", "#d68910"]


def load(d):
    runs = []
    for path in sorted(glob.glob(os.path.join(d, "gossip-*.json"))):
        with open(path) as f:
            r = json.load(f)
        name = os.path.basename(path)[len("gossip-"):-len(".json")]
        r["name"] = name
        r["curve"] = []
        with open(path[:-5] + ".csv") as f:
            for row in csv.DictReader(f):
                r["curve"].append((float(row["seconds"]), float(row["record_share"]),
                                   float(row["revocation_share"])))
        runs.append(r)
    runs.sort(key=lambda r: (r["nodes"], -r.get("degree", 6), r["refresh_s"], r["name"]))
    return runs


def label(r):
    return "%d nodes, degree %d, %g %% loss, records re-signed every %s" % (
        r["nodes"], r.get("degree", 6), r["loss"] * 100, hours(r["refresh_s"]))


def variant(r):
    """The run's node count and whatever differs from the defaults."""
    v = ["%d nodes" % r["nodes"]]
    if r.get("degree", 6) != 6:
        v.append("degree %d" % r["degree"])
    if r["loss"] != 0.01:
        v.append("%g %% loss" % (r["loss"] * 100))
    if r["refresh_s"] != DEFAULT_REFRESH_S:
        v.append("records re-signed every %s" % hours(r["refresh_s"]))
    if r["rev_entries"] != 100:
        v.append("a revocation list of %d entries" % r["rev_entries"])
    return ", ".join(v)


def hours(s):
    return "%g h" % (s / 3600) if s >= 3600 else "%g s" % s


def svg(runs, path):
    left, right, top = 64, 24, 28
    bottom = 80 + 36 * len(runs)
    w, h = 720, top + 242 + bottom
    pw, ph = w - left - right, h - top - bottom
    xmax = 1.0
    for r in runs:
        for t, a, v in r["curve"]:
            if a < 1.0 or v < 1.0:
                xmax = max(xmax, t)
    xmax = float(int(xmax * 1.2) + 1)

    def x(t):
        return left + pw * min(t, xmax) / xmax

    def y(share):
        return top + ph * (1 - share)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="14">Share of nodes holding a new item, '
           'seconds after it was published</text>' % left]
    step = 1.0 if xmax <= 12 else 2.0 if xmax <= 24 else 5.0
    t = 0.0
    while t <= xmax + 1e-9:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' %
                   (x(t), top, x(t), top + ph))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' %
                   (x(t), top + ph + 16, t))
        t += step
    for share in (0, 0.25, 0.5, 0.75, 0.99):
        dash = ' stroke-dasharray="4,3"' if share == 0.99 else ""
        colour = "#999" if share == 0.99 else "#ddd"
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"%s/>' %
                   (left, y(share), left + pw, y(share), colour, dash))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%d %%</text>' %
                   (left - 6, y(share) + 4, round(share * 100)))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' %
               (left, top, pw, ph))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">seconds</text>' %
               (left + pw / 2, top + ph + 34))
    ly = top + ph + 56
    for i, r in enumerate(runs):
        c = COLOURS[i % len(COLOURS)]
        for col, dash, what in ((1, "", "new member's record"),
                                (2, ' stroke-dasharray="6,4"', "revocation list")):
            pts = " ".join("%.1f,%.1f" % (x(p[0]), y(p[col])) for p in r["curve"] if p[0] <= xmax)
            out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' %
                       (pts, c, dash))
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' %
                       (left, ly - 4, left + 30, ly - 4, c, dash))
            out.append('<text x="%d" y="%d">%s: %s</text>' % (left + 38, ly, label(r), what))
            ly += 18
    out.append('<text x="%d" y="%d" fill="#555">goals: 99 %% within %g s (record), '
               '%g s (revocation)</text>' % (left, ly + 4, GOALS["join"], GOALS["rev"]))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def ok(v, goal):
    return "yes" if 0 <= v <= goal else "**no**"


def md(runs, path):
    L = []
    L.append("# Gossip at scale (simulation)")
    L.append("")
    L.append("How fast the gossip engine (`src/gossip`, design in [gossip.md](../gossip.md)) "
             "spreads a new member's record and a revocation, and what it costs a node in "
             "steady state, for 1 000 and 10 000 nodes. Written by "
             "`bench/gossip-sim/report.py` from the runs of `yip-gossip-sim` "
             "(`bench/gossip-sim/sim.c`) listed below; the command of each run is in its "
             "row. The issue's goals: 99 % of nodes hold a new member's record within 10 s "
             "at 1 000 nodes, a revocation within 30 s, and at most 1 KB/s of control "
             "traffic per node in steady state. Records are re-signed every 6 h, as yipd "
             "does (a 12-hour lifetime, `YIP_RECORD_RESIGN_S`), except in the `-1h` runs, "
             "which show the cost of re-signing every hour.")
    L.append("")
    L.append("![convergence](gossip-convergence.svg)")
    L.append("")
    L.append("## Results")
    L.append("")
    L.append("| nodes | degree | loss | records re-signed every | new record: 99 % / 100 % | revocation: 99 % / "
             "100 % (list bytes) | steady B/s per node: mean / median / p99 / max (roots) | goals met "
             "(record, revocation, mean B/s) |")
    L.append("|---:|---:|---:|---:|---|---|---|---|")
    for r in runs:
        goals = [ok(r["join_p99_s"], GOALS["join"]), ok(r["rev_p99_s"], GOALS["rev"]),
                 "yes" if r["steady_mean_Bps"] <= GOALS["steady"] else "**no**"]
        L.append("| %d | %d | %g %% | %s | %.2f s / %.2f s | %.2f s / %.2f s (%d) | %.0f / %.0f / %.0f / %.0f "
                 "(%.0f) | %s |" %
                 (r["nodes"], r.get("degree", 6), r["loss"] * 100, hours(r["refresh_s"]),
                  r["join_p99_s"], r["join_p100_s"],
                  r["rev_p99_s"], r["rev_p100_s"], r["rev_bytes"], r["steady_mean_Bps"], r["steady_p50_Bps"],
                  r["steady_p99_Bps"], r["steady_max_Bps"], r["steady_root_Bps"],
                  ", ".join(goals)))
    L.append("")
    learned = [r for r in runs if r.get("joiner_learned_s", -1) >= 0]
    if learned:
        L.append("The new member itself, starting from nothing but the roots, held 99 % of "
                 "the members' records after " + ", ".join(
                     "%.1f s (%s)" % (r["joiner_learned_s"], variant(r)) for r in learned) + ".")
        L.append("")
    L.append("Steady-state bytes per node per second, by message (mean over nodes):")
    L.append("")
    L.append("| nodes | degree | loss | re-signed every | SUMMARY | TREE | DIGEST | ANNOUNCE | PULL "
             "| ITEM | handshakes |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        b = r["by_type_Bps"]
        L.append("| %d | %d | %g %% | %s | %s |" % (
            r["nodes"], r.get("degree", 6), r["loss"] * 100, hours(r["refresh_s"]), " | ".join(
            "%.0f" % b[k] for k in ("SUMMARY", "TREE", "DIGEST", "ANNOUNCE", "PULL", "ITEM",
                                    "handshakes"))))
    L.append("")
    L.append("| nodes | degree | loss | re-signed every | steady window (records re-signed in it) "
             "| command | wall time | process memory | engine memory per node | messages lost |")
    L.append("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for r in runs:
        changes = r.get("steady_changes")
        L.append("| %d | %d | %g %% | %s | %.0f s (%s) | `%s` | %.0f s | %.0f MB | %.0f KB | %d |" %
                 (r["nodes"], r.get("degree", 6), r["loss"] * 100, hours(r["refresh_s"]),
                  r.get("steady_s", 120), "not counted" if changes is None else "%d" % changes,
                  r.get("command", ""), r["wall_s"], r["rss_mb"], r["memory_per_node_kb"], r["lost"]))
    L.append("")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.md")) as f:
        L.append(f.read().rstrip())
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    runs = load(d)
    if not runs:
        sys.exit("report.py: no gossip-*.json in " + d)
    # The plot shows the runs with the engine's default degree and a revocation list of the
    # usual size; the tables all.
    svg([r for r in runs if r.get("degree", 6) == 6 and r["rev_entries"] == 100],
        os.path.join(d, "gossip-convergence.svg"))
    md(runs, os.path.join(d, "gossip.md"))


if __name__ == "__main__":
    main()
