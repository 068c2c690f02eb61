"""Simulator speed on the two DESIGN.md benchmark scenarios (recorded in BENCHMARKS.md).

(a) 100 Mbit/s, RTT 40 ms, 333-packet buffer (1 BDP), 60 s of Reno bulk transfer;
(b) 1 Gbit/s, RTT 20 ms (1-BDP buffer by default), 10 s of Reno bulk transfer.

The figure of merit is data packets simulated per wall-clock second.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from . import _engine
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
