"""Per-packet traces of one run (`run --trace FILE.parquet`), and what can be derived from them.

Files: the events go to FILE.parquet, one row per event:

    time_s (float64)  side ("sender"/"receiver")  path (uint8)  path_name (string)
    kind ("send"/"reinject"/"retransmit"/"arrive"/"ack"/"deliver")  dsn (uint64)  len (uint32)

(for "ack", dsn is the data-ACK, len 0; for "deliver", the DSN range handed to the app). The
periodic per-path samples (congestion window, sRTT, one-way-delay estimate; every 10 ms unless
asked otherwise, none from an engine that does not record them) go to a second file beside it,
FILE.samples.parquet (suffix ".parquet" replaced by ".samples.parquet"), one row per sample:

    time_s  path  path_name  cwnd_bytes  srtt_s  owd_s

A second file rather than a second table because Parquet holds one table per file, and both
stay readable by any Parquet reader (pandas, polars, DuckDB). The result object of the run (with
its resolved scenario) is stored in both files' schema metadata under "mpsched.result", so a
trace file is self-describing: `mpsched report FILE.parquet` needs nothing else.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _engine
from .errors import ScenarioError
from .scenario import to_json

__all__ = [
    "Trace",
    "in_flight",
    "one_way_delays",
    "ooo_delays",
    "read",
    "record",
    "samples_path",
    "write",
]

_EVENT_COLUMNS = ("time_s", "side", "path", "kind", "dsn", "len")
_SAMPLE_COLUMNS = {
    "sample_time_s": "time_s",
    "sample_path": "path",
    "sample_cwnd": "cwnd_bytes",
    "sample_srtt_s": "srtt_s",
    "sample_owd_s": "owd_s",
}
META_KEY = b"mpsched.result"
SENDS = ("send", "reinject", "retransmit")


@dataclass
class Trace:
    """One run's result and its per-packet events (and per-path samples, maybe empty)."""

    result: dict[str, Any]
    events: Any  # pandas.DataFrame
    samples: Any  # pandas.DataFrame

    @property
    def path_names(self) -> list[str]:
        return [p["name"] for p in self.result.get("scenario", {}).get("paths", [])]

    @property
    def label(self) -> str:
        return f"{self.result.get('scheduler', '?')}, seed {self.result.get('seed', '?')}"


def samples_path(path: str | os.PathLike[str]) -> Path:
    """Where the samples of the trace written to `path` go."""
    p = Path(path)
    name = p.name[: -len(".parquet")] if p.name.endswith(".parquet") else p.name
    return p.with_name(name + ".samples.parquet")


def _names(result: dict[str, Any]) -> list[str]:
    return [p["name"] for p in result.get("scenario", {}).get("paths", [])]


# How often a traced run samples every path's cwnd, sRTT and OWD estimate, unless the scenario
# says (`sim.sample_interval_s`): fine enough to see slow start and a handover, coarse enough to
# stay small next to the events.
DEFAULT_SAMPLE_INTERVAL_S = 0.01


def record(
    scenario: dict[str, Any],
    scheduler: str,
    seed: int,
    sample_interval_s: float | None = DEFAULT_SAMPLE_INTERVAL_S,
) -> Trace:
    """Run once with per-packet tracing (`_core.run_traced`), sampling every path's cwnd, sRTT
    and OWD estimate every `sample_interval_s` unless the scenario sets its own interval (None
    or 0: no samples). Sampling does not change the run's results."""
    import numpy as np
    import pandas as pd

    core = _engine.core()
    _engine.check_schedulers([scheduler])
    sim = dict(scenario.get("sim", {}))
    if sample_interval_s and not sim.get("sample_interval_s"):
        sim["sample_interval_s"] = float(sample_interval_s)
    text = to_json({**scenario, "sim": sim})
    try:
        _engine.call(core.validate, text, scheduler)
    except ScenarioError as exc:
        if "sample_interval_s" not in str(exc):
            raise
        # An engine without per-path samples: events only.
        text = to_json(scenario)
        _engine.call(core.validate, text, scheduler)
    result_json, columns = _engine.call(core.run_traced, text, scheduler, seed)
    result = json.loads(result_json)
    names = _names(result)

    def name_of(paths: Any) -> Any:
        lookup = np.array(names + ["?"], dtype=object)
        index = np.asarray(paths, dtype=np.int64)
        return lookup[np.where(index < len(names), index, len(names))]

    events = pd.DataFrame(
        {
            "time_s": np.asarray(columns.get("time_s", []), dtype=np.float64),
            "side": pd.Categorical(columns.get("side", []), categories=["sender", "receiver"]),
            "path": np.asarray(columns.get("path", []), dtype=np.uint8),
            "kind": pd.Categorical(
                columns.get("kind", []),
                categories=["send", "reinject", "retransmit", "arrive", "ack", "deliver"],
            ),
            "dsn": np.asarray(columns.get("dsn", []), dtype=np.uint64),
            "len": np.asarray(columns.get("len", []), dtype=np.uint32),
        }
    )
    events.insert(3, "path_name", pd.Series(name_of(events["path"]), dtype="string"))
    samples = pd.DataFrame(
        {
            new: np.asarray(columns.get(old, []), dtype=np.uint8 if new == "path" else None)
            for old, new in _SAMPLE_COLUMNS.items()
        }
    )
    if len(samples):
        samples["cwnd_bytes"] = samples["cwnd_bytes"].astype(np.uint64)
    samples.insert(2, "path_name", pd.Series(name_of(samples["path"]), dtype="string"))
    return Trace(result=result, events=events, samples=samples)


def write(trace: Trace, path: str | os.PathLike[str]) -> list[Path]:
    """Write the events to `path` (Parquet) and, if any, the samples beside it; returns the
    files written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = {META_KEY: json.dumps(trace.result).encode()}
    out = Path(path)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    written = []
    table = pa.Table.from_pandas(trace.events, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
    pq.write_table(table, out, compression="zstd")
    written.append(out)
    side = samples_path(out)
    if len(trace.samples):
        table = pa.Table.from_pandas(trace.samples, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
        pq.write_table(table, side, compression="zstd")
        written.append(side)
    elif side.exists():
        side.unlink()  # a stale file from an earlier run would be read as this run's
    return written


def read(path: str | os.PathLike[str]) -> Trace:
    """Read a trace written by `write` (the samples file is optional)."""
    import pandas as pd
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise ScenarioError(f"{os.fspath(path)}: cannot read trace: {exc}") from None
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        raise ScenarioError(f"{os.fspath(path)}: not an mpsched trace (no run metadata)")
    result = json.loads(meta[META_KEY])
    events = table.to_pandas()
    side = samples_path(path)
    if side.exists():
        samples = pq.read_table(side).to_pandas()
    else:
        samples = pd.DataFrame(columns=["time_s", "path", "path_name", "cwnd_bytes", "srtt_s"])
    return Trace(result=result, events=events, samples=samples)


# ---- derived quantities ------------------------------------------------------------------------


def ooo_delays(events: Any) -> Any:
    """Per DSN range first received: arrival to in-order delivery to the app, seconds
    (Shi et al., USENIX ATC 2018, §5.1.1). Returns a DataFrame: dsn, path, arrive_s,
    deliver_s, delay_s. `events` is a Trace (from `mpsched.run_traced` or `traces.read`) or
    its `.events` frame."""
    if isinstance(events, Trace):
        events = events.events
    import numpy as np
    import pandas as pd

    arrive = events[(events["side"] == "receiver") & (events["kind"] == "arrive")]
    deliver = events[(events["side"] == "receiver") & (events["kind"] == "deliver")]
    if arrive.empty or deliver.empty:
        return pd.DataFrame(columns=["dsn", "path", "arrive_s", "deliver_s", "delay_s"])
    first = arrive.sort_values("time_s", kind="stable").drop_duplicates("dsn", keep="first")
    deliver = deliver.sort_values("time_s", kind="stable")
    delivered_end = np.maximum.accumulate(
        deliver["dsn"].to_numpy(np.float64) + deliver["len"].to_numpy(np.float64)
    )
    need = first["dsn"].to_numpy(np.float64) + first["len"].to_numpy(np.float64)
    idx = np.searchsorted(delivered_end, need, side="left")
    ok = idx < len(deliver)
    t_deliver = np.full(len(first), np.nan)
    t_deliver[ok] = deliver["time_s"].to_numpy()[idx[ok]]
    out = pd.DataFrame(
        {
            "dsn": first["dsn"].to_numpy(),
            "path": first["path"].to_numpy(),
            "arrive_s": first["time_s"].to_numpy(),
            "deliver_s": t_deliver,
        }
    )
    out["delay_s"] = np.maximum(out["deliver_s"] - out["arrive_s"], 0.0)
    return out.dropna(subset=["delay_s"]).reset_index(drop=True)


def _matched(events: Any) -> Any:
    """Every transmission with the arrival it caused (NaN if lost): path, dsn, len, kind,
    send_s, arrive_s."""
    import pandas as pd

    tx = events[(events["side"] == "sender") & events["kind"].isin(SENDS)]
    rx = events[(events["side"] == "receiver") & (events["kind"] == "arrive")]
    if tx.empty:
        return pd.DataFrame(columns=["path", "dsn", "len", "kind", "send_s", "arrive_s"])
    tx = tx[["time_s", "path", "dsn", "len", "kind"]].rename(columns={"time_s": "send_s"})
    rx = rx[["time_s", "path", "dsn"]].rename(columns={"time_s": "arrive_s"})
    tx = tx.assign(path=tx["path"].astype("int64"), dsn=tx["dsn"].astype("int64"))
    rx = rx.assign(path=rx["path"].astype("int64"), dsn=rx["dsn"].astype("int64"))
    # Each arrival belongs to the latest transmission of that (path, DSN) before it.
    rx = rx.sort_values("arrive_s", kind="stable")
    tx = tx.sort_values("send_s", kind="stable")
    matched = pd.merge_asof(
        rx,
        tx.assign(t=tx["send_s"]),
        left_on="arrive_s",
        right_on="t",
        by=["path", "dsn"],
        direction="backward",
    ).dropna(subset=["send_s"])
    matched = matched.drop_duplicates(subset=["path", "dsn", "send_s"], keep="first")
    out = tx.merge(
        matched[["path", "dsn", "send_s", "arrive_s"]], on=["path", "dsn", "send_s"], how="left"
    )
    return out.sort_values("send_s", kind="stable").reset_index(drop=True)


def one_way_delays(events: Any) -> Any:
    """Per delivered packet: path, send_s, owd_s (send to arrival, queueing included)."""
    m = _matched(events).dropna(subset=["arrive_s"])
    m = m.assign(owd_s=m["arrive_s"] - m["send_s"])
    return m[["path", "send_s", "owd_s"]].reset_index(drop=True)


def in_flight(events: Any) -> Any:
    """Per path, bytes sent and not yet arrived over time (packets later lost are left out):
    the forward half of what the congestion window lets out. DataFrame: path, time_s, bytes."""
    import numpy as np
    import pandas as pd

    m = _matched(events).dropna(subset=["arrive_s"])
    frames = []
    for path, g in m.groupby("path"):
        t = np.concatenate([g["send_s"].to_numpy(), g["arrive_s"].to_numpy()])
        d = np.concatenate([g["len"].to_numpy(np.int64), -g["len"].to_numpy(np.int64)])
        order = np.lexsort((-d, t))  # at equal times, count the send before the arrival
        frames.append(pd.DataFrame({"path": path, "time_s": t[order], "bytes": d[order].cumsum()}))
    if not frames:
        return pd.DataFrame(columns=["path", "time_s", "bytes"])
    return pd.concat(frames, ignore_index=True)
