"""Without the plots extra (matplotlib) a sweep still writes its CSV, JSON and HTML; the page and the error name
the extra to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import eval.report
from eval.report import PLOTS_MISSING, plot_png, write_outputs
from tests.unit.eval.test_report import _report


def test_reports_are_written_without_the_plot_when_matplotlib_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eval.report, "plots_available", lambda: False)
    paths = write_outputs(_report(), tmp_path)
    assert [p.name for p in paths] == ["sweep.csv", "sweep.json", "sweep.html"]
    assert not (tmp_path / "sweep.png").exists()
    page = (tmp_path / "sweep.html").read_text(encoding="utf-8")
    assert "pip install &#x27;deja[plots]&#x27;" in page and "<img" not in page


def test_plotting_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'deja\[plots\]'"):
        plot_png(_report())
    assert "deja[plots]" in PLOTS_MISSING
