"""Scenario files: TOML as users write it -> the resolved scenario the Rust core runs.

The user's side of the contract is DESIGN.md ("Scenario files (TOML) and units"); the core's
side is `crates/sim/src/scenario.rs`, whose serde field names the dict built here matches
exactly: every value in SI units (seconds, bytes, bits per second), every default filled in, so
that `run --json` echoes a scenario that reproduces the run with no hidden defaults.

Validation is strict and hand-written rather than generated (e.g. by pydantic) because every
error must be ONE line naming the file, the key and, where it came from the command line, the
`--set`; and units, path names and `--set` addressing need messages no generic validator
produces. Trace *contents* are checked by the core (`_core.validate`), which owns the trace
reader; here we only check that the file can be opened, so the message can name the scenario
key that points at it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Union

from . import units
from .errors import ScenarioError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_SCENARIO_TOML",
    "MAX_PATHS",
    "default_scenario",
    "load_scenario",
    "parse_overrides",
    "read_toml",
    "resolve",
    "to_json",
]

PathLike = Union[str, "os.PathLike[str]"]

# The DEMS WiFi/LTE profile (Guo et al., MobiCom 2017, §3.2), its uplink rates included
# (footnote 2): they carry the handshakes, the request and the ACKs. examples/wifi-lte.toml is
# the same scenario; tests check that the two resolve identically.
DEFAULT_SCENARIO_TOML = """\
[[path]]
name = "wifi"
rate = "7040kbit"
rtt = "50ms"
queue = "50ms"
reverse_rate = "2020kbit"

[[path]]
name = "lte"
rate = "9185kbit"
rtt = "70ms"
queue = "500ms"
reverse_rate = "2286kbit"

[workload]
kind = "chunk"
size = "1MiB"

[transport]
cc = "cubic"
"""
DEFAULT_SOURCE = "default scenario"

# The core's fixed-size per-path arrays and the schedulers' search spaces (oracle splits) are
# sized for this; DEMS past two paths is already our own generalization.
MAX_PATHS = 8

_TOP_KEYS = ("path", "workload", "transport", "sim")
_PATH_KEYS = (
    "name",
    "rate",
    "trace",
    "rtt",
    "owd",
    "queue",
    "loss",
    "reverse_rate",
    "reverse_queue",
    "reverse_loss",
    "outages",
    "backup",
    "handover",
    "cross",
)
_WORKLOAD_KEYS = {
    "chunk": ("kind", "size"),
    "chunks": ("kind", "size", "count", "think", "hint"),
    "bulk": ("kind", "duration"),
    # Park et al. (R-TSC), §II: a live source at application rate f; cv > 0 makes it VBR.
    "stream": ("kind", "rate", "duration", "packet", "cv", "frame_interval", "playout_delay"),
}
_FUTURE_WORKLOADS = ("web",)  # DESIGN.md roadmap
_TRANSPORT_KEYS = (
    "cc",
    "mss",
    "init_cwnd",
    "send_buffer",
    "send_buffer_lock",
    "recv_buffer",
    "delayed_ack",
    "min_rto",
    "slow_start_after_idle",
    "hystart",
    "pacing",
    "nodelay",
    "receiver",
)
# Receiver policies (crates/core/src/recv): plain ACKing, or R-TSC (Park et al., §V).
_RECEIVERS = ("default", "rtsc")
_SIM_KEYS = ("clock_offset", "max_time")
_ALL_WORKLOAD_KEYS = tuple(dict.fromkeys(k for ks in _WORKLOAD_KEYS.values() for k in ks))
_SECTION_KEYS = {"workload": _ALL_WORKLOAD_KEYS, "transport": _TRANSPORT_KEYS, "sim": _SIM_KEYS}

# Coupled: lia (RFC 6356), olia (Khalili et al., CoNEXT 2012), balia (Peng et al., IEEE/ACM ToN
# 2016), wvegas (Cao et al., ICNP 2012).
_CC_IMPLEMENTED = ("reno", "cubic", "cubic-rfc9438", "lia", "olia", "balia", "wvegas")

# Mirrors the `Default` impls in crates/sim/src/scenario.rs; written out in full in the resolved
# scenario so a result is self-describing.
_TRANSPORT_DEFAULTS = {
    "cc": "cubic",
    # 0: by scheduler, as Linux: 1448 B for single-path TCP, 1420 B for MPTCP (DSS option).
    "mss": 0,
    "init_cwnd": 10,
    # Per-subflow cap (Linux tcp_wmem[2]); buffers autotune up to it.
    "send_buffer_bytes": 4 << 20,
    # None: autotuned as Linux's, 128 KiB (tcp_rmem[1]) up to 6 MiB (tcp_rmem[2]); a size:
    # a fixed buffer, all of it offered as window (an application's SO_RCVBUF).
    "recv_buffer_bytes": None,
    "delayed_ack": True,
    "min_rto_s": 0.2,
    "slow_start_after_idle": True,
    "hystart": "linux",
    "pacing": False,
}
_SIM_DEFAULTS = {"clock_offset_s": 0.0, "max_time_s": 3600.0}
_DEFAULT_WORKLOAD = {"kind": "chunk", "size": "1MiB"}

# Path names are addressed as `--set path.NAME.key`, so a dot (or "=") in a name would be
# unaddressable.
_PATH_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_TOML_POSITION = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")

_MISSING = object()


# --------------------------------------------------------------------------------------------
# Reading files and overrides


def _syntax_error(source: str, exc: Exception) -> ScenarioError:
    text = str(exc)
    m = _TOML_POSITION.match(text)
    if m:
        return ScenarioError(
            f"{source}:{m['line']}: TOML syntax error: {m['msg']} (column {m['col']})"
        )
    return ScenarioError(f"{source}: TOML syntax error: {text}")


def read_toml(path: PathLike) -> dict[str, Any]:
    """Parse a TOML file; any problem (missing, unreadable, not UTF-8, bad syntax) is one line."""
    source = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{source}: cannot read file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ScenarioError(f"{source}:{line}: not valid UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(source, exc) from None


def _suggest(key: str, known: Iterable[str]) -> str:
    known = list(known)
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f' (did you mean "{close[0]}"?)'
    return f" (known: {', '.join(known)})"


def _override_value(text: str) -> Any:
    """`--set` values are TOML values when they parse as one (0.01, true, [["1s","2s"]]),
    otherwise bare strings, so `--set path.lte.rtt=270ms` needs no shell-quoted quotes."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_overrides(overrides: Mapping[str, Any] | Iterable[str] | None) -> list[tuple]:
    """`["path.lte.rtt=270ms", ...]` or `{"path.lte.rtt": "270ms"}` -> [(key, value), ...].

    Strings from a mapping are kept as strings (the caller already has typed values)."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [(str(k).strip(), v) for k, v in overrides.items()]
    if isinstance(overrides, str):
        overrides = [overrides]
    pairs = []
    for item in overrides:
        key, eq, value = str(item).partition("=")
        if not eq or not key.strip():
            raise ScenarioError(f"--set {item}: expected KEY=VALUE, e.g. path.lte.rtt=270ms")
        pairs.append((key.strip(), _override_value(value.strip())))
    return pairs


class _Context:
    """Where values came from, so that an error names the file and, if need be, the --set."""

    def __init__(self, source: str, base_dir: Path) -> None:
        self.source = source
        self.base_dir = base_dir
        self.overridden: set[str] = set()

    def where(self, key: str) -> str:
        if key in self.overridden:
            return f"{self.source}: --set {key}"
        return f"{self.source}: {key}" if key else self.source

    def error(self, key: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.where(key)}: {message}")


def _path_table(data: dict[str, Any], name: str, field: str, bad) -> dict[str, Any]:
    """The table `field` of the path named `name` as written so far (empty if unset)."""
    paths = data.get("path")
    for p in paths if isinstance(paths, list) else []:
        if isinstance(p, dict) and p.get("name") == name:
            current = p.get(field, {})
            if current is True:  # `handover = true`: the defaults, as a table to extend
                return {}
            if not isinstance(current, Mapping):
                raise bad(f"path.{name}.{field} is not a table")
            return dict(current)
    return {}


def _apply_overrides(ctx: _Context, data: dict[str, Any], pairs: list[tuple]) -> None:
    kind_changed = False
    for key, value in pairs:
        parts = key.split(".")

        def bad(message: str, key: str = key) -> ScenarioError:
            return ScenarioError(f"{ctx.source}: --set {key}: {message}")

        if parts[0] == "path" and len(parts) == 4 and parts[2] in ("cross", "handover"):
            # One key of a path's table-valued setting: `--set path.wifi.cross.tcp=2`.
            parts, sub = parts[:3], parts[3]
            value = {**_path_table(data, parts[1], parts[2], bad), sub: value}
        if parts[0] == "path" and len(parts) == 3:
            _, name, field = parts
            paths = data.get("path")
            targets = [p for p in (paths if isinstance(paths, list) else []) if isinstance(p, dict)]
            target = next((p for p in targets if p.get("name") == name), None)
            if target is None:
                names = ", ".join(str(p.get("name")) for p in targets) or "none"
                raise bad(f'no path named "{name}" (paths: {names})')
            if field not in _PATH_KEYS:
                raise bad(f'unknown key "{field}"' + _suggest(field, _PATH_KEYS))
            # rate and trace are alternatives: setting one replaces the other, so a sweep axis
            # can turn a constant-rate path into a trace-driven one.
            if field in ("rate", "trace"):
                target.pop("trace" if field == "rate" else "rate", None)
            target[field] = value
            if field == "name":
                # Later errors name the path by its new name; carry earlier --set marks over.
                old = f"path.{name}."
                ctx.overridden = {
                    f"path.{value}.{k[len(old) :]}" if k.startswith(old) else k
                    for k in ctx.overridden
                }
            ctx.overridden.add(f"path.{target.get('name')}.{field}")
        elif parts[0] in _SECTION_KEYS and len(parts) == 2:
            section, field = parts
            if field not in _SECTION_KEYS[section]:
                raise bad(f'unknown key "{field}"' + _suggest(field, _SECTION_KEYS[section]))
            table = data.setdefault(section, {})
            if not isinstance(table, dict):
                raise bad(f"[{section}] in the file is not a table")
            if section == "workload" and field == "kind" and table.get("kind") != value:
                kind_changed = True
            table[field] = value
            ctx.overridden.add(key)
        else:
            raise bad(
                "unknown key (expected path.NAME.KEY, workload.KEY, transport.KEY or sim.KEY)"
            )
    if kind_changed:
        # Switching the workload kind from the command line drops the file's keys that the
        # new kind does not take (a chunk's size means nothing to bulk); keys given with --set
        # are kept, so a wrong one is still reported.
        table = data["workload"]
        allowed = _WORKLOAD_KEYS.get(table.get("kind"), ())
        for field in list(table):
            if field not in allowed and f"workload.{field}" not in ctx.overridden:
                del table[field]


# --------------------------------------------------------------------------------------------
# Validation and resolution


def _check_keys(ctx: _Context, where: str, table: Mapping[str, Any], allowed: Iterable[str]):
    allowed = tuple(allowed)
    for key in table:
        if key not in allowed:
            raise ScenarioError(
                f"{ctx.where(where)}: unknown key {json.dumps(key)}" + _suggest(key, allowed)
            )


def _table(ctx: _Context, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ctx.error(where, f"expected a table ([{where}]), got {units._show(value)}")
    return value


def _field(
    ctx: _Context,
    where: str,
    table: Mapping[str, Any],
    key: str,
    parse: Callable[[Any], Any],
    default: Any = _MISSING,
) -> Any:
    """Parse `table[key]` with `parse`, prefixing any error with file, key and --set origin."""
    full = f"{where}.{key}" if where else key
    if key not in table:
        if default is _MISSING:
            raise ctx.error(where, f"missing key {json.dumps(key)}")
        return default
    try:
        return parse(table[key])
    except ScenarioError as exc:
        raise exc.at(ctx.where(full)) from None


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ScenarioError(f"expected a string, got {units._show(value)}")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"expected true or false, got {units._show(value)}")
    return value


def _positive_int(value: Any, *, unit: str | None = None) -> int:
    if isinstance(value, str) and unit and value.strip().endswith(unit):
        number = value.strip()[: -len(unit)].strip()
        if number.isdigit():
            value = int(number)
    if isinstance(value, bool) or not isinstance(value, int):
        example = f" (e.g. 10 or 10{unit})" if unit else ""
        raise ScenarioError(f"expected a whole number, got {units._show(value)}{example}")
    if value <= 0:
        raise ScenarioError("must be positive")
    return value


def _positive(parse: Callable[[Any], Any], what: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        parsed = parse(value)
        if parsed <= 0:
            raise ScenarioError(f"{what} must be positive")
        return parsed

    return check


# Cech, TUM 2020, §5 (after Li et al., SIGCOMM 2018): every 15 s a handover of 2 s in which
# throughput drops to a tenth and the RTT triples. `handover = true` takes these values.
_HANDOVER_DEFAULTS = {
    "every": "15s",
    "duration": "2s",
    "rate_factor": 0.1,
    "rtt_factor": 3.0,
}
_HANDOVER_KEYS = ("every", "duration", "start", "rate_factor", "rtt_factor")
_CROSS_KEYS = ("tcp", "cc", "cbr")
# crates/sim/src/cross.rs MAX_FLOWS.
_CROSS_MAX_FLOWS = 64


def _factor(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ScenarioError(f"expected a positive number, got {units._show(value)}")
    return float(value)


def _handover(value: Any) -> dict[str, float] | None:
    """`handover = true` or a table of every, duration, start, rate_factor, rtt_factor."""
    if value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        raise ScenarioError(
            "expected true or a table such as "
            '{every = "15s", duration = "2s", rate_factor = 0.1, rtt_factor = 3}'
        )
    for key in value:
        if key not in _HANDOVER_KEYS:
            raise ScenarioError(f"unknown key {json.dumps(key)}" + _suggest(key, _HANDOVER_KEYS))
    table = {**_HANDOVER_DEFAULTS, **value}
    try:
        every = float(_positive(units.parse_time, "every")(table["every"]))
        duration = float(_positive(units.parse_time, "duration")(table["duration"]))
        start = float(units.parse_time(table.get("start", table["every"])))
        rate_factor = _factor(table["rate_factor"])
        rtt_factor = _factor(table["rtt_factor"])
    except ScenarioError as exc:
        raise exc.at("handover") from None
    if duration >= every:
        raise ScenarioError("handover: duration must be shorter than every")
    return {
        "start_s": start,
        "every_s": every,
        "duration_s": duration,
        "rate_factor": rate_factor,
        "delay_factor": rtt_factor,
    }


def _cross(value: Any) -> dict[str, Any] | None:
    """`cross = {tcp = N, cc = "cubic", cbr = "2Mbit"}`: competing traffic on the bottleneck."""
    if not isinstance(value, Mapping):
        raise ScenarioError(
            'expected a table such as {tcp = 2, cc = "cubic", cbr = "2Mbit"}, '
            f"got {units._show(value)}"
        )
    for key in value:
        if key not in _CROSS_KEYS:
            raise ScenarioError(f"unknown key {json.dumps(key)}" + _suggest(key, _CROSS_KEYS))
    flows = value.get("tcp", 0)
    if isinstance(flows, bool) or not isinstance(flows, int) or not 0 <= flows <= _CROSS_MAX_FLOWS:
        raise ScenarioError(
            f"tcp: expected a whole number of flows from 0 to {_CROSS_MAX_FLOWS}, "
            f"got {units._show(flows)}"
        )
    try:
        cc = _congestion_control(value["cc"]) if "cc" in value else None
    except ScenarioError as exc:
        raise exc.at("cc") from None
    try:
        cbr = units.parse_rate(value["cbr"]) if "cbr" in value else 0.0
    except ScenarioError as exc:
        raise exc.at("cbr") from None
    if cc is not None and flows == 0:
        raise ScenarioError("cc: needs tcp flows to apply to (tcp = N)")
    if flows == 0 and cbr == 0.0:
        return None
    return {"tcp_flows": flows, "cc": cc, "cbr_bps": cbr}


def _outages(value: Any) -> list[list[float]]:
    shape = 'expected a list of [start, end] pairs, e.g. [["10s", "12s"]]'
    if not isinstance(value, list):
        raise ScenarioError(f"{shape}, got {units._show(value)}")
    spans: list[list[float]] = []
    previous_end: Decimal | None = None
    for i, pair in enumerate(value):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ScenarioError(f"outage {i}: {shape}")
        try:
            start, end = (units.time_decimal(t) for t in pair)
        except ScenarioError as exc:
            raise exc.at(f"outage {i}") from None
        if end <= start:
            raise ScenarioError(f"outage {i}: ends before it starts")
        # The core walks outages in order; overlapping or unsorted spans are almost surely a
        # typo, and rejecting them keeps one meaning per file.
        if previous_end is not None and start < previous_end:
            raise ScenarioError(f"outage {i}: starts before the previous one ends")
        previous_end = end
        spans.append([float(start), float(end)])
    return spans


def _trace_file(ctx: _Context, where: str, path: dict[str, Any]) -> str:
    written = _field(ctx, where, path, "trace", _string)
    # A trace written in the file is relative to the file; one typed with --set is relative to
    # where the user typed it, as any other path on a command line.
    base = Path.cwd() if f"{where}.trace" in ctx.overridden else ctx.base_dir
    resolved = Path(os.path.expanduser(written))
    if not resolved.is_absolute():
        resolved = Path(base) / resolved
    # Absolute, so the core finds it whatever its working directory; not realpath'd, so the
    # echo in results stays recognizable.
    resolved = Path(os.path.abspath(resolved))
    try:
        with open(resolved, "rb"):
            pass
    except OSError as exc:
        shown = json.dumps(written, ensure_ascii=False)
        if str(resolved) != written:
            shown += f" ({resolved})"
        reason = exc.strerror or str(exc)
        raise ctx.error(f"{where}.trace", f"cannot read trace file {shown}: {reason}") from None
    return str(resolved)


def _resolve_path(ctx: _Context, index: int, raw: Any) -> dict[str, Any]:
    path = _table(ctx, f"path[{index}]", raw)
    name = path.get("name")
    if isinstance(name, str) and _PATH_NAME.match(name):
        where = f"path.{name}"
    else:
        where = f"path[{index}]"
        if "name" not in path:
            raise ctx.error(where, 'missing key "name"')
        raise ctx.error(
            f"{where}.name",
            f"bad path name {units._show(name)} (letters, digits, '-' and '_' only)",
        )
    _check_keys(ctx, where, path, _PATH_KEYS)

    has_rate, has_trace = "rate" in path, "trace" in path
    if has_rate == has_trace:
        raise ctx.error(
            where,
            "needs exactly one of rate or trace" + (", not both" if has_rate else ""),
        )
    rate = _field(ctx, where, path, "rate", units.rate_decimal) if has_rate else None
    trace = _trace_file(ctx, where, path) if has_trace else None

    rtt = _field(ctx, where, path, "rtt", _positive(units.time_decimal, "rtt"))
    owd = _field(ctx, where, path, "owd", units.time_decimal, default=rtt / 2)
    if owd > rtt:
        raise ctx.error(f"{where}.owd", f"owd must not exceed rtt ({units.format_time(rtt)})")
    # One bandwidth-delay product: the classic drop-tail buffer sizing, and what the DEMS
    # profile uses for WiFi (50 ms at RTT 50 ms).
    one_bdp = {"unit": "time", "value": float(rtt)}
    queue = _field(ctx, where, path, "queue", units.parse_queue, default=one_bdp)
    loss = _field(ctx, where, path, "loss", units.parse_loss, default=0.0)

    reverse_rate = _field(ctx, where, path, "reverse_rate", units.parse_rate, default=None)
    if reverse_rate is None and "reverse_queue" in path:
        raise ctx.error(
            f"{where}.reverse_queue", "needs reverse_rate (the reverse link has no bottleneck)"
        )
    reverse_queue = _field(
        ctx,
        where,
        path,
        "reverse_queue",
        units.parse_queue,
        default=one_bdp if reverse_rate is not None else {"unit": "unlimited"},
    )
    reverse_loss = _field(ctx, where, path, "reverse_loss", units.parse_loss, default=0.0)
    # An outage takes the whole path down (a WiFi station out of range): both directions.
    outages = _field(ctx, where, path, "outages", _outages, default=[])
    backup = _field(ctx, where, path, "backup", _boolean, default=False)
    # A handover slows the data direction and delays both (RTT x rtt_factor).
    handover = _field(ctx, where, path, "handover", _handover, default=None)
    cross = _field(ctx, where, path, "cross", _cross, default=None)

    return {
        "name": name,
        "forward": {
            "rate_bps": float(rate) if rate is not None else None,
            "trace": trace,
            "delay_s": float(owd),
            "queue": queue,
            "loss": loss,
            "outages": outages,
            **({"handover": handover} if handover else {}),
        },
        "reverse": {
            "rate_bps": reverse_rate,
            "trace": None,
            "delay_s": float(rtt - owd),
            "queue": reverse_queue,
            "loss": reverse_loss,
            "outages": [list(span) for span in outages],
            **({"handover": {**handover, "rate_factor": 1.0}} if handover else {}),
        },
        **({"backup": True} if backup else {}),
        **({"cross": cross} if cross else {}),
    }


def _resolve_paths(ctx: _Context, raw: Any) -> list[dict[str, Any]]:
    if raw is _MISSING:
        raise ctx.error("", "no paths: add at least one [[path]] table")
    if not isinstance(raw, list):
        raise ctx.error("path", "expected an array of tables ([[path]])")
    if not raw:
        raise ctx.error("path", "no paths: add at least one [[path]] table")
    if len(raw) > MAX_PATHS:
        raise ctx.error("path", f"at most {MAX_PATHS} paths are supported, got {len(raw)}")
    resolved = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        path = _resolve_path(ctx, i, item)
        if path["name"] in seen:
            raise ctx.error(f"path[{i}].name", f'duplicate path name "{path["name"]}"')
        seen.add(path["name"])
        resolved.append(path)
    return resolved


def _resolve_workload(ctx: _Context, raw: Any) -> dict[str, Any]:
    table = _table(ctx, "workload", _DEFAULT_WORKLOAD if raw is _MISSING else raw)
    kind = _field(ctx, "workload", table, "kind", _string, default="chunk")
    if kind in _FUTURE_WORKLOADS:
        raise ctx.error(
            "workload.kind",
            f'"{kind}" is not implemented yet (available: {", ".join(_WORKLOAD_KEYS)})',
        )
    if kind not in _WORKLOAD_KEYS:
        raise ctx.error(
            "workload.kind",
            f"unknown workload kind {json.dumps(kind)} (expected {', '.join(_WORKLOAD_KEYS)})",
        )
    for key in table:
        if key not in _WORKLOAD_KEYS[kind]:
            raise ctx.error(
                "workload" if f"workload.{key}" not in ctx.overridden else f"workload.{key}",
                f'unknown key "{key}" for kind "{kind}"' + _suggest(key, _WORKLOAD_KEYS[kind][1:]),
            )
    size = _positive(units.parse_size, "size")
    if kind == "chunk":
        return {"kind": "chunk", "size_bytes": _field(ctx, "workload", table, "size", size)}
    if kind == "chunks":
        return {
            "kind": "chunks",
            "size_bytes": _field(ctx, "workload", table, "size", size),
            "count": _field(ctx, "workload", table, "count", _positive_int),
            "think_s": _field(ctx, "workload", table, "think", units.parse_time, default=0.0),
            "hint": _field(ctx, "workload", table, "hint", _boolean, default=True),
        }
    duration = _positive(units.parse_time, "duration")
    if kind == "stream":
        return _resolve_stream(ctx, table, duration)
    return {"kind": "bulk", "duration_s": _field(ctx, "workload", table, "duration", duration)}


def _coefficient_of_variation(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 100:
        raise ScenarioError(f"cv must be a number in [0, 100), got {value!r}")
    return float(value)


def _resolve_stream(ctx: _Context, table: dict[str, Any], duration: Any) -> dict[str, Any]:
    """The `stream` workload: CBR (cv = 0) or VBR frames every `frame_interval`."""
    w = "workload"
    return {
        "kind": "stream",
        "rate_bps": _field(ctx, w, table, "rate", _positive(units.parse_rate, "rate")),
        "duration_s": _field(ctx, w, table, "duration", duration),
        "packet_bytes": _field(
            ctx, w, table, "packet", _positive(units.parse_size, "packet"), default=1448
        ),
        "cv": _field(ctx, w, table, "cv", _coefficient_of_variation, default=0.0),
        "frame_interval_s": _field(
            ctx,
            w,
            table,
            "frame_interval",
            _positive(units.parse_time, "frame_interval"),
            default=1.0 / 30.0,
        ),
        "playout_delay_s": _field(ctx, w, table, "playout_delay", units.parse_time, default=1.0),
    }


def _congestion_control(value: Any) -> str:
    cc = _string(value)
    if cc not in _CC_IMPLEMENTED:
        raise ScenarioError(
            f"unknown congestion control {json.dumps(cc)} (expected {', '.join(_CC_IMPLEMENTED)})"
        )
    return cc


_HYSTART = ("linux", "hystart++", "off")


def _hystart(value: Any) -> str:
    mode = _string(value)
    if mode not in _HYSTART:
        raise ScenarioError(f"unknown hystart {json.dumps(mode)} (expected {', '.join(_HYSTART)})")
    return mode


def _mss(value: Any) -> int:
    # A bare whole number is bytes (mss = 1448), as Linux's TCP_MAXSEG takes it.
    plain = isinstance(value, int) and not isinstance(value, bool)
    mss = value if plain else units.parse_size(value)
    # Below 64 B headers dominate and the model stops meaning anything; above 64 KiB no IP
    # packet can carry it.
    if not 64 <= mss <= 65535:
        raise ScenarioError(f"mss must be between 64B and 65535B, got {units._show(value)}")
    return mss


def _resolve_transport(ctx: _Context, raw: Any) -> dict[str, Any]:
    table = _table(ctx, "transport", {} if raw is _MISSING else raw)
    _check_keys(ctx, "transport", table, _TRANSPORT_KEYS)
    d = _TRANSPORT_DEFAULTS
    t = "transport"
    positive_size = _positive(units.parse_size, "size")
    transport = {
        "cc": _field(ctx, t, table, "cc", _congestion_control, d["cc"]),
        "mss": _field(ctx, t, table, "mss", _mss, d["mss"]),
        "init_cwnd": _field(
            ctx, t, table, "init_cwnd", lambda v: _positive_int(v, unit="pkt"), d["init_cwnd"]
        ),
        "send_buffer_bytes": _field(
            ctx, t, table, "send_buffer", positive_size, d["send_buffer_bytes"]
        ),
        "recv_buffer_bytes": _field(
            ctx, t, table, "recv_buffer", positive_size, d["recv_buffer_bytes"]
        ),
        "delayed_ack": _field(ctx, t, table, "delayed_ack", _boolean, d["delayed_ack"]),
        "min_rto_s": _field(ctx, t, table, "min_rto", units.parse_time, d["min_rto_s"]),
        # RFC 5681 §4.1 restart window after idle, Linux's tcp_slow_start_after_idle.
        "slow_start_after_idle": _field(
            ctx, t, table, "slow_start_after_idle", _boolean, d["slow_start_after_idle"]
        ),
        # CUBIC's slow-start exit: Linux's classic HyStart, RFC 9406 HyStart++, or none.
        "hystart": _field(ctx, t, table, "hystart", _hystart, d["hystart"]),
        # Linux internal TCP pacing (tcp_update_pacing_rate), off by default.
        "pacing": _field(ctx, t, table, "pacing", _boolean, d["pacing"]),
    }
    # A buffer smaller than one segment can never carry one: the run could only stall.
    # mss 0 means "by scheduler": 1,420 B for MPTCP, 1,448 B single-path; the smaller counts.
    mss = transport["mss"] or 1420
    for key in ("send_buffer", "recv_buffer"):
        size = transport[f"{key}_bytes"]
        if size is not None and size < mss:
            raise ctx.error(
                f"{t}.{key}",
                f"{units.format_size(size)} is "
                f"smaller than one segment (mss {mss}B): nothing could be sent",
            )
    receiver = _field(ctx, t, table, "receiver", _receiver, "default")
    if receiver != "default":
        transport["receiver"] = receiver
    # TCP_NODELAY on the sender (Nagle off); Linux's default is off. Written only when on, as
    # the engine's results do, so resolved scenarios (and sweep resume keys) stay as they were.
    if _field(ctx, t, table, "nodelay", _boolean, False):
        transport["nodelay"] = True
    # The connection's send buffer fixed at send_buffer (an application's SO_SNDBUF), not
    # autotuned; written only when on, as nodelay.
    if _field(ctx, t, table, "send_buffer_lock", _boolean, False):
        transport["send_buffer_lock"] = True
    return transport


def _receiver(value: Any) -> str:
    name = _string(value)
    if name not in _RECEIVERS:
        raise ScenarioError(
            f"unknown receiver policy {json.dumps(name)} (known: {', '.join(_RECEIVERS)})"
        )
    return name


def _resolve_sim(ctx: _Context, raw: Any) -> dict[str, Any]:
    table = _table(ctx, "sim", {} if raw is _MISSING else raw)
    _check_keys(ctx, "sim", table, _SIM_KEYS)
    return {
        # The receiver's clock may run behind the sender's: one-way-delay estimators must not
        # care, and tests check that they don't.
        "clock_offset_s": _field(
            ctx,
            "sim",
            table,
            "clock_offset",
            lambda v: units.parse_time(v, allow_negative=True),
            _SIM_DEFAULTS["clock_offset_s"],
        ),
        "max_time_s": _field(
            ctx,
            "sim",
            table,
            "max_time",
            _positive(units.parse_time, "max_time"),
            _SIM_DEFAULTS["max_time_s"],
        ),
    }


def resolve(
    data: Mapping[str, Any],
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    *,
    source: str = "scenario",
    base_dir: PathLike | None = None,
) -> dict[str, Any]:
    """A scenario as parsed from TOML (same keys as the file) -> the resolved scenario.

    `base_dir` is where relative trace paths in `data` are looked up (default: the current
    directory); traces given with `--set` are relative to the current directory.
    """
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: a scenario is a table, got {units._show(data)}")
    ctx = _Context(source, Path(base_dir) if base_dir is not None else Path.cwd())
    # Deep copy through JSON-ish structures: overrides mutate, the caller's dict must not change.
    data = _copy(data)
    _apply_overrides(ctx, data, parse_overrides(overrides))
    _check_keys(ctx, "", data, _TOP_KEYS)
    return {
        "paths": _resolve_paths(ctx, data.get("path", _MISSING)),
        "workload": _resolve_workload(ctx, data.get("workload", _MISSING)),
        "transport": _resolve_transport(ctx, data.get("transport", _MISSING)),
        "sim": _resolve_sim(ctx, data.get("sim", _MISSING)),
    }


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def default_scenario(overrides: Mapping[str, Any] | Iterable[str] | None = None) -> dict:
    """The built-in DEMS §3.2 WiFi/LTE scenario, resolved."""
    return resolve(tomllib.loads(DEFAULT_SCENARIO_TOML), overrides, source=DEFAULT_SOURCE)


def load_scenario(
    path: PathLike | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
) -> dict[str, Any]:
    """Read, override (`["path.lte.rtt=270ms", ...]`), validate and resolve a scenario file.

    `path=None` is the built-in default scenario. Errors raise `ScenarioError` (one line)."""
    if path is None:
        return default_scenario(overrides)
    data = read_toml(path)
    return resolve(data, overrides, source=os.fspath(path), base_dir=Path(os.fspath(path)).parent)


def to_json(scenario: Mapping[str, Any]) -> str:
    """The resolved scenario as the JSON text `mpsched._core` takes."""
    # allow_nan=False: serde_json cannot read NaN/Infinity, and validation never produces them.
    return json.dumps(scenario, allow_nan=False, separators=(",", ":"))
