#!/usr/bin/env python3
"""Renders an hvdrun --timeline trace into a PNG: one row per track (the launcher's
generations and events, each host's connection, each worker), spans as bars coloured by how
they ended, instant events as marks with their names. Collectives (--timeline-collectives)
are thin bars over their worker's: light where the worker waited for the others, dark for the
transfer.

usage: scripts/timeline_png.py TRACE.json OUT.png
Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        text = f.read().rstrip()
    if not text.endswith("]"):  # a job whose hvdrun was killed leaves the array open
        text = text.rstrip(",") + "]"
    return json.loads(text)


def colour(event):
    end = event.get("args", {}).get("end", "")
    cat = event.get("cat")
    if cat == "generation":
        return "#4c72b0"
    if cat == "host":
        return "#8172b2"
    if cat == "stacks":
        return "#ccb974"
    if "exited with code 0" in end:
        return "#55a868"
    if end:
        return "#c44e52"
    return "#999999"


def draw_collective(ax, e, y):
    start, dur = e["ts"] / 1e6, e["dur"] / 1e6
    wait = e.get("args", {}).get("wait_us", "")
    wait = min(int(wait) / 1e6, dur) if wait.isdigit() else 0.0
    if wait > 0:
        ax.barh(y, wait, left=start, height=0.3, color="#dddddd", edgecolor="none")
    ax.barh(y, max(dur - wait, 0.0005), left=start + wait, height=0.3, color="#dd8452",
            edgecolor="none")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    events = load(sys.argv[1])
    names = {}
    threads = {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    tracks = sorted({(e["pid"], e["tid"]) for e in events if e.get("ph") in ("X", "i")})
    row = {track: i for i, track in enumerate(tracks)}
    height = max(2.5, 0.45 * len(tracks) + 1.2)
    fig, ax = plt.subplots(figsize=(12, height))
    collectives = [e for e in events if e.get("cat") == "collective"]
    events = [e for e in events if e.get("cat") != "collective"] + collectives
    for e in events:
        if e.get("cat") == "collective" and e.get("ph") == "X":
            draw_collective(ax, e, row[(e["pid"], e["tid"])])
        elif e.get("ph") == "X":
            start, dur = e["ts"] / 1e6, max(e["dur"] / 1e6, 0.002)
            y = row[(e["pid"], e["tid"])]
            ax.barh(y, dur, left=start, height=0.6, color=colour(e), edgecolor="black",
                    linewidth=0.4)
            if dur > 0.05:
                ax.text(start + dur / 2, y, e["name"], ha="center", va="center", fontsize=7)
        elif e.get("ph") == "i":
            at, y = e["ts"] / 1e6, row[(e["pid"], e["tid"])]
            ax.plot([at], [y], marker="v", color="black", markersize=6)
            ax.annotate(e["name"], (at, y), xytext=(0, 9), textcoords="offset points",
                        fontsize=7, rotation=20, ha="left")
    labels = []
    for pid, tid in tracks:
        label = names.get(pid, f"pid {pid}")
        if (pid, tid) in threads:
            label += ": " + threads[(pid, tid)]
        labels.append(label)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the job started")
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
