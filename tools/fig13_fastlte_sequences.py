"""Sequence plots and a per-cell diagnosis for the cells of `mpsched reproduce
dems-fig13-fastlte` where DEMS-F (Guo et al., MobiCom 2017) is more than 2% slower than MinRTT.

    .venv/bin/python tools/fig13_fastlte_sequences.py RESULTS.db [--out docs/img]

For every such cell it re-runs DEMS-F and MinRTT once with per-packet tracing (seed 1: the
preset has no random loss, so every seed of a cell is the same run), writes one PNG with the
two sequence diagrams (`mpsched.plots.sequence_diagram`; DEMS-F above, MinRTT below) to
OUT/fig13-fastlte-seq-WIFI-xMULT-RTT-SIZE.png, and prints a Markdown table with what the
run JSON and the trace say: bytes per path, completion gap, drops, reinjected bytes, the LTE
segments shorter than the MSS ("runts") and the window slots they leave unused, and how long
the LTE subflow sent nothing (pauses over 10 ms between its transmissions, up to the end of
the download).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

import mpsched
from mpsched import plots, presets

ROOT = Path(__file__).resolve().parents[1]
# A pause between two transmissions on a subflow longer than this counts as idle.
PAUSE_S = 0.010


def cell_settings(row) -> dict[str, str]:
    wifi_kbit = round(row[presets.WIFI_RATE] / 1e3)
    return {
        "path.wifi.rate": f"{wifi_kbit}kbit",
        "path.lte.rate": f"{round(wifi_kbit * row[presets.LTE_MULTIPLE])}kbit",
        "path.lte.rtt": f"{round(row[presets.LTE_RTT] * 1e3)}ms",
        "workload.size": plots.format_axis_value(presets.SIZE_KEY, row[presets.SIZE_KEY]),
    }


def diagnose(trace) -> dict:
    r = trace.result
    ev = trace.events
    sender = ev[ev["side"] == "sender"]
    sent = sender[sender["kind"] == "send"]
    lte = trace.path_names.index("lte")
    mss = int(sent["len"].max())
    runts = sent[(sent["path"] == lte) & (sent["len"] < mss)]
    out = sender[(sender["path"] == lte) & sender["kind"].isin(["send", "reinject", "retransmit"])]
    times = np.append(np.sort(out["time_s"].to_numpy()), r["download_time_s"])
    gaps = np.diff(times)
    return {
        "time": r["download_time_s"],
        "wifi": r["bytes_by_path"]["wifi"],
        "lte": r["bytes_by_path"]["lte"],
        "gap": r["completion_gap_s"],
        "drops": sum(r["drops_by_path"].values()),
        "reinjected": r["reinjected_bytes"],
        "runts": len(runts),
        "runt_slots": len(runts) * mss - int(runts["len"].sum()),
        "lte_idle": float(gaps[gaps > PAUSE_S].sum()),
    }


def stacked_png(traces: list, titles: list[str], path: Path) -> None:
    from PIL import Image

    images = []
    for trace, title in zip(traces, titles):
        fig = plots.sequence_diagram(trace, title=title)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        plots.close_all()
        images.append(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    width = max(i.width for i in images)
    out = Image.new("RGB", (width, sum(i.height for i in images)), "white")
    y = 0
    for image in images:
        out.paste(image, (0, y))
        y += image.height
    path.parent.mkdir(parents=True, exist_ok=True)
    out.save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path, help="the preset's results (DIR/dems-fig13-fastlte.db)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a scenario change for the traced runs, e.g. transport.cc=cubic-rfc9438",
    )
    parser.add_argument(
        "--cells-from",
        type=Path,
        help="pick the cells above the target from this results file instead (to trace a "
        "variant on the cells the preset's own run missed)",
    )
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.set)
    cells = presets.fastlte_cells(mpsched.load(args.db))
    pick = presets.fastlte_cells(mpsched.load(args.cells_from)) if args.cells_from else cells
    over = pick[pick["dems-f/minrtt"] > presets.FASTLTE_TARGET][presets._CELL]
    missed = cells.merge(over, on=presets._CELL)
    print("Pairs are DEMS-F / MinRTT.\n")
    print(
        "| cell (WiFi, LTE x, LTE RTT, size) | dems-f/minrtt | time s | LTE KB | WiFi KB "
        "| gap ms | drops | DEMS-F reinj. KB | LTE runts (slots KB) | LTE idle s | plot |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for _, row in missed.iterrows():
        sets = {**cell_settings(row), **extra}
        traces = {s: mpsched.run_traced(None, s, 1, sets) for s in ("dems-f", "minrtt")}
        d, m = (diagnose(traces[s]) for s in ("dems-f", "minrtt"))
        label = (
            f"{sets['path.wifi.rate']}, {row[presets.LTE_MULTIPLE]:g}x, "
            f"{sets['path.lte.rtt']}, {sets['workload.size']}"
        )
        stem = (
            f"fig13-fastlte-seq-{sets['path.wifi.rate']}-x{row[presets.LTE_MULTIPLE]:g}-"
            f"{sets['path.lte.rtt']}-{sets['workload.size']}"
        )
        png = args.out / f"{stem}.png"
        stacked_png(
            [traces["dems-f"], traces["minrtt"]],
            [
                f"DEMS-F, WiFi {label}: {d['time']:.3f} s",
                f"MinRTT, same cell: {m['time']:.3f} s",
            ],
            png,
        )
        link = png.relative_to(ROOT / "docs") if png.is_relative_to(ROOT / "docs") else png
        print(
            f"| {label} | {row['dems-f/minrtt']:.4f} | {d['time']:.3f} / {m['time']:.3f} "
            f"| {d['lte'] / 1e3:.0f} / {m['lte'] / 1e3:.0f} "
            f"| {d['wifi'] / 1e3:.0f} / {m['wifi'] / 1e3:.0f} "
            f"| {d['gap'] * 1e3:.0f} / {m['gap'] * 1e3:.0f} | {d['drops']} / {m['drops']} "
            f"| {d['reinjected'] / 1e3:.1f} "
            f"| {d['runts']} ({d['runt_slots'] / 1e3:.0f}) / {m['runts']} "
            f"({m['runt_slots'] / 1e3:.0f}) | {d['lte_idle']:.2f} / {m['lte_idle']:.2f} "
            f"| [png]({link}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
