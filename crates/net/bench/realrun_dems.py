"""The DEMS §3.2 profile of Guo et al., MobiCom 2017 (WiFi 7040 kbit/s 50 ms RTT 50 ms buffer,
LTE 9185 kbit/s 270 ms RTT 500 ms buffer) on the emulator: dems-f and minrtt on the real proxy
(warm shared subflows and fresh subflows per download, each also with the client's
`--early-data`), minrtt with 8 MB socket buffers and no TCP_NOTSENT_LOWAT (§7.1's setting),
and Linux MPTCP (fresh connection per download), for 256 KiB, 1 MiB and 4 MiB. Root. Prints
one JSON line per cell, then a markdown table.

    .venv/bin/python crates/net/bench/realrun_dems.py [REPS] [OUT.jsonl]
"""

import json
import statistics
import sys

from mpsched import runner
from mpsched.kernel import kernel_runs
from mpsched.realrun import realrun

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
OUT = sys.argv[2] if len(sys.argv) > 2 else None
SIZES = {"256 KiB": "256KiB", "1 MiB": "1MiB", "4 MiB": "4MiB"}
BIG = ("--sndbuf", "8388608", "--notsent-lowat", "off")
# label, scheduler (None: the kernel), fresh subflows, arguments of both proxies, early data
CELLS = [
    ("dems-f warm", "dems-f", False, (), False),
    ("dems-f warm early data", "dems-f", False, (), True),
    ("dems-f fresh", "dems-f", True, (), False),
    ("dems-f fresh early data", "dems-f", True, (), True),
    ("minrtt warm", "minrtt", False, (), False),
    ("minrtt fresh", "minrtt", True, (), False),
    ("minrtt fresh early data", "minrtt", True, (), True),
    ("minrtt warm 8 MB buffers", "minrtt", False, BIG, False),
    ("linux-mptcp", None, True, (), False),
]

rows = {}
for size_label, size in SIZES.items():
    sc = runner.resolve_scenario(None, ["path.lte.rtt=270ms", f"workload.size={size}"])
    for label, sched, fresh, extra, early in CELLS:
        if sched is None:
            runs = kernel_runs(sc, "mptcp", reps=REPS, progress=False)
        else:
            runs = realrun(
                sc, sched, reps=REPS, fresh_subflows=fresh, proxy_args=extra,
                early_data=early, progress=False,
            )  # fmt: skip
        # A failed download counts as +inf, as `compare` counts failed runs.
        times = [r["download_time_s"] or float("inf") for r in runs]
        fails = [r["failure"] for r in runs if r.get("failed")]
        rows[(label, size_label)] = times
        line = {
            "cell": label,
            "size": size_label,
            "times_s": times,
            "median_s": statistics.median(times),
            "failures": fails,
        }
        print(json.dumps(line), flush=True)
        if OUT:
            with open(OUT, "a") as f:
                f.write(json.dumps(line) + "\n")

print()
print("| scheduler / driver | " + " | ".join(SIZES) + " |")
print("|---|" + "---|" * len(SIZES))
for label, *_ in CELLS:
    cells = []
    for s in SIZES:
        t = sorted(rows[(label, s)])
        n_fail = sum(x == float("inf") for x in t)
        fail = f", {n_fail} failed" if n_fail else ""
        cells.append(f"{statistics.median(t):.3f} ({t[0]:.3f}-{t[-1]:.3f}{fail})")
    print(f"| {label} | " + " | ".join(cells) + " |")
mptcp = {s: statistics.median(rows[("linux-mptcp", s)]) for s in SIZES}
for label, *_ in CELLS[:-2]:
    ratios = ", ".join(f"{s} {statistics.median(rows[(label, s)]) / mptcp[s]:.2f}x" for s in SIZES)
    print(f"\n{label} / linux-mptcp (medians): {ratios}")
