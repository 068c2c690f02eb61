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
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from . import _engine, runner
from .errors import ExtensionMissingError, ScenarioError
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
    return Console(highlight=False)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


# ---- human-readable quantities (tables only; JSON carries plain SI numbers) ----------------


def _time(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
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
def run_command(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="Scenario TOML file.")],
    scheduler: Annotated[
        str, typer.Option("-s", "--scheduler", help="Scheduler name (see `schedulers`).")
    ] = "minrtt",
    overrides: SetOption = None,
    seed: SeedOption = 1,
    as_json: JsonOption = False,
) -> None:
    """Simulate one run of SCENARIO with one scheduler."""
    resolved = runner.resolve_scenario(scenario, overrides)
    result = runner.run(resolved, scheduler=scheduler, seed=seed)
    if as_json:
        _print_json(result)
    else:
        _show_run(_console(), result, resolved, scenario, scheduler, seed)


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
    reps: Annotated[int, typer.Option("--reps", min=1, help="Seeds per scheduler.")] = 10,
    seed: SeedOption = 1,
    as_json: JsonOption = False,
) -> None:
    """Run schedulers over several seeds and compare their medians and p90s."""
    resolved = runner.resolve_scenario(scenario, overrides)
    report = runner.compare(resolved, schedulers=schedulers, reps=reps, seed=seed)
    if as_json:
        _print_json(report)
        return
    label = scenario if scenario is not None else DEFAULT_SOURCE
    _show_compare(_console(), report["summary"], resolved, label, reps, seed)


def _show_compare(
    console: Console,
    summary: Mapping[str, Mapping[str, Any]],
    scenario: Mapping[str, Any],
    label: str,
    reps: int,
    seed: int,
) -> None:
    names = [p["name"] for p in scenario["paths"]]

    def stat(metrics: Mapping[str, Any], key: str, which: str = "median") -> Any:
        return metrics.get(key, {}).get(which)

    oracle = stat(summary.get("oracle", {}), "download_time_s")
    table = Table(
        title=f"{label}: {reps} seeds per scheduler ({seed}..{seed + reps - 1})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("scheduler")
    for header in ("download p50", "download p90", "gap p50", "reinjected p50"):
        table.add_column(header, justify="right")
    table.add_column("bytes by path p50")
    if oracle:
        table.add_column("vs oracle", justify="right")
    for scheduler, metrics in summary.items():
        download = stat(metrics, "download_time_s")
        split = _per_path(stat(metrics, "bytes_by_path"), names)
        row = [
            scheduler,
            _time(download),
            _time(stat(metrics, "download_time_s", "p90")),
            _time(stat(metrics, "completion_gap_s")),
            _bytes(stat(metrics, "reinjected_bytes")),
            ", ".join(f"{p} {_bytes(v)}" for p, v in split.items()) or "-",
        ]
        if oracle:
            row.append(f"{download / oracle:.2f}x" if download is not None else "-")
        table.add_row(*row)
    console.print(table)


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
def bench_command() -> None:
    """Measure simulator speed on the DESIGN.md benchmark scenarios."""
    from . import bench

    bench.run()


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
    except ExtensionMissingError as exc:
        # Not the user's input but the installation: a distinct status.
        return _fail(str(exc), 1)
    except (typer.Abort, KeyboardInterrupt):
        return _fail("interrupted", 130)
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
