"""`make readme`: regenerate every number in README.md from a fresh run of this engine.

The README's measured blocks sit between `<!-- readme:NAME -->` and `<!-- /readme:NAME -->`
markers; this rewrites them. `--check` exits 1 (and prints a diff) when the README is stale.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MPSCHED = [sys.executable, "-m", "mpsched"]


def cli(*args: str) -> str:
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1", TERM="dumb")
    proc = subprocess.run([*MPSCHED, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        sys.exit(f"readme: mpsched {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def compare_block() -> str:
    text = "\n".join(line.rstrip() for line in cli("compare").splitlines())
    return f"```\n{text.strip(chr(10))}\n```"


def findings_block() -> str:
    summary = json.loads(cli("compare", "--json"))["summary"]

    def med(name: str, key: str) -> float:
        return summary[name][key]["median"]

    oracle = med("oracle", "download_time_s")
    minrtt, demsf = med("minrtt", "download_time_s"), med("dems-f", "download_time_s")
    return (
        f"MinRTT leaves a {med('minrtt', 'completion_gap_s') * 1e3:.0f} ms gap between the last "
        f"arrivals on WiFi and LTE and takes {minrtt / oracle - 1:.0%} longer than the best fixed "
        f"split; DEMS-F finishes both subflows within "
        f"{med('dems-f', 'completion_gap_s') * 1e3:.1f} ms of each other, within "
        f"{abs(demsf / oracle - 1):.1%} of the oracle's time, reinjecting "
        f"{med('dems-f', 'reinjected_bytes') / 1024:.1f} KiB where DEMS-S reinjects "
        f"{med('dems-s', 'reinjected_bytes') / 1024:.0f} KiB."
    )


BLOCKS = {"compare": compare_block, "findings": findings_block}


def render(text: str) -> str:
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- readme:{name} -->\n).*?(\n<!-- /readme:{name} -->)", re.S)
        if not pattern.search(text):
            sys.exit(f"readme: README.md has no <!-- readme:{name} --> block")
        body = make()
        text = pattern.sub(lambda m, body=body: m[1] + body + m[2], text)
    return text


def main() -> int:
    old = README.read_text(encoding="utf-8")
    new = render(old)
    if "--check" in sys.argv:
        if new != old:
            sys.stdout.writelines(
                difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True), "README.md", "fresh"
                )
            )
            print("readme: README.md is stale; run `make readme`", file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    print("readme: README.md regenerated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
