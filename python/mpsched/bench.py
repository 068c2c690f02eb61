"""Simulator speed on the two DESIGN.md benchmark scenarios (recorded in BENCHMARKS.md).

(a) 100 Mbit/s, RTT 40 ms, 333-packet buffer (1 BDP), 60 s of Reno bulk transfer;
(b) 1 Gbit/s, RTT 20 ms (1-BDP buffer by default), 10 s of Reno bulk transfer.

The figure of merit is data packets simulated per wall-clock second.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from . import _engine
from .errors import ScenarioError
from .scenario import resolve, to_json

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SCENARIOS = {
    "a": (
        "100 Mbit/s, RTT 40 ms, 333-pkt buffer, 60 s Reno bulk",
        """
        [[path]]
        name = "link"
        rate = "100Mbit"
        rtt = "40ms"
        queue = "333pkt"
        [workload]
        kind = "bulk"
        duration = "60s"
        [transport]
        cc = "reno"
        """,
    ),
    "b": (
        "1 Gbit/s, RTT 20 ms, 10 s Reno bulk",
        """
        [[path]]
        name = "link"
        rate = "1Gbit"
        rtt = "20ms"
        [workload]
        kind = "bulk"
        duration = "10s"
        [transport]
        cc = "reno"
        """,
    ),
}


def run(scheduler: str = "minrtt", seed: int = 1, echo: bool = True) -> list[dict[str, Any]]:
    """Run both benchmark scenarios; print (if `echo`) and return one row per scenario."""
    core = _engine.core()
    rows = []
    for key, (label, text) in SCENARIOS.items():
        scenario = resolve(tomllib.loads(text), source=f"bench ({key})")
        result = json.loads(_engine.call(core.run, to_json(scenario), scheduler, seed))
        wall = float(result["wall_time_s"])
        packets = result.get("data_packets")
        row = {
            "scenario": key,
            "label": label,
            "data_packets": packets,
            "events": result.get("events"),
            "sim_time_s": result.get("sim_time_s"),
            "wall_time_s": wall,
            "data_packets_per_s": packets / wall if packets is not None and wall > 0 else None,
        }
        rows.append(row)
        if echo:
            rate = row["data_packets_per_s"]
            shown = f"{rate:,.0f} data packets/s" if rate is not None else "n/a"
            print(f"({key}) {label}: {shown} (wall {wall:.3f} s)", flush=True)
    return rows


# ---- the scheduler matrix (issue "Speed at scale") -------------------------------------------

MATRIX_PATHS = (1, 2, 4, 8)
MATRIX_AGGREGATE_BPS = 800e6


def matrix_scenario(paths: int, workload: str, duration_s: float, chunks: int) -> str:
    """The issue's matrix point as scenario TOML: `paths` paths sharing 800 Mbit/s (800/N each),
    RTT 20 + 10·i ms, 20 ms queues, CUBIC; bulk for `duration_s`, or `chunks` 1 MiB chunks."""
    rate = MATRIX_AGGREGATE_BPS / paths
    text = "".join(
        f'[[path]]\nname = "p{i}"\nrate = "{rate / 1e6:g}Mbit"\nrtt = "{20 + 10 * i}ms"\n'
        'queue = "20ms"\n'
        for i in range(paths)
    )
    if workload == "bulk":
        text += f'[workload]\nkind = "bulk"\nduration = "{duration_s:g}s"\n'
    else:
        text += f'[workload]\nkind = "chunks"\nsize = "1MiB"\ncount = {chunks}\nthink = "0s"\n'
    return text + '[transport]\ncc = "cubic"\n'


def run_matrix(
    schedulers: list[str] | None = None,
    paths: tuple[int, ...] = MATRIX_PATHS,
    duration_s: float = 10.0,
    chunks: int = 8,
    seed: int = 1,
    progress: Any = None,
) -> list[dict[str, Any]]:
    """Every scheduler x path count x {bulk, chunk train}: one run each, timed in CPU seconds of
    this process (the engine runs in it), which the load of a shared machine disturbs far less
    than wall time. `progress(done, total, label)` is called before each run."""
    core = _engine.core()
    names = schedulers or [name for name, _ in _engine.schedulers()]
    points = [(s, n, w) for s in names for n in paths for w in ("bulk", "chunks")]
    rows = []
    for i, (sched, n, workload) in enumerate(points):
        if progress is not None:
            progress(i, len(points), f"{sched} {n}p {workload}")
        text = matrix_scenario(n, workload, duration_s, chunks)
        scenario = resolve(tomllib.loads(text), source=f"bench matrix ({n} paths, {workload})")
        cpu0 = time.process_time()
        try:
            result = json.loads(_engine.call(core.run, to_json(scenario), sched, seed))
        except ScenarioError as exc:
            # A scheduler that needs arguments (`backup:NAME`) cannot run bare: say so in its
            # row and measure the others.
            result = {"wall_time_s": 0.0, "failure": str(exc)}
        cpu = time.process_time() - cpu0
        packets = int(result.get("data_packets") or 0)
        events = int(result.get("events") or 0)
        rows.append(
            {
                "scheduler": sched,
                "paths": n,
                "workload": workload,
                "data_packets": packets,
                "events": events,
                "events_per_packet": events / packets if packets else None,
                "cpu_s": cpu,
                "wall_s": float(result["wall_time_s"]),
                "data_packets_per_cpu_s": packets / cpu if cpu > 0 and packets else None,
                "goodput_bps": result.get("goodput_bps"),
                "failure": result.get("failure"),
            }
        )
    if progress is not None:
        progress(len(points), len(points), "done")
    return rows


def plot_matrix(rows: list[dict[str, Any]], out: Path) -> None:
    """Data packets per CPU second against the number of paths, one line per scheduler, one
    panel per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, workload in zip(axes, ("bulk", "chunks")):
        for i, sched in enumerate(sorted({r["scheduler"] for r in rows})):
            pts = sorted(
                (r["paths"], r["data_packets_per_cpu_s"])
                for r in rows
                if r["scheduler"] == sched
                and r["workload"] == workload
                and r["data_packets_per_cpu_s"]
            )
            if pts:
                # 20 distinct colours, then a second line style: every scheduler tells apart.
                ax.plot(
                    *zip(*pts),
                    marker="os^D"[i // 5 % 4],
                    linestyle="-" if i < 10 else "--",
                    color=plt.cm.tab10(i % 10),
                    label=sched,
                )
        ax.set_xscale("log", base=2)
        # Log scale: the slowest schedulers are tens of times slower than the fastest.
        ax.set_yscale("log")
        ax.set_xticks(list(MATRIX_PATHS), [str(n) for n in MATRIX_PATHS])
        ax.set_xlabel("paths (800 Mbit/s shared, RTT 20 + 10·i ms, CUBIC)")
        ax.set_title("bulk" if workload == "bulk" else "train of 1 MiB chunks")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("simulated data packets per CPU second")
    axes[1].legend(fontsize=7, ncol=2, loc="lower left")
    fig.suptitle("Simulator speed by scheduler and path count (mpsched bench --matrix)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
