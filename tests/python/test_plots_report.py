"""Figures, per-packet trace files and the HTML report, from real (small) runs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import mpsched
from conftest import EXAMPLES, run_cli

pytest.importorskip("mpsched._core")

from mpsched import cli, plots, traces  # noqa: E402 - after the skip

SWEEP = {
    "scenario": {
        "path": [
            {"name": "wifi", "rate": "7040kbit", "rtt": "50ms", "queue": "50ms"},
            {"name": "lte", "rate": "9185kbit", "rtt": "70ms", "queue": "500ms"},
        ],
        "workload": {"kind": "chunk", "size": "256KiB"},
    },
    "schedulers": ["minrtt", "redundant", "oracle"],
    "reps": 2,
    "axes": {
        "path.wifi.rate": ["2.5Mbit", "7.5Mbit", "12.5Mbit"],
        "path.lte.rate": ["2.5Mbit", "7.5Mbit"],
    },
}


@pytest.fixture(scope="module")
def results():
    return mpsched.sweep(SWEEP, name="plots")


@pytest.fixture(scope="module")
def trace():
    return mpsched.run_traced(EXAMPLES / "wifi-lte.toml", scheduler="minrtt", seed=1)


def assert_drawn(fig, min_colour=0.003):
    """Not blank: the rendered image varies, and a fair share of its pixels carry colour (data
    is drawn in saturated colours; axes, text and background are grey)."""
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(float)
    plots.close_all()
    assert image.std() > 10, "image is (nearly) uniform"
    non_white = (image.min(axis=2) < 240).mean()
    coloured = ((image.max(axis=2) - image.min(axis=2)) > 60).mean()
    assert non_white > 0.02, non_white
    assert coloured > min_colour, coloured


def test_download_cdf_and_box(results):
    assert_drawn(plots.download_cdf(results))
    assert_drawn(plots.download_box(results))
    assert_drawn(plots.download_box(results, group="path.wifi.rate"))


def test_completion_gap(results):
    assert_drawn(plots.completion_gap(results[results["scheduler"] != "oracle"]))


def test_reduction_heatmap_over_two_axes(results):
    table = plots.reduction_table(results, "path.wifi.rate", "path.lte.rate", "oracle", "minrtt")
    assert table.shape == (2, 3)
    assert np.isfinite(table.to_numpy(dtype=float)).all()
    assert_drawn(
        plots.reduction_heatmap(results, "path.wifi.rate", "path.lte.rate", "oracle", "minrtt")
    )


def test_metric_and_reduction_bars(results):
    assert_drawn(plots.metric_bars(results, "download_time_s", group="path.wifi.rate"))
    assert_drawn(
        plots.reduction_bars(results, "minrtt", group="path.wifi.rate", facet="path.lte.rate")
    )


def test_sequence_diagram(trace):
    assert len(trace.events) > 100
    assert_drawn(plots.sequence_diagram(trace))


def test_sequence_diagram_marks_reinjections():
    tr = mpsched.run_traced(EXAMPLES / "wifi-lte.toml", scheduler="redundant", seed=1)
    fig = plots.sequence_diagram(tr)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plots.close_all()
    assert "wifi" in labels and "lte" in labels
    kinds = set(tr.events["kind"])
    if "reinject" in kinds:
        assert "reinjection" in labels


def test_cwnd_and_owd_over_time(trace):
    assert_drawn(plots.cwnd_owd(trace))


def test_ooo_delay_cdf(trace):
    delays = traces.ooo_delays(trace.events)
    assert len(delays) > 0 and (delays["delay_s"] >= 0).all()
    # The engine's own median, from its histogram, agrees with the trace's to within 5 ms.
    assert abs(delays["delay_s"].median() - trace.result["ooo_delay_p50_s"]) < 5e-3
    assert_drawn(plots.ooo_delay_cdf([trace]))


def test_save_writes_png_and_svg(tmp_path, results):
    paths = plots.save(plots.download_cdf(results), tmp_path / "fig" / "cdf")
    assert sorted(p.name for p in paths) == ["cdf.png", "cdf.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in paths[1].read_text()


# ---- trace files -------------------------------------------------------------------------------


def test_run_trace_writes_parquet_events(tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "t.parquet"
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--trace", out, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    table = pq.read_table(out)
    assert table.column_names == ["time_s", "side", "path", "path_name", "kind", "dsn", "len"]
    kinds = set(table.column("kind").to_pylist())
    assert {"send", "arrive", "deliver"} <= kinds
    assert json.loads(table.schema.metadata[b"mpsched.result"]) == result
    back = traces.read(out)
    assert back.result == result and len(back.events) == table.num_rows
    # Per-path samples (every 10 ms by default) beside it.
    samples = pq.read_table(tmp_path / "t.samples.parquet")
    assert samples.column_names == ["time_s", "path", "path_name", "cwnd_bytes", "srtt_s", "owd_s"]
    assert set(samples.column("path_name").to_pylist()) == {"wifi", "lte"}
    assert samples.num_rows >= 2 * int(result["sim_time_s"] / 0.01)


def test_samples_go_to_a_second_file(tmp_path, trace):
    import pandas as pd

    samples = pd.DataFrame(
        {
            "time_s": [0.1, 0.1, 0.2],
            "path": np.array([0, 1, 0], dtype=np.uint8),
            "path_name": ["wifi", "lte", "wifi"],
            "cwnd_bytes": np.array([14480, 14480, 28960], dtype=np.uint64),
            "srtt_s": [0.05, 0.07, 0.06],
            "owd_s": [0.025, 0.035, 0.03],
        }
    )
    with_samples = traces.Trace(result=trace.result, events=trace.events, samples=samples)
    written = traces.write(with_samples, tmp_path / "x.parquet")
    assert [p.name for p in written] == ["x.parquet", "x.samples.parquet"]
    back = traces.read(tmp_path / "x.parquet")
    assert back.samples["cwnd_bytes"].tolist() == [14480, 14480, 28960]
    assert_drawn(plots.cwnd_owd(back))
    # Written again without samples, the stale samples file goes.
    without = traces.Trace(result=trace.result, events=trace.events, samples=samples.iloc[0:0])
    traces.write(without, tmp_path / "x.parquet")
    assert not (tmp_path / "x.samples.parquet").exists()


# ---- report ------------------------------------------------------------------------------------


def _self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:|//|file:)""", page)
    assert "<link" not in page


def test_report_from_a_sweep_database(tmp_path):
    db = tmp_path / "r.db"
    mpsched.sweep(SWEEP, db=db, name="plots")
    out = tmp_path / "report.html"
    assert cli.main(["report", str(db), "-o", str(out)]) == 0
    page = out.read_text()
    _self_contained(page)
    assert page.count("<svg") >= 6  # CDF, box, gap, heat maps, sequence diagrams, ...
    for text in ("Sweep plots", "Scenario", "Summary", "minrtt", "oracle", "download p50"):
        assert text in page, text
    assert "sender: transmissions" in page  # a traced re-run's sequence diagram


def test_report_from_a_trace_file(tmp_path, trace):
    traces.write(trace, tmp_path / "t.parquet")
    out = tmp_path / "t.html"
    assert cli.main(["report", str(tmp_path / "t.parquet"), "-o", str(out)]) == 0
    page = out.read_text()
    _self_contained(page)
    assert page.count("<svg") == 3
    assert "download_time_s" in page


def test_report_of_a_missing_file_is_one_line(tmp_path):
    proc = run_cli("report", tmp_path / "none.db", "-o", tmp_path / "x.html")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"mpsched: error: {tmp_path / 'none.db'}: no such file"
