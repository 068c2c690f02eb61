"""One scheduler three ways on stable (loss-free, trace-free) profiles: the simulator, the real
proxy on the emulator (warm shared subflows, and `--fresh-subflows`), and for minrtt Linux
MPTCP (its default scheduler is MinRTT-like; fresh connection per download). Median download
time per cell and each driver's ratio to the simulator. Root. Prints one JSON line per cell,
then a markdown table.

    .venv/bin/python crates/net/bench/three_way.py [REPS] [OUT.jsonl]
"""

import json
import statistics
import sys

from mpsched import runner
from mpsched.kernel import kernel_runs
from mpsched.realrun import realrun

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
OUT = sys.argv[2] if len(sys.argv) > 2 else None
PROFILES = {
    "WiFi/LTE 50/70 ms": [],
    "WiFi/LTE 50/270 ms (DEMS §3.2)": ["path.lte.rtt=270ms"],
}
SIZES = ["256KiB", "1MiB", "4MiB"]
SCHEDULERS = ["minrtt", "dems-f"]

rows = []
for profile, overrides in PROFILES.items():
    for size in SIZES:
        sc = runner.resolve_scenario(None, [*overrides, f"workload.size={size}"])
        mptcp = None
        for sched in SCHEDULERS:
            sim = runner.run(sc, sched)["download_time_s"]
            cell = {"profile": profile, "size": size, "scheduler": sched, "sim_s": sim}
            for label, fresh in (("proxy_warm_s", False), ("proxy_fresh_s", True)):
                runs = realrun(sc, sched, reps=REPS, fresh_subflows=fresh, progress=False)
                cell[label] = statistics.median(r["download_time_s"] or float("inf") for r in runs)
            if sched == "minrtt":
                runs = kernel_runs(sc, "mptcp", reps=REPS, progress=False)
                mptcp = statistics.median(r["download_time_s"] or float("inf") for r in runs)
                cell["linux_mptcp_s"] = mptcp
            rows.append(cell)
            print(json.dumps(cell), flush=True)
            if OUT:
                with open(OUT, "a") as f:
                    f.write(json.dumps(cell) + "\n")


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


print()
print("| profile | size | scheduler | sim | proxy warm | proxy fresh | Linux MPTCP |")
print("|---|---|---|---|---|---|---|")
for c in rows:
    sim = c["sim_s"]
    k = c.get("linux_mptcp_s")
    kernel = f"{k:.3f} ({ratio(k, sim)})" if k else "-"
    print(
        f"| {c['profile']} | {c['size']} | {c['scheduler']} | {sim:.3f} "
        f"| {c['proxy_warm_s']:.3f} ({ratio(c['proxy_warm_s'], sim)}) "
        f"| {c['proxy_fresh_s']:.3f} ({ratio(c['proxy_fresh_s'], sim)}) | {kernel} |"
    )
