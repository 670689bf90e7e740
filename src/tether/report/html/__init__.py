"""The HTML report and the pages ``tether view`` serves (docs/report.md).

    from tether.report.html import write_report
    write_report("r.json", "report.html")      # one self-contained file, works from file://
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .data import Report, build_report
from .render import render_index, render_report, render_run, render_trajectory_diff


def write_report(results_path: str | Path, out: str | Path, *, store: Any = None,
                 against: str | Path | None = None) -> Path:
    """Read a results document, load its runs and write the report to ``out``."""
    from ...evals.results import Results

    results = Results.load(results_path)
    report = build_report(results, results_path=results_path, store=store)
    results_diff = None
    if against is not None:
        from ...diff import diff_results, load_results

        base, new = load_results(against), load_results(results_path)
        results_diff = []
        for run in results.runs:      # each run against the base's run of the same model, else the same guards
            same = [r for r in base.results.runs if r.model == run.model and r.guards == run.guards] or \
                   [r for r in base.results.runs if r.guards == run.guards]
            if len(same) == 1:
                results_diff.append(diff_results(base, new, base_run=same[0].model, base_guards=same[0].guards,
                                                 new_run=run.model, new_guards=run.guards))
    html = render_report(report, results_diff=results_diff, source=str(results_path))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out


__all__ = ["Report", "build_report", "render_index", "render_report", "render_run", "render_trajectory_diff",
           "write_report"]
