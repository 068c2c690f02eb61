"""The `mpsched` command line (DESIGN.md "Command line": extend it, don't break it).

Error rule: every user error -- a bad scenario, unit, key, `--set`, trace file, scheduler
name or option -- prints exactly one line, `mpsched: error: <message>`, to stderr and exits
with status 2; nothing ever prints a traceback (MPSCHED_DEBUG=1 re-raises internal errors for
developers). `main()` owns that rule, so commands just raise `ScenarioError`.

With `--json`, stdout carries only the JSON object (one line), so it can be piped to `jq`.
"""

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from . import _engine, runner
from .errors import ExtensionMissingError, RealRunError, ScenarioError
from .scenario import DEFAULT_SOURCE

app = typer.Typer(
    name="mpsched",
    help="Design, compare and deploy multipath transport schedulers.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SetOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set",
        metavar="K=V",
        help="Override a scenario key, e.g. path.lte.rtt=270ms (repeatable).",
        show_default=False,
    ),
]
SeedOption = Annotated[int, typer.Option("--seed", min=0, help="Random seed (first seed).")]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object on one line instead of tables.")
]


def _console() -> Console:
    # highlight=False: rich's automatic colouring of numbers makes dense tables harder to read.
    # Piped output (make demo's log, CI) would be cut to 80 columns and wrap every cell.
    # COLUMNS, when set, wins (rich reads it).
    tty = sys.stdout.isatty() or "COLUMNS" in os.environ
    return Console(highlight=False, width=None if tty else 132)


# `run` exits with this status when the run did not deliver its workload (README, "Exit status").
EXIT_FAILED_RUN = 3
EXIT_INTERRUPTED = 130


def _finite(value: Any) -> Any:
    """JSON has no infinity: +inf (a percentile of failed runs) becomes null."""
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(_finite(value)) + "\n")
    sys.stdout.flush()


# ---- human-readable quantities (tables only; JSON carries plain SI numbers) ----------------


def _time(seconds: Optional[float]) -> str:
    if seconds is None or seconds != seconds:
        return "-"
    if seconds == float("inf"):
        return "failed"
    magnitude = abs(seconds)
    if magnitude >= 1:
        return f"{seconds:.3f} s"
    if magnitude >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    if magnitude == 0:
        return "0 s"
    return f"{seconds * 1e6:.0f} us"


def _rate(bps: Optional[float]) -> str:
    if bps is None:
        return "-"
    for unit, factor in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if abs(bps) >= factor:
            return f"{bps / factor:.3g} {unit}"
    return f"{bps:.0f} bit/s"


def _bytes(n: Optional[float]) -> str:
    if n is None:
        return "-"
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n:.0f} B"


def _per_path(value: Any, names: Sequence[str]) -> dict[str, Any]:
    """A per-path metric as {path name: value}, whether the engine keyed it by name or listed
    it in path order."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, list) and len(value) == len(names):
        return dict(zip(names, value))
    return {}


# ---- commands -------------------------------------------------------------------------------


class _Stopped(Exception):
    """Ctrl-C inside a command, carried past typer (which turns KeyboardInterrupt into a silent
    exit 130) to `main`, which prints the one line saying what was kept and how to resume."""

    def __init__(self, hint: Optional[str]) -> None:
        super().__init__(hint)
        self.hint = hint


def _interruptible(command: Any) -> Any:
    import functools

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            raise _Stopped(getattr(exc, "hint", None)) from None

    return wrapper


def _version_callback(value: bool) -> None:
    if not value:
        return
    from . import __version__

    try:
        engine = _engine.core().version()
    except ExtensionMissingError:
        engine = "not built"
    typer.echo(f"mpsched {__version__} (engine {engine})")
    raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Show versions."),
    ] = False,
) -> None:
    """Design, compare and deploy multipath transport schedulers."""


@app.command("run")
@_interruptible
def run_command(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="Scenario TOML file.")],
    scheduler: Annotated[
        str, typer.Option("-s", "--scheduler", help="Scheduler name (see `schedulers`).")
    ] = "minrtt",
    overrides: SetOption = None,
    seed: SeedOption = 1,
    as_json: JsonOption = False,
    trace: Annotated[
        Optional[Path],
        typer.Option(
            "--trace",
            metavar="FILE.parquet",
            help="Also record per-packet events to FILE.parquet (and per-path samples, when "
            "the engine records them, to FILE.samples.parquet).",
            show_default=False,
        ),
    ] = None,
    pcap: Annotated[
        Optional[Path],
        typer.Option(
            "--pcap",
            metavar="FILE.pcap",
            help="Also write the simulated packets as a pcap (one TCP stream per subflow) "
            "that Wireshark and tshark open.",
            show_default=False,
        ),
    ] = None,
    sample_interval: Annotated[
        str,
        typer.Option(
            "--sample-interval",
            metavar="TIME",
            help="With --trace: sample each path's cwnd, sRTT and OWD estimate this often "
            "(0 = never; a scenario's sim.sample_interval wins).",
        ),
    ] = "10ms",
) -> None:
    """Simulate one run of SCENARIO with one scheduler.

    Exits with status 3 (and says why) when the run did not deliver its workload: the time
    limit came first, or it stalled."""
    if trace is not None and trace.suffix.lower() not in (".parquet", ".pq"):
        raise ScenarioError(
            f"--trace {trace}: traces are written as Parquet; name the file FILE.parquet "
            "(for a packet capture, use --pcap FILE.pcap)"
        )
    if pcap is not None:
        _check_writable("--pcap", pcap)
    resolved = runner.resolve_scenario(scenario, overrides)
    written: list[Path] = []
    if trace is not None or pcap is not None:
        from . import traces, units

        interval = _parse_opt("--sample-interval", sample_interval, units.parse_time)
        recorded = runner.run_traced(
            resolved, scheduler=scheduler, seed=seed, sample_interval_s=interval
        )
        if trace is not None:
            try:
                written += traces.write(recorded, trace)
            except OSError as exc:
                raise ScenarioError(
                    f"--trace {trace}: cannot write: {exc.strerror or exc}"
                ) from None
        if pcap is not None:
            from . import pcap as pcaps

            try:
                pcaps.write(recorded, pcap)
            except OSError as exc:
                raise ScenarioError(f"--pcap {pcap}: cannot write: {exc.strerror or exc}") from None
            written.append(pcap)
        result = recorded.result
    else:
        result = runner.run(resolved, scheduler=scheduler, seed=seed)
    from .stats import failure

    why = failure(result)
    if as_json:
        _print_json(result)
    else:
        console = _console()
        _show_run(console, result, resolved, scenario, scheduler, seed)
        if written:
            events, samples = len(recorded.events), len(recorded.samples)
            console.print(
                f"trace: {events:,} events, {samples:,} samples -> "
                + ", ".join(str(w) for w in written),
                style="dim",
            )
    if why is not None:
        sys.stderr.write(f"mpsched: run failed: {why}\n")
        raise typer.Exit(EXIT_FAILED_RUN)


def _show_run(
    console: Console,
    result: Mapping[str, Any],
    scenario: Mapping[str, Any],
    label: str,
    scheduler: str,
    seed: int,
) -> None:
    console.print(f"[bold]{scheduler}[/bold] on {label}, seed {seed}")
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="dim")
    summary.add_column(justify="right")
    summary.add_column(style="dim")
    summary.add_column(justify="right")
    summary.add_row(
        "download time",
        _time(result.get("download_time_s")),
        "goodput",
        _rate(result.get("goodput_bps")),
    )
    summary.add_row(
        "completion gap",
        _time(result.get("completion_gap_s")),
        "reinjected",
        _bytes(result.get("reinjected_bytes")),
    )
    chunk_times = result.get("chunk_times_s")
    if isinstance(chunk_times, list) and len(chunk_times) > 1:
        summary.add_row(
            "chunks",
            str(len(chunk_times)),
            "slowest chunk",
            _time(max(chunk_times)),
        )
    console.print(summary)

    names = [p["name"] for p in scenario["paths"]]
    line_rates = {p["name"]: p["forward"].get("rate_bps") for p in scenario["paths"]}
    sent = _per_path(result.get("bytes_by_path"), names)
    throughput = _per_path(result.get("throughput_by_path_bps"), names)
    retransmissions = _per_path(result.get("retransmissions_by_path"), names)
    srtt = _per_path(result.get("srtt_avg_s_by_path"), names)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header in ("path", "rate", "bytes sent", "throughput", "util", "retrans", "srtt"):
        table.add_column(header, justify="left" if header == "path" else "right")
    for name in names:
        rate, delivered = line_rates.get(name), throughput.get(name)
        # Utilization is only defined against a constant line rate, not a trace.
        util = f"{delivered / rate:.0%}" if rate and delivered is not None else "-"
        table.add_row(
            name,
            _rate(rate) if rate else "trace",
            _bytes(sent.get(name)),
            _rate(delivered),
            util,
            str(retransmissions.get(name, "-")),
            _time(srtt.get(name)),
        )
    console.print(table)
    cost = [f"simulated {_time(result.get('sim_time_s'))}"]
    if "wall_time_s" in result:
        cost.append(f"in {_time(result['wall_time_s'])}")
    if "events" in result:
        cost.append(f"({result['events']:,} events)")
    console.print(" ".join(cost), style="dim")


@app.command("compare")
@_interruptible
def compare_command(
    scenario: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[SCENARIO]",
            help="Scenario TOML file (default: the DEMS WiFi/LTE profile).",
            show_default=False,
        ),
    ] = None,
    schedulers: Annotated[
        Optional[list[str]],
        typer.Option(
            "-s",
            "--scheduler",
            help="Scheduler to compare (repeatable; default: every chunk scheduler).",
            show_default=False,
        ),
    ] = None,
    overrides: SetOption = None,
    reps: Annotated[
        int,
        typer.Option("--reps", min=1, help=f"Seeds per scheduler (at most {runner.MAX_REPS:,})."),
    ] = 10,
    seed: SeedOption = 1,
    ci: Annotated[
        bool,
        typer.Option(
            "--ci",
            help="Add 95% bootstrap confidence intervals of the median and mean, and each "
            "scheduler's per-seed ratio to the first one.",
        ),
    ] = False,
    csv: Annotated[
        Optional[Path],
        typer.Option(
            "--csv", metavar="FILE.csv", help="Also write the summary as CSV.", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
    kernel: Annotated[
        bool,
        typer.Option(
            "--kernel", help="Add a linux-mptcp row: real Linux MPTCP on the emulator (root)."
        ),
    ] = False,
    real: Annotated[
        bool,
        typer.Option(
            "--real",
            help="Add each -s scheduler on the real proxy (warm subflows) and a linux-mptcp "
            "row, on the emulator (root; --reps downloads each).",
        ),
    ] = False,
) -> None:
    """Run schedulers over several seeds and compare their medians and p90s.

    A run that does not deliver its workload counts as failed: +inf in time percentiles, 0 in
    goodput. Ctrl-C stops at once and shows the runs done so far."""
    from .errors import Interrupted

    if csv is not None:
        _check_writable("--csv", csv)
    resolved = runner.resolve_scenario(scenario, overrides)
    label = scenario if scenario is not None else DEFAULT_SOURCE
    if real and not schedulers:
        raise ScenarioError("compare --real: name the schedulers with -s (each runs on the proxy)")
    try:
        report = runner.compare(
            resolved,
            schedulers=schedulers,
            reps=reps,
            seed=seed,
            ci=ci,
            progress=not as_json and sys.stderr.isatty(),
        )
    except Interrupted as exc:
        if exc.partial is not None and not as_json:
            _show_compare(_console(), exc.partial["summary"], resolved, label, reps, seed)
        raise
    if kernel:
        from .netcli import compare_kernel_rows

        report["summary"].update(compare_kernel_rows(resolved, reps, seed))
    if real:
        from .netcli import compare_real_rows

        report["summary"].update(compare_real_rows(resolved, list(schedulers or []), reps, seed))
    if csv is not None:
        _write_csv(csv, report["summary"])
    if as_json:
        _print_json(report)
        return
    console = _console()
    _show_compare(console, report["summary"], resolved, label, reps, seed, note_determinism=True)
    if kernel:
        console.print(
            "linux-mptcp: real Linux MPTCP on the emulator, download time from connect() "
            "(handshake included); its 'gap' is the gap between the paths' last bytes."
        )
    if real:
        console.print(
            "NAME@proxy: the real proxy on the emulator, warm shared subflows, time from the "
            "SOCKS5 connect; linux-mptcp: real Linux MPTCP, fresh connection per download."
        )
    if ci:
        _show_ci(console, report["summary"], report.get("paired", {}), resolved)


def _check_writable(option: str, path: Path) -> None:
    """Refuse an output file that cannot be written before any work is done."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ScenarioError(f"{option} {path}: no such directory {parent}")
    if path.is_dir():
        raise ScenarioError(f"{option} {path}: is a directory")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ScenarioError(f"{option} {path}: not writable")


def _main_metric(summary: Mapping[str, Mapping[str, Any]]) -> str:
    """download_time_s for chunk workloads, goodput_bps for bulk ones."""
    for metrics in summary.values():
        if "download_time_s" in metrics:
            return "download_time_s"
    return "goodput_bps"


def _show_compare(
    console: Console,
    summary: Mapping[str, Mapping[str, Any]],
    scenario: Mapping[str, Any],
    label: str,
    reps: Optional[int],
    seed: Optional[int],
    title: Optional[str] = None,
    note_determinism: bool = False,
) -> None:
    names = [p["name"] for p in scenario["paths"]]
    main = _main_metric(summary)
    chunked = main == "download_time_s"

    def stat(metrics: Mapping[str, Any], key: str, which: str = "median") -> Any:
        return metrics.get(key, {}).get(which)

    oracle = stat(summary.get("oracle", {}), main) if chunked else None
    if oracle is not None and not 0 < oracle < float("inf"):
        oracle = None
    if title is None:
        title = f"{label}: {reps} seeds per scheduler ({seed}..{seed + reps - 1})"
    title += "; dl = download time" if chunked else ""
    table = Table(
        title=title,
        caption="path columns: payload bytes sent, p50 (K/M = KiB/MiB); a failed run counts "
        + ("as +inf in time percentiles" if chunked else "as 0 goodput"),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("scheduler")
    table.add_column("ok", justify="right")
    headers = ("dl p50", "dl p90", "gap p50") if chunked else ("goodput p50", "goodput p90")
    for header in (*headers, "reinj"):
        table.add_column(header, justify="right")
    # One column per path: the split between paths is what schedulers differ in.
    for name in names:
        table.add_column(name, justify="right")
    if oracle:
        table.add_column("vs best", justify="right")
    for scheduler, metrics in summary.items():
        counts = metrics.get("runs", {})
        value = stat(metrics, main)
        split = _per_path(stat(metrics, "bytes_by_path"), names)
        if chunked:
            cells = [_short_time(value), _short_time(stat(metrics, main, "p90"))]
            cells.append(_short_time(stat(metrics, "completion_gap_s")))
        else:
            cells = [_rate(value), _rate(stat(metrics, main, "p90"))]
        row = [
            scheduler,
            f"{counts.get('completed', '?')}/{counts.get('total', '?')}",
            *cells,
            _short_bytes(stat(metrics, "reinjected_bytes")),
            *(_short_bytes(split.get(name)) for name in names),
        ]
        if oracle:
            finite = value is not None and value != float("inf")
            row.append(f"{value / oracle:.2f}x" if finite else "-")
        table.add_row(*row)
    console.print(table)
    failures: dict[str, int] = {}
    for metrics in summary.values():
        for why, n in metrics.get("runs", {}).get("failures", {}).items():
            failures[why] = failures.get(why, 0) + n
    for why, n in failures.items():
        console.print(f"failed: {n} run{'s' if n != 1 else ''}: {why}")
    if note_determinism and runner.deterministic(scenario):
        distinct = [m.get("runs", {}).get("distinct") for m in summary.values()]
        most = max((d for d in distinct if d is not None), default=None)
        # The simulator is deterministic: without random loss or a trace, every seed gives the
        # same run, and p50 = p90 says nothing about variability.
        console.print(
            "note: no random loss and no trace in this scenario, so every seed gives the same "
            f"run ({most} distinct per scheduler); add loss or a trace "
            "(--set path.NAME.loss=0.001) to see a distribution."
        )


def _short_time(seconds: Optional[float]) -> str:
    """Three significant digits, no space: tables must fit 80 columns."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return _time(seconds)
    magnitude = abs(seconds)
    if magnitude >= 1:
        return f"{seconds:.2f}s"
    if magnitude >= 1e-3:
        ms = seconds * 1e3
        return f"{ms:.0f}ms" if abs(ms) >= 10 else f"{ms:.1f}ms"
    return "0s" if magnitude == 0 else f"{seconds * 1e6:.0f}us"


def _short_bytes(n: Optional[float]) -> str:
    """K = KiB, M = MiB, G = GiB, three significant digits."""
    if n is None or n != n:
        return "-"
    for unit, factor in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if abs(n) >= factor:
            v = n / factor
            return f"{v:.0f}{unit}" if abs(v) >= 100 else f"{v:.3g}{unit}"
    return f"{n:.0f}B"


def _show_ci(
    console: Console,
    summary: Mapping[str, Mapping[str, Any]],
    paired: Mapping[str, Mapping[str, Any]],
    scenario: Mapping[str, Any],
) -> None:
    main = _main_metric(summary)
    show = _short_time if main == "download_time_s" else _rate
    table = Table(
        title=f"{main}: 95% bootstrap confidence intervals",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for header in ("scheduler", "median [95% CI]", "mean [95% CI]", "paired ratio [95% CI]"):
        table.add_column(header, justify="left" if header == "scheduler" else "right")
    for scheduler, metrics in summary.items():
        m = metrics.get(main, {})
        cells = []
        for key, ci_key in (("median", "median_ci"), ("mean", "mean_ci")):
            lo, hi = (m.get(ci_key) or [None, None])[:2]
            cells.append(f"{show(m.get(key))} [{show(lo)}, {show(hi)}]" if key in m else "-")
        p = paired.get(scheduler)
        if p:
            cells.append(f"{p['median']:.3f} [{p['ci'][0]:.3f}, {p['ci'][1]:.3f}]")
        else:
            cells.append("baseline" if not paired or scheduler not in paired else "-")
        table.add_row(scheduler, *cells)
    console.print(table)
    if paired:
        first = next(iter(paired.values()))["baseline"]
        console.print(
            f"paired ratio: median over shared seeds of {main} / {first}'s on the same seed.",
            style="dim",
        )


def _summary_rows(summary: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per scheduler and metric statistic (the --csv export)."""
    rows = []
    for scheduler, metrics in summary.items():
        counts = metrics.get("runs", {})
        row: dict[str, Any] = {
            "scheduler": scheduler,
            "runs": counts.get("total"),
            "completed": counts.get("completed"),
            "failed": counts.get("failed"),
            "distinct": counts.get("distinct"),
        }
        for key, stats in metrics.items():
            if key == "runs" or not isinstance(stats, Mapping):
                continue
            for which, value in stats.items():
                if isinstance(value, Mapping):
                    for path, v in value.items():
                        row[f"{key}.{path}.{which}"] = v
                elif isinstance(value, list):
                    row[f"{key}.{which}_low"], row[f"{key}.{which}_high"] = value[:2]
                else:
                    row[f"{key}.{which}"] = value
        rows.append(row)
    return rows


def _write_csv(path: Path, summary: Mapping[str, Mapping[str, Any]]) -> None:
    import csv as csvmod

    rows = _summary_rows(summary)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    try:
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csvmod.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    except OSError as exc:
        raise ScenarioError(f"--csv {path}: cannot write: {exc.strerror or exc}") from None


@app.command("schedulers")
def schedulers_command(as_json: JsonOption = False) -> None:
    """List the schedulers this engine provides, with their paper references."""
    listing = _engine.schedulers()
    if as_json:
        _print_json([{"name": name, "reference": ref} for name, ref in listing])
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("scheduler")
    table.add_column("reference")
    for name, ref in listing:
        table.add_row(name, ref)
    _console().print(table)


@app.command("bench")
def bench_command(
    matrix: Annotated[
        bool,
        typer.Option(
            "--matrix",
            help="Every scheduler x 1, 2, 4, 8 paths x {bulk, 1 MiB chunk train} (800 Mbit/s "
            "shared, RTT 20 + 10·i ms, 20 ms queues, CUBIC); a table and a plot.",
        ),
    ] = False,
    duration: Annotated[
        float, typer.Option("--duration", min=0.001, help="Bulk seconds (--matrix).")
    ] = 10.0,
    chunks: Annotated[
        int, typer.Option("--chunks", min=1, help="1 MiB chunks in the train (--matrix).")
    ] = 8,
    scheduler: Annotated[
        Optional[list[str]],
        typer.Option("--scheduler", "-s", help="Only these schedulers (--matrix; repeatable)."),
    ] = None,
    plot: Annotated[
        Path, typer.Option("--plot", help="Where the matrix plot goes (--matrix).")
    ] = Path("bench-matrix.png"),
    as_json: JsonOption = False,
) -> None:
    """Measure simulator speed on the DESIGN.md benchmark scenarios (or the scheduler matrix)."""
    from . import bench

    if not matrix:
        bench.run()
        return
    _engine.check_schedulers(scheduler or [])
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    bar = Progress(
        TextColumn("[bold]bench matrix"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=as_json,
    )
    with bar:
        task = bar.add_task("", total=None)

        def step(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label)

        rows = bench.run_matrix(scheduler, duration_s=duration, chunks=chunks, progress=step)
    if as_json:
        _print_json(rows)
    else:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("scheduler", "paths", "workload", "data pkts", "events/pkt", "CPU s"):
            table.add_column(col, justify="left" if col in ("scheduler", "workload") else "right")
        table.add_column("data pkts per CPU s", justify="right")
        table.add_column("goodput Mbit/s", justify="right")
        table.add_column("failure")
        for r in rows:
            rate = r["data_packets_per_cpu_s"]
            epp = r["events_per_packet"]
            goodput = r["goodput_bps"]
            table.add_row(
                r["scheduler"],
                str(r["paths"]),
                r["workload"],
                f"{r['data_packets']:,}",
                f"{epp:.2f}" if epp is not None else "n/a",
                f"{r['cpu_s']:.2f}",
                f"{rate:,.0f}" if rate is not None else "n/a",
                f"{goodput / 1e6:.1f}" if goodput is not None else "n/a",
                (r["failure"] or "")[:60],
            )
        _console().print(table)
    bench.plot_matrix(rows, plot)
    print(f"wrote {plot}", file=sys.stderr)


@app.command("sweep")
@_interruptible
def sweep_command(
    sweep_file: Annotated[
        Path, typer.Argument(metavar="SWEEP.toml", help="Sweep file (DESIGN.md).")
    ],
    jobs: Annotated[
        Optional[int],
        typer.Option("--jobs", "-j", min=1, help="Parallel runs (default: all cores)."),
    ] = None,
    db: Annotated[
        Optional[Path],
        typer.Option(
            "--db",
            help="Results database (default: SWEEP.db beside the sweep file).",
            show_default=False,
        ),
    ] = None,
    cluster: Annotated[
        Optional[str],
        typer.Option(
            "--cluster",
            metavar="ADDRESS",
            help="Run on a Dask cluster, e.g. tcp://HOST:8786 (docs/cluster.md).",
            show_default=False,
        ),
    ] = None,
    csv: Annotated[
        Optional[Path],
        typer.Option(
            "--csv",
            metavar="FILE.csv",
            help="Also write every run of the sweep as CSV (one row per run).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run every combination of axes x schedulers x seeds, storing each run as it finishes.

    Re-running skips the runs already stored, so an interrupted sweep (Ctrl-C) resumes."""
    from . import sweep as sweeps

    if csv is not None:
        _check_writable("--csv", csv)
    plan = sweeps.load_sweep(sweep_file)
    target = db if db is not None else sweep_file.with_suffix(".db")
    with _open_store(target) as store:
        stats = sweeps.run_sweep(plan, store, jobs=jobs, cluster=cluster, progress=not as_json)
        df = store.frame(plan.name)
    summary = runner.summarize(
        {
            name: [_metrics_only(r) for _, r in part.iterrows()]
            for name, part in df.groupby("scheduler", sort=False)
        }
    )
    if csv is not None:
        try:
            df.to_csv(csv, index=False)
        except OSError as exc:
            raise ScenarioError(f"--csv {csv}: cannot write: {exc.strerror or exc}") from None
    if as_json:
        _print_json({**stats.as_dict(), "summary": summary})
        return
    console = _console()
    console.print(
        f"[bold]{plan.name}[/bold]: {stats.total} runs, {stats.skipped} already stored, "
        f"{stats.ran} run in {_time(stats.wall_s)} -> {stats.db}"
    )
    _show_compare(
        console,
        summary,
        plan.base,
        str(sweep_file),
        None,
        None,
        title=f"{plan.name}: all axis values pooled ({len(plan.seeds)} seeds per combination)",
    )
    if len(plan.seeds) > 1 and runner.deterministic(plan.base) and not _axes_add_noise(plan.axes):
        console.print(
            f"note: no random loss and no trace in this sweep, so its {len(plan.seeds)} seeds "
            "give identical runs; add loss or a trace to see a distribution."
        )


def _axes_add_noise(axes: Mapping[str, Any]) -> bool:
    """An axis that sets loss or a trace makes seeds differ."""
    return any(k.endswith((".loss", ".trace", ".reverse_loss")) for k in axes)


def _open_store(path: Path):
    from .store import Store

    if path.parent and not path.parent.exists():
        raise ScenarioError(f"--db {path}: no such directory {path.parent}")
    return Store(path)


def _metrics_only(row: Any) -> dict[str, Any]:
    """A DataFrame row (flattened metrics) back to a result-shaped dict for `summarize`."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if (
            key in ("sweep", "scheduler", "key", "engine_version")
            or "." in key
            and (key.split(".", 1)[0] in ("path", "workload", "transport", "sim"))
        ):
            continue
        if isinstance(value, float) and value != value:  # NaN: the metric does not apply
            continue
        if hasattr(value, "item"):  # numpy scalars (bool_, int64) as Python values
            value = value.item()
        if "." in key:
            metric, sub = key.split(".", 1)
            out.setdefault(metric, {})[sub] = value
        else:
            out[key] = value
    return out


@app.command("report")
def report_command(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS", help="A results database (sweep, reproduce) or a trace .parquet."
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path(
        "report.html"
    ),
    sweep: Annotated[
        Optional[str],
        typer.Option("--sweep", help="Only this sweep of the database.", show_default=False),
    ] = None,
    baseline: Annotated[
        str, typer.Option("--baseline", help="Scheduler to compare against.")
    ] = "minrtt",
    trace_runs: Annotated[
        bool,
        typer.Option(
            "--traces/--no-traces",
            help="Re-run one transfer per scheduler with tracing for the sequence diagrams.",
        ),
    ] = True,
) -> None:
    """Write one self-contained HTML page: scenario, summary table and figures."""
    if not results.exists():
        raise ScenarioError(f"{results}: no such file")
    from .report import build_report

    path = build_report(results, output, sweep=sweep, baseline=baseline, trace_runs=trace_runs)
    _console().print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


@app.command("presets")
def presets_command(as_json: JsonOption = False) -> None:
    """List the paper figures `mpsched reproduce` rebuilds."""
    from .presets import PRESETS

    if as_json:
        _print_json(
            [
                {"name": p.name, "rebuilds": p.rebuilds, "assumptions": list(p.assumptions)}
                for p in PRESETS.values()
            ]
        )
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("preset")
    table.add_column("rebuilds")
    for p in PRESETS.values():
        table.add_row(p.name, f"{p.figure}: {p.caption}")
    _console().print(table)


@app.command("reproduce")
@_interruptible
def reproduce_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Preset (see `mpsched presets`).")],
    quick: Annotated[bool, typer.Option("--quick", help="A reduced grid: fewer values, seeds.")] = (
        False
    ),
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            "-o",
            help="Output folder (default: mpsched-results/NAME[-quick]).",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        Optional[int],
        typer.Option("--jobs", "-j", min=1, help="Parallel runs (default: all cores)."),
    ] = None,
    cluster: Annotated[
        Optional[str],
        typer.Option(
            "--cluster", metavar="ADDRESS", help="Dask scheduler address.", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Rebuild a paper figure, printing the paper's numbers beside ours.

    Runs the preset's sweeps into OUT/NAME.db (resumable), writes its figures to OUT as PNG and
    SVG, and prints what it assumes where the paper's text is silent."""
    from . import presets

    preset = presets.get(name)
    console = Console(highlight=False, stderr=as_json)
    console.print(f"[bold]{preset.name}[/bold] rebuilds {preset.rebuilds}")
    for a in preset.assumptions:
        console.print(f"  assumes: {a}", style="dim")
    rep = presets.reproduce(
        name, quick=quick, out=out, jobs=jobs, cluster=cluster, progress=not as_json
    )
    if as_json:
        _print_json(
            {
                "preset": name,
                "quick": quick,
                "db": str(rep.db),
                "runs": rep.runs,
                "ran": rep.ran,
                "wall_time_s": rep.wall_s,
                "figures": [str(f) for f in rep.figures],
                "claims": [c.__dict__ for c in rep.claims],
            }
        )
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=f"{preset.figure}: paper vs ours")
    table.add_column("quantity")
    table.add_column("paper", justify="right")
    table.add_column("ours", justify="right")
    for c in rep.claims:
        table.add_row(c.what, c.paper, c.ours)
    console.print(table)
    console.print(
        f"{rep.runs} runs ({rep.ran} new) in {_time(rep.wall_s)}; results {rep.db}", style="dim"
    )
    for f in rep.figures:
        console.print(f"figure: {f}", style="dim")


trace_app = typer.Typer(
    help="Bandwidth traces (mahimahi format).", no_args_is_help=True, add_completion=False
)
app.add_typer(trace_app, name="trace")

# The real-network side (crates/net's mpsched-emu): emulator, kernel baseline, fidelity.
from . import netcli  # noqa: E402

app.add_typer(netcli.emu_app, name="emu")
app.command("kernel")(netcli.kernel_command)
app.command("fidelity")(netcli.fidelity_command)
app.command("realrun")(netcli.realrun_command)

_TRACE_KINDS = ("constant", "steps", "random", "handover", "outage")


def _parse_opt(option: str, value: Optional[str], parse: Any) -> Optional[float]:
    if value is None:
        return None
    try:
        return parse(value)
    except ScenarioError as exc:
        raise ScenarioError(f"{option} {value}: {exc.message}") from None


@trace_app.command("gen")
def trace_gen_command(
    kind: Annotated[
        str,
        typer.Argument(metavar="KIND", help="constant | steps | random | handover | outage"),
    ],
    output: Annotated[
        Optional[Path],
        typer.Option(
            "-o", "--output", help="Trace file to write (default: stdout).", show_default=False
        ),
    ] = None,
    duration: Annotated[str, typer.Option("--duration", help="Trace length.")] = "60s",
    rate: Annotated[
        Optional[str],
        typer.Option(
            "--rate", help="constant/handover/outage: the rate, e.g. 10Mbit.", show_default=False
        ),
    ] = None,
    rates: Annotated[
        Optional[str],
        typer.Option(
            "--rates",
            help="steps: comma-separated rates, e.g. 5Mbit,10Mbit,20Mbit,30Mbit.",
            show_default=False,
        ),
    ] = None,
    step: Annotated[str, typer.Option("--step", help="steps: how long each rate holds.")] = "10s",
    mean: Annotated[
        Optional[str], typer.Option("--mean", help="random: mean rate.", show_default=False)
    ] = None,
    stddev: Annotated[
        Optional[str],
        typer.Option(
            "--stddev",
            help="random: standard deviation (a rate, or a percentage of the mean such as 50%).",
            show_default=False,
        ),
    ] = None,
    interval: Annotated[
        str, typer.Option("--interval", help="random: a new rate every INTERVAL.")
    ] = "1s",
    seed: Annotated[
        Optional[int],
        typer.Option(
            "--seed",
            min=0,
            help="random: the seed (default 1); steps: draw the "
            "rates at random with this seed instead of cycling.",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        Optional[str],
        typer.Option(
            "--every",
            help="Dips (handover/outage, or added to any kind): period; default 15s.",
            show_default=False,
        ),
    ] = None,
    length: Annotated[
        Optional[str], typer.Option("--length", help="Dip length (default 2s).", show_default=False)
    ] = None,
    factor: Annotated[
        Optional[float],
        typer.Option(
            "--factor",
            min=1.0,
            help="handover: rate divided by this during a dip (default 10).",
            show_default=False,
        ),
    ] = None,
    offset: Annotated[
        Optional[str],
        typer.Option(
            "--offset", help="First dip starts here (default: EVERY).", show_default=False
        ),
    ] = None,
) -> None:
    """Generate a synthetic bandwidth trace in mahimahi format (one ms timestamp per 1504-byte
    delivery opportunity), e.g.

      mpsched trace gen steps --rates 5Mbit,10Mbit,20Mbit,30Mbit --step 10s --seed 1 -o s.down

      mpsched trace gen handover --rate 20Mbit --every 15s --length 2s --factor 10 -o h.down

      mpsched trace gen random --mean 10Mbit --stddev 50% --interval 500ms --seed 3 -o r.down
    """
    from . import units

    if kind not in _TRACE_KINDS:
        raise ScenarioError(f'unknown trace kind "{kind}" (known: {", ".join(_TRACE_KINDS)})')
    time_s = lambda opt, v: _parse_opt(opt, v, units.parse_time)  # noqa: E731
    rate_bps = lambda opt, v: _parse_opt(opt, v, units.parse_rate)  # noqa: E731
    mean_bps = rate_bps("--mean", mean)
    stddev_bps = None
    if stddev is not None and stddev.strip().endswith("%"):
        if mean_bps is None:
            raise ScenarioError("--stddev as a percentage needs --mean")
        try:
            stddev_bps = float(stddev.strip()[:-1]) / 100 * mean_bps
        except ValueError:
            raise ScenarioError(f"--stddev {stddev}: expected a rate or a percentage") from None
    else:
        stddev_bps = rate_bps("--stddev", stddev)
    rate_list = None
    if rates is not None:
        rate_list = [rate_bps("--rates", r.strip()) for r in rates.split(",") if r.strip()]
    if kind == "random" and seed is None:
        seed = 1
    text = _trace_gen(
        kind,
        time_s("--duration", duration),
        rate_bps=rate_bps("--rate", rate),
        rates_bps=rate_list,
        step_s=time_s("--step", step),
        mean_bps=mean_bps,
        stddev_bps=stddev_bps,
        interval_s=time_s("--interval", interval),
        seed=seed,
        dip_every_s=time_s("--every", every),
        dip_length_s=time_s("--length", length),
        dip_offset_s=time_s("--offset", offset),
        dip_factor=factor,
    )
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        raise ScenarioError(f"-o {output}: cannot write: {exc.strerror or exc}") from None
    lines = text.count("\n")
    last = int(text.rsplit("\n", 2)[-2]) if lines else 0
    mean_rate = lines * 1504 * 8 / (last / 1e3) if last else 0.0
    sys.stderr.write(
        f"wrote {output}: {lines:,} opportunities over {last / 1e3:g} s, mean {_rate(mean_rate)}\n"
    )


def _trace_gen(kind: str, duration_s: Optional[float], **kwargs: Any) -> str:
    core = _engine.core()
    try:
        return core.trace_gen(kind, duration_s, **kwargs)
    except ValueError as exc:
        raise ScenarioError(f"trace gen {kind}: {exc}") from None


# ---- real proxy -------------------------------------------------------------------------------

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}

proxy_app = typer.Typer(
    help="The real multipath proxy (Guo et al., MobiCom 2017, §6): SOCKS5 in front, kernel TCP "
    "subflows behind, the same schedulers as the simulator.",
    no_args_is_help=True,
)
app.add_typer(proxy_app, name="proxy")


def _exec_proxy(mode: str, args: list[str]) -> None:
    from .netbin import find_binary

    binary = str(find_binary("mpsched-proxy"))
    sys.stdout.flush()
    sys.stderr.flush()
    # The binary owns its flags, errors (one line, status 2) and signals from here on.
    os.execv(binary, [binary, mode, *args])


@proxy_app.command("server", context_settings=_PASS_THROUGH)
def proxy_server_command(ctx: typer.Context) -> None:
    """mpsched proxy server --listen ADDR --psk-file F [--allow CIDR ...] [--stats FILE|-]"""
    _exec_proxy("server", list(ctx.args))


@proxy_app.command("client", context_settings=_PASS_THROUGH)
def proxy_client_command(ctx: typer.Context) -> None:
    """mpsched proxy client --server ADDR --path NAME=IFACE|SRCIP[,backup] ... --psk-file F
    [--socks 127.0.0.1:1080] [--policy FILE] [--fresh-subflows] [--early-data] [--stats FILE|-]"""
    _exec_proxy("client", list(ctx.args))


# ---- entry point ------------------------------------------------------------------------------


def _fail(message: str, status: int) -> int:
    # One line, whatever a lower layer put in the message.
    line = " ".join(str(message).splitlines()).strip()
    sys.stderr.write(f"mpsched: error: {line}\n")
    sys.stderr.flush()
    return status


def _is_cli_error(exc: BaseException) -> bool:
    # Typer has shipped with click's exceptions and, since 0.2x, with a vendored copy of click
    # whose classes are distinct: recognize both by their interface, not their class.
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def _cli_error(exc: Any) -> int:
    if type(exc).__name__ == "NoArgsIsHelpError":
        # Bare `mpsched`: the help text is the answer (rich has already printed it, plain
        # click puts it in the message).
        text = exc.format_message()
        if text.strip():
            typer.echo(text)
        return 0
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return _fail(exc.format_message() + hint, exc.exit_code)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit status (2 for user errors). Never prints a traceback."""
    command = typer.main.get_command(app)
    try:
        status = command.main(
            args=list(argv) if argv is not None else None,
            prog_name="mpsched",
            standalone_mode=False,
        )
    except ScenarioError as exc:
        return _fail(exc.message, 2)
    except _Stopped as exc:
        status = _fail("interrupted" + (f"; {exc.hint}" if exc.hint else ""), EXIT_INTERRUPTED)
        if argv is None:
            # The command line, not a caller in this process: everything worth keeping is
            # committed and flushed, so skip the interpreter's teardown (a few hundred ms on a
            # loaded machine) and honour "stops within a second".
            sys.stdout.flush()
            os._exit(status)
        return status
    except (ExtensionMissingError, RealRunError) as exc:
        # Not the user's input but the installation or the machine: a distinct status.
        return _fail(str(exc), 1)
    except (typer.Abort, KeyboardInterrupt) as exc:
        hint = getattr(exc, "hint", None)
        return _fail("interrupted" + (f"; {hint}" if hint else ""), EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (`mpsched compare --json | head`): not an error worth a line.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        if _is_cli_error(exc):
            return _cli_error(exc)
        if os.environ.get("MPSCHED_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} "
            "(set MPSCHED_DEBUG=1 to see the traceback)",
            1,
        )
    return status if isinstance(status, int) else 0
