"""What users read can be followed: no citation by our private file names ("seed 000": cite
"Guo et al., MobiCom 2017", docs/references.md) and no relative link that a clone lacks."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

USER_FACING = [
    *sorted((ROOT / "python" / "mpsched").rglob("*.py")),
    *sorted((ROOT / "python" / "mpsched").rglob("*.pyi")),
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "README.md",
]
PRIVATE = re.compile(r"seeds? 0\d\d", re.IGNORECASE)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_citations(path):
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert hits == []


def test_scheduler_listing_and_presets_cite_papers():
    pytest.importorskip("mpsched._core")
    from mpsched import _engine
    from mpsched.presets import PRESETS

    texts = [ref for _, ref in _engine.schedulers()]
    for p in PRESETS.values():
        texts += [p.rebuilds, p.figure, p.caption, *p.assumptions]
    assert [t for t in texts if PRIVATE.search(t)] == []


@pytest.mark.parametrize(
    "path",
    [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_relative_links_resolve_in_a_clone(path):
    broken = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        file = (path.parent / target.split("#", 1)[0]).resolve()
        inside = ROOT.resolve() in file.parents or file == ROOT.resolve()
        if not inside or not file.exists():
            broken.append(target)
    assert broken == []
