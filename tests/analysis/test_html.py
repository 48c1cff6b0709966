"""The HTML reports (``--html``, ``_repr_html_``): self-contained, deterministic, drawn from the
typed results; rendered in a real headless Chromium with no console message; and a clear
one-line error where matplotlib is missing. The browser tests skip where no Chromium is
installed (.ci/run installs Debian's)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import twin
from twin.analysis import html as html_report
from twin.cli import main
from twin.errors import InputError

matplotlib = pytest.importorskip("matplotlib", reason='the html extra (pip install ".[html]") is not installed')

SMALL = {"run.steps": 3, "algorithm.prompts_per_step": 32}
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.fixture(scope="module")
def report():
    return twin.simulate("grpo-8b-disaggregated", **SMALL)


@pytest.fixture(scope="module")
def curve():
    return twin.scale("grpo-8b-disaggregated", SMALL, gpus="16,32", workers=1)


@pytest.fixture(scope="module")
def plan():
    return twin.plan_budget("grpo-8b-disaggregated", SMALL, gpus=16, top=3, workers=1)


@pytest.fixture(scope="module")
def grid():
    return twin.sweep("grpo-8b-disaggregated", SMALL, grid=["placement.rollout.gpus=8,16"], workers=1)


def _external_references(page: str) -> list[str]:
    """Anything the page would fetch: src/href to a URL, a stylesheet import, a script."""
    refs = re.findall(r'(?:src|href)\s*=\s*["\']([^"\'#][^"\']*)', page)
    refs = [r for r in refs if not r.startswith("data:")]
    return refs + re.findall(r"@import|<script|<link\b", page)


def test_run_page_has_every_chart_and_fetches_nothing(report):
    page = report.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") >= 4  # breakdown, links, engine timeline, long tail
    for heading in ("Step breakdown", "Links: critical path and load", "Rollout engines", "Assumed"):
        assert heading in page
    assert report.data.assumptions[0]["field"] in page  # the assumptions beside the charts
    assert _external_references(page) == []


def test_the_same_report_gives_the_same_page(report):
    assert report.to_html() == report.to_html()


def test_engine_spans_are_the_rollout_engines_of_the_plan(report):
    engines = html_report.engine_spans(report.result)
    assert len(engines) == report.plan.rollout_engines
    assert all(e > s for spans in engines.values() for s, e, _ in spans)


def test_scale_page_names_the_threshold_and_each_binding_link(curve):
    page = curve.to_html()
    assert "threshold" in page and page.count("<svg") >= 1
    for p in curve.points:
        assert f"binding: {p.binding_link}" in page or p.report is None
    assert _external_references(page) == []


def test_plan_and_sweep_pages_show_every_row(plan, grid):
    page = plan.to_html()
    for r in plan.ranked:
        assert f"#{r.rank} {r.placement_words}" in page or r.rank > 3
    assert "Assumed" in page and _external_references(page) == []
    page = grid.to_html()
    assert page.count("<svg") == 1 and "rollout.gpus=16" in page and _external_references(page) == []
    assert len(plan.to_frame()) == len(plan.ranked) and list(grid.to_frame().columns[:1]) == ["placement.rollout.gpus"]
    assert "\n" not in repr(plan)
    # the JSON names the validation sources too
    assert plan.to_dict()["trust"] == plan.best.report.trust and plan.to_dict()["trust"]


def test_notebook_views(report, curve):
    pd = pytest.importorskip("pandas")
    assert report._repr_html_().startswith('<div class="twin-report">')
    assert curve._repr_html_().startswith('<div class="twin-report">')
    frame = report.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(report.steps)
    assert {"step_s", "binding_link"} <= set(frame.columns)
    assert list(curve.to_frame()["gpus"]) == [16, 32]
    assert report.render().startswith("Scenario grpo-8b-disaggregated")
    # a notebook's report.plan is one line, not the profiles' kilobytes
    assert "\n" not in repr(report.plan) and len(repr(report.plan)) < 200
    assert "\n" not in repr(report) and len(repr(report)) < 200


def test_without_matplotlib_a_notebook_shows_the_text(monkeypatch, report, curve):
    import twin.runner

    monkeypatch.setattr(twin.runner, "available", lambda: False)
    monkeypatch.setattr(html_report, "available", lambda: False)
    assert report._repr_html_().startswith("<pre>Scenario grpo-8b-disaggregated")
    assert curve._repr_html_().startswith("<pre>Scaling grpo-8b-disaggregated")


def test_without_matplotlib_the_cli_says_what_to_install(monkeypatch, capsys, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(InputError, match=re.escape('pip install ".[html]"')):
        html_report.require_matplotlib()
    assert main(["run", "grpo-8b-disaggregated", "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("twin: error:") and 'pip install ".[html]"' in err[0]
    assert not (tmp_path / "r.html").exists()  # said before anything was simulated or written


def test_cli_writes_the_page(tmp_path, capsys):
    out = tmp_path / "scale.html"
    assert main(["scale", "grpo-8b-disaggregated", "--gpus", "16,32", "--workers", "1",
                 *[f"--set={k}={v}" for k, v in SMALL.items()], "--html", str(out)]) == 0
    assert out.read_text().count("<svg") >= 1
    assert "Scaling grpo-8b-disaggregated" in capsys.readouterr().out  # the text still printed


# ----------------------------------------------------------------------------- a real browser
def console_messages(page: Path, screenshot: Path | None = None) -> list[str]:
    """Open ``page`` in headless Chromium with the network unreachable and return what its
    console said (errors, warnings, failed loads); ``screenshot``: also write a PNG of it."""
    args = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
            "--window-size=1200,2400"]
    args += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run([*args, page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


needs_browser = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)")


@needs_browser
def test_the_browser_check_catches_a_console_error(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><img src="https://example.invalid/x.png"><script>console.error("boom")</script>'
                   "</body></html>")
    assert any("boom" in m for m in console_messages(bad))


@needs_browser
@pytest.mark.parametrize("which", ["run", "scale", "plan", "sweep"])
def test_pages_render_in_chromium_without_console_messages(which, request, tmp_path):
    result = request.getfixturevalue({"run": "report", "scale": "curve", "plan": "plan", "sweep": "grid"}[which])
    page = tmp_path / f"{which}.html"
    page.write_text(result.to_html())
    shot = tmp_path / f"{which}.png"
    assert console_messages(page) == []
    assert console_messages(page, shot) == []
    assert shot.stat().st_size > 10_000  # a page was drawn, not a blank
