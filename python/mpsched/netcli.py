"""The command line of the real-network side: `mpsched emu`, `mpsched kernel`,
`mpsched fidelity` (registered by cli.py). The work is done by `mpsched-emu` (crates/net)."""

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from . import runner
from .errors import ScenarioError
from .kernel import emu, kernel_runs, kernel_summary

# Options `kernel` and `realrun` share.
_EmuSeed = Annotated[int, typer.Option("--seed", min=0, help="Seed of the emulator's loss draws.")]
_JsonRuns = Annotated[bool, typer.Option("--json", help="One JSON object: runs and summary.")]

emu_app = typer.Typer(
    help="The link emulator: a scenario's paths as network namespaces (docs/emulator.md).",
    no_args_is_help=True,
)

SetOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set", metavar="K=V", help="Override a scenario key (repeatable).", show_default=False
    ),
]


def _exit(status: int) -> None:
    if status != 0:
        raise typer.Exit(status)


@emu_app.command("up")
def emu_up(
    scenario: Annotated[
        Optional[str],
        typer.Argument(metavar="[SCENARIO]", help="Scenario TOML file (default: DEMS WiFi/LTE)."),
    ] = None,
    overrides: SetOption = None,
    instance: Annotated[
        Optional[str],
        typer.Option("--id", help="Instance id (1-8 letters/digits).", show_default=False),
    ] = None,
    detach: Annotated[bool, typer.Option("--detach", "-d", help="Run in the background.")] = False,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the random-loss draws.")] = 1,
    transport: Annotated[
        bool,
        typer.Option(
            "--transport",
            help="Also set SCENARIO's transport table on the end hosts (sysctls, route "
            "attributes), as `mpsched kernel` does, for the TCP connections of programs you run "
            "there.",
        ),
    ] = False,
) -> None:
    """Create namespaces mps-ID-{c,r,s} and emulate SCENARIO's paths until Ctrl-C (or `down`).

    Client 10.200.N.1 in mps-ID-c, server 10.200.N.2 in mps-ID-s, path N in scenario order."""
    resolved = runner.resolve_scenario(scenario, overrides)
    args = ["up", "-", "--seed", str(seed)]
    if instance:
        args += ["--id", instance]
    if detach:
        args.append("--detach")
    if transport:
        args.append("--transport")
    _exit(emu(args, resolved))


@emu_app.command("down")
def emu_down(
    instance: Annotated[
        Optional[str], typer.Argument(metavar="[ID]", help="Instance (default: all).")
    ] = None,
) -> None:
    """Stop emulator instances and remove their namespaces (also after a crash or kill -9)."""
    _exit(emu(["down", instance] if instance else ["down", "--all"]))


@emu_app.command("check")
def emu_check(
    instance: Annotated[
        Optional[str], typer.Argument(metavar="[ID]", help="Instance (default: the only one).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line.")] = False,
) -> None:
    """Measure delay, rate, loss and the queue held per path and direction, against the scenario."""
    args = ["check"] + ([instance] if instance else []) + (["--json"] if as_json else [])
    _exit(emu(args))


@emu_app.command("list")
def emu_list() -> None:
    """Recorded emulator instances."""
    _exit(emu(["list"]))


def kernel_command(
    scenario: Annotated[
        Optional[str],
        typer.Argument(metavar="[SCENARIO]", help="Scenario TOML file (default: DEMS WiFi/LTE)."),
    ] = None,
    overrides: SetOption = None,
    mode: Annotated[
        str, typer.Option("--mode", help="mptcp, or tcp:PATH for single-path TCP.")
    ] = "mptcp",
    reps: Annotated[
        int, typer.Option("--reps", min=1, help="Downloads (fresh connection each).")
    ] = 5,
    seed: _EmuSeed = 1,
    as_json: _JsonRuns = False,
) -> None:
    """Run SCENARIO's workload over real Linux TCP/MPTCP on the emulated paths."""
    from .cli import _console, _print_json, _show_compare

    resolved = runner.resolve_scenario(scenario, overrides)
    runs = kernel_runs(resolved, mode, reps=reps, seed=seed, progress=not as_json)
    label = runs[0]["scheduler"] if runs else mode
    summary = {label: kernel_summary(runs)}
    if as_json:
        _print_json({"runs": runs, "summary": summary, "scenario": resolved})
        return
    times = ", ".join(f"{r['download_time_s']:.3f}" for r in runs)
    console = _console()
    _show_compare(
        console,
        summary,
        resolved,
        scenario or "default scenario",
        reps,
        seed,
        title=f"{label} on {scenario or 'the default scenario'}: {reps} downloads",
    )
    console.print(f"download times (s, from connect): {times}")


def _fmt_pct(v: Any) -> str:
    return "-" if v is None else f"{v:+.1f}%"


def _fmt_ci(ci: Any) -> str:
    return "-" if not ci else f"{ci[0]:+.1f} {ci[1]:+.1f}%"


def fidelity_command(
    quick: Annotated[
        bool, typer.Option("--quick", help="One DEMS cell (MPTCP and WiFi TCP).")
    ] = False,
    reps: Annotated[
        Optional[int],
        typer.Option(
            "--reps",
            min=1,
            help="Kernel downloads per cell (default 5: the median of two is noise).",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 1,
    random_reps: Annotated[
        int,
        typer.Option(
            "--random-reps",
            min=1,
            help="Downloads per side in cells with random loss (at least --reps): the median "
            "of five is noise there.",
        ),
    ] = 20,
    db: Annotated[
        Path, typer.Option("--db", help='Results store to append the runs to (sweep "fidelity").')
    ] = Path("fidelity.db"),
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object with every row.")
    ] = False,
) -> None:
    """Simulated vs real Linux (on the emulator), with the % error per cell."""
    from . import fidelity
    from .cli import _console, _open_store, _print_json

    n = reps if reps is not None else 5
    console = _console()
    table = Table(
        box=box.SIMPLE_HEAD, pad_edge=False, title="simulated vs Linux (median of kernel runs)"
    )
    for h in (
        "profile",
        "mode",
        "sim",
        "kernel",
        "err",
        "err 95% CI",
        "bytes err (per path)",
        "gap sim",
        "gap kernel",
        "gap err",
        "kernel modes",
        "ok",
    ):
        table.add_column(
            h,
            justify="left"
            if h in ("profile", "mode", "bytes err (per path)", "kernel modes")
            else "right",
            # Wrapped, never cut with an ellipsis: a narrow terminal must not hide a number.
            overflow="fold",
        )

    def add(row: dict[str, Any]) -> None:
        ok = fidelity.passes(row)
        groups = row["kernel_modes"]
        mode_text = " | ".join(
            f"{g['low_s']:.3f}-{g['high_s']:.3f} s ({g['runs']})" for g in groups
        )
        if row["sim_mode"] is not None:
            mode_text += (
                f"; sim in mode {row['sim_mode'] + 1} "
                f"({_fmt_pct(row.get('sim_mode_err_pct'))} of its median)"
            )
        table.add_row(
            row["profile"],
            row["mode"] + (f" [{row['sim_scheduler']}]" if row["mode"] == "mptcp" else ""),
            f"{row['sim_download_s']:.3f} s",
            f"{row['kernel_download_s']:.3f} s",
            _fmt_pct(row["download_err_pct"]),
            _fmt_ci(row.get("download_err_ci_pct")),
            ", ".join(f"{k} {_fmt_pct(v)}" for k, v in row["bytes_err_pct"].items()),
            f"{row['gap_sim_s'] * 1e3:.0f} ms",
            f"{row['gap_kernel_s'] * 1e3:.0f} ms",
            f"{row['gap_err_ms']:+.0f} ms",
            mode_text,
            "".join("y" if ok[k] else "n" for k in ("download", "bytes", "gap")),
        )
        if not as_json:
            sys.stderr.write(
                f"fidelity: {row['profile']} {row['mode']}: sim {row['sim_download_s']:.3f} s, "
                f"kernel {row['kernel_download_s']:.3f} s ({_fmt_pct(row['download_err_pct'])})\n"
            )

    rows, note = fidelity.run(quick, n, seed, add, progress=False, random_reps=random_reps)
    with _open_store(db) as store:
        fidelity.store_rows(store, rows)
    if as_json:
        _print_json({"rows": rows, "note": note, "thresholds": fidelity.THRESHOLDS, "db": str(db)})
        return
    console.print(table)
    console.print(
        "ok = download within 5%, bytes per path within 10%, completion gap within 20 ms "
        "(issue 9); kernel download time is from connect(), the simulator's as it reports it."
    )
    if note:
        console.print(note)
    console.print(f'runs stored in {db} (sweep "fidelity")', style="dim")


def compare_kernel_rows(resolved: dict[str, Any], reps: int, seed: int) -> dict[str, Any]:
    """The `linux-mptcp` row (and nothing else) for `compare --kernel`."""
    if len(resolved["paths"]) < 2:
        raise ScenarioError("compare --kernel: MPTCP needs at least two paths")
    runs = kernel_runs(resolved, "mptcp", reps=reps, seed=seed, progress=True)
    return {"linux-mptcp": kernel_summary(runs)}


def realrun_command(
    scenario: Annotated[
        Optional[str],
        typer.Argument(metavar="[SCENARIO]", help="Scenario TOML file (default: DEMS WiFi/LTE)."),
    ] = None,
    scheduler: Annotated[
        str, typer.Option("-s", "--scheduler", help="Scheduler the proxy runs.")
    ] = "dems-f",
    overrides: SetOption = None,
    reps: Annotated[int, typer.Option("--reps", min=1, help="Measured downloads.")] = 5,
    fresh_subflows: Annotated[
        bool,
        typer.Option(
            "--fresh-subflows",
            help="New subflows per download (as MPTCP's fresh connections); default: warm "
            "shared subflows, warmed by one unmeasured download.",
        ),
    ] = False,
    early_data: Annotated[
        bool,
        typer.Option(
            "--early-data",
            help="The client proxy answers SOCKS5 at once and sends the request behind the "
            "OPEN, saving a round trip per download.",
        ),
    ] = False,
    seed: _EmuSeed = 1,
    as_json: _JsonRuns = False,
) -> None:
    """The workload through the real proxy (SOCKS5, kernel TCP subflows) on the emulator (root)."""
    from .cli import _console, _print_json, _show_compare
    from .realrun import realrun, realrun_summary

    resolved = runner.resolve_scenario(scenario, overrides)
    runs = realrun(
        resolved, scheduler, reps=reps, seed=seed, fresh_subflows=fresh_subflows,
        progress=not as_json, early_data=early_data,
    )  # fmt: skip
    label = f"{scheduler}@proxy" + ("-fresh" if fresh_subflows else "")
    label += "-early" if early_data else ""
    summary = {label: realrun_summary(runs)}
    if as_json:
        _print_json({"runs": runs, "summary": summary, "scenario": resolved})
        return
    console = _console()
    where = scenario or "the default scenario"
    _show_compare(
        console, summary, resolved, scenario or "default scenario", reps, seed,
        title=f"{label} on {where}: {reps} downloads",
    )  # fmt: skip
    times = ", ".join(f"{r['download_time_s']:.3f}" for r in runs)
    console.print(f"download times (s, from the SOCKS5 connect): {times}; bytes checked")


def compare_real_rows(
    resolved: dict[str, Any], schedulers: list[str], reps: int, seed: int
) -> dict[str, Any]:
    """`compare --real`: each scheduler on the real proxy (warm subflows) and `linux-mptcp`."""
    from .realrun import realrun, realrun_summary

    if len(resolved["paths"]) < 2:
        raise ScenarioError("compare --real: multipath needs at least two paths")
    rows = {}
    for s in schedulers:
        rows[f"{s}@proxy"] = realrun_summary(realrun(resolved, s, reps=reps, seed=seed))
    rows["linux-mptcp"] = kernel_summary(kernel_runs(resolved, "mptcp", reps=reps, seed=seed))
    return rows
