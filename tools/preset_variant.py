"""Run a paper preset with scenario changes, to see which change moved one of its results.

    .venv/bin/python tools/preset_variant.py dems-fig13-fastlte transport.cc=cubic-rfc9438 \
        -o /tmp/fastlte-rfc9438

Each `SECTION.KEY=VALUE` (or `path.NAME.KEY=VALUE`) is written into every sweep's base scenario
before the preset runs, over the preset's own value of that key (the R-TSC presets set
`transport.cc`, so changing it there changes their controller); the preset's axes still
override it. Prints the preset's claims as
`mpsched reproduce` does and writes its figures and database to OUT. Used for docs/experiments.md
("what moved and why"): e.g. `transport.cc=cubic-rfc9438` puts back the CUBIC of before 75756c8.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from mpsched import presets
from mpsched.scenario import parse_overrides


def _apply(scenario: dict, key: str, value: object) -> None:
    parts = key.split(".")
    if parts[0] == "path" and len(parts) == 3:
        path = next((p for p in scenario["path"] if p["name"] == parts[1]), None)
        if path is None:
            sys.exit(f"preset_variant: error: no path named {parts[1]!r}")
        path[parts[2]] = value
    elif len(parts) == 2:
        scenario.setdefault(parts[0], {})[parts[1]] = value
    else:
        sys.exit(f"preset_variant: error: {key}: expected SECTION.KEY or path.NAME.KEY")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("changes", nargs="+", metavar="KEY=VALUE")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("-j", "--jobs", type=int, default=None)
    args = ap.parse_args()
    changes = parse_overrides(args.changes)

    preset = presets.get(args.name)

    def sweeps(ctx):
        specs = preset.sweeps(ctx)
        for spec in specs:
            for key, value in changes:
                _apply(spec["scenario"], key, value)
        return specs

    presets.PRESETS[args.name] = dataclasses.replace(preset, sweeps=sweeps)
    rep = presets.reproduce(args.name, out=args.out, jobs=args.jobs, formats=("png",))
    for c in rep.claims:
        print(f"{c.what}\n    paper: {c.paper}\n    ours:  {c.ours}")
    print(f"{rep.runs} runs ({rep.ran} new) in {rep.wall_s:.1f} s; results {rep.db}")


if __name__ == "__main__":
    main()
