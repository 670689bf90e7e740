"""Pages as HTML: one self-contained file for a results document (every page
a section, a hash router in between), and the pages ``tether view`` serves.
Styles and scripts are inlined; nothing is fetched from the network."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from ...diff import diff_trajectories
from ...events import Trajectory
from ...messages import canonical_json
from . import charts
from .data import Report, slug
from .transcript import Transcript, build

SHORT = {"pass": "P", "fail": "F", "unclear": "U", "unjudged": "J", "error": "E"}
NAV_REPORT = [("#overview", "Overview"), ("#guards", "What the guards changed"), ("#charts", "Charts")]


@functools.lru_cache(maxsize=1)
def env() -> Any:
    try:
        import jinja2
    except ImportError as exc:       # pragma: no cover - jinja2 is a dependency
        from ...errors import UsageError
        raise UsageError("the HTML report needs jinja2: pip install jinja2") from exc
    e = jinja2.Environment(loader=jinja2.PackageLoader("tether.report.html", "templates"),
                           autoescape=True, trim_blocks=True, lstrip_blocks=True,
                           undefined=jinja2.Undefined)
    e.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}
    e.globals["outcome_label"] = _outcome_label
    return e


def _outcome_label(value: str) -> str:
    """An outcome's words (tether.events.Outcome): ``ledger`` reads "answered from the ledger"."""
    from ...events import Outcome

    try:
        return Outcome(value).label
    except ValueError:
        return value


def _asset(name: str) -> str:
    return resources.files("tether.report.html").joinpath("templates", name).read_text(encoding="utf-8")


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("tether")
    except Exception:                 # pragma: no cover
        return "dev"


@functools.lru_cache(maxsize=1)
def csp() -> str:
    """The pages' Content-Security-Policy: our one script by its hash (no inline script
    of anyone else's runs, no 'unsafe-inline' for scripts), nothing fetched."""
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(_asset("app.js").encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            "form-action 'self'; base-uri 'none'")


def _page(template: str, **ctx: Any) -> str:
    # every value goes through the template engine's autoescape; data embedded for the
    # script is `tojson` in a <script type="application/json"> (never executed)
    return env().get_template(template).render(css=_asset("style.css"), js=_asset("app.js"), csp=csp(),
                                               version=_version(), **ctx)


def link(href: str, text: str) -> dict[str, str]:
    """A crumb part: the template escapes both (hrefs are built by tether, never a data URL scheme)."""
    return {"href": href, "text": text}


def transcript_extra(tr: Transcript, checkpoints: dict | None = None) -> dict[str, Any]:
    return {"timeline": charts.timeline(tr.spans, title=f"timeline of {tr.run_id}"),
            "steps": charts.step_bars(tr.steps, title=f"tokens per step of {tr.run_id}"),
            "checkpoints": checkpoints}


def diff_view(base: Trajectory, new: Trajectory, sid: str, title: str) -> dict[str, Any]:
    d = diff_trajectories(base, new)
    left_marks: dict[int, str] = {}
    right_marks: dict[int, str] = {}
    for c in d.step.changes:
        for k in range(c.count):
            if c.kind == "removed" and c.base_pos:
                left_marks[c.base_pos + k] = "del"
            elif c.kind == "added" and c.new_pos:
                right_marks[c.new_pos + k] = "add"
            else:
                if c.base_pos:
                    left_marks[c.base_pos + k] = "chg"
                if c.new_pos:
                    right_marks[c.new_pos + k] = "chg"
    for a in d.args.changes:
        left_marks.setdefault(a.base_pos, "chg")
        right_marks.setdefault(a.new_pos, "chg")
    left = [(i, c.tool, canonical_json(c.arguments), left_marks.get(i, "")) for i, c in enumerate(d.step.base_calls, 1)]
    right = [(i, c.tool, canonical_json(c.arguments), right_marks.get(i, "")) for i, c in enumerate(d.step.new_calls, 1)]
    return {"diff": d, "id": sid, "title": title, "left": left, "right": right}


def _chart_data(report: Report) -> dict[str, str]:
    runs = report.results.runs
    labels = [report.label(r) for r in runs]
    dims = [d for d, _ in report.dimensions]
    series = []
    for r, label in zip(runs, labels):
        values = []
        for d in dims:
            c = report.dim_cell(r, d)
            values.append({"rate": c["rate"], "low": c["low"], "high": c["high"], "n": c["n"]}
                          if c and c["rate"] is not None and c["low"] is not None else None)
        series.append((label, values))
    cost = [(label, [v.cost for v in report.views(r) if v.cost is not None]) for r, label in zip(runs, labels)]
    tokens = [(label, [float(v.tokens) for v in report.views(r) if v.tokens is not None])
              for r, label in zip(runs, labels)]
    steps = [(label, [float(v.trial.counters.steps) for v in report.views(r)]) for r, label in zip(runs, labels)]
    return {"legend": charts.legend(labels),
            "rates": charts.rate_bars(dims, series, title="rate per dimension with 95% Wilson intervals"),
            "cost": charts.distribution(cost, title="agent cost per trial", digits=4),
            "priced": any(c for _, cs in cost for c in cs),
            "tokens": charts.distribution(tokens, title="agent tokens per trial"),
            "steps": charts.distribution(steps, title="steps per trial")}


def _guard_rows(report: Report, diffs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for model, runs in report.guard_groups():
        rows = []
        for cid in report.case_ids:
            cells, verdicts = [], []
            for r in runs:
                views = list(report.views(r, cid))
                if not views:
                    cells.append(None)
                    continue
                case = views[0].case
                verdicts.append(str(case.verdict))
                n = len(views)
                costs = [v.cost for v in views if v.cost is not None]
                tokens = [v.tokens for v in views if v.tokens is not None]
                cells.append({"tokens": sum(tokens) / len(tokens) if tokens else None, "verdict": case.verdict, "statuses": ", ".join(sorted({v.trial.status for v in views})),
                              "calls": sum(v.trial.counters.tool_calls for v in views) / n,
                              "trips": sum(v.trial.counters.guard_trips for v in views) / n,
                              "cost": sum(costs) / len(costs) if costs else None})
            diff_id = None
            first = [next(iter(report.views(r, cid)), None) for r in runs[:2]]
            if all(v is not None and v.trajectory is not None for v in first):
                diff_id = slug("diff", model, runs[0].guards, runs[1].guards, cid)
                diffs.append(diff_view(first[0].trajectory, first[1].trajectory, diff_id,
                                       f"{cid} · {model} · guards {runs[0].guards} → {runs[1].guards} · trial 0"))
            rows.append({"case_id": cid, "cells": cells, "changed": len(set(verdicts)) > 1, "diff": diff_id})
        out[model] = rows
    return out


def render_report(report: Report, *, results_diff: Any = None, source: str = "",
                  checkpoints: dict[str, dict] | None = None, nav: list[tuple[str, str]] | None = None,
                  run_links: bool = False) -> str:
    """The whole report as one HTML document. ``run_links`` (the viewer): each trial's
    transcript is a link to its own page (``/run/ID``) instead of being inlined, so the
    page costs what the eval's results cost, not what every transcript does."""
    runs = report.results.runs
    diffs: list[dict[str, Any]] = []
    guard_rows = _guard_rows(report, diffs)
    extras = {} if run_links else {
        v.key: transcript_extra(v.transcript, (checkpoints or {}).get(v.run_id or ""))
        for v in report.trials.values() if v.transcript is not None}
    crumbs = {v.key: [link("#overview", "overview"), {"text": " › "}, link(f"#case-{v.case.case_id}", v.case.case_id),
                      {"text": f" › {v.run.model} · guards {v.run.guards} · trial {v.trial.trial} · verdict "},
                      {"bold": True, "text": str(v.trial.verdict)}]
              for v in report.trials.values()}
    nav = list(nav or NAV_REPORT) + ([("#diff", "Diff")] if results_diff is not None else [])
    return _page(
        "report.html.j2", report=report, title=f"{report.results.suite} report · tether", lang=report.lang,
        home="overview", nav=nav, subtitle=report.title, source=source,
        multi_trial=any(r.trials > 1 for r in runs),
        run_errors=[sum(1 for v in report.views(r) if v in report.errors()) for r in runs],
        run_cases=[{c.case_id for c in r.cases} for r in runs],
        case_lang={cid: _lang(report.case_info(cid).title) for cid in report.case_ids},
        errors=report.errors(), faults=report.faults(),
        all_metrics=report.run_metrics(), run_metrics=[report.run_metrics(r) for r in runs],
        guard_groups=report.guard_groups(), guard_rows=guard_rows, charts=_chart_data(report),
        extras=extras, diffs=diffs, crumbs=crumbs, short=SHORT, results_diff=results_diff, run_links=run_links,
    )


def _lang(text: str) -> str:
    from .transcript import language
    return language([text])


def render_run(t: Trajectory, *, nav: list[tuple[str, str]], checkpoints: dict | None = None,
               crumb: list[dict] | None = None) -> str:
    """One run's transcript as a page of its own (``tether view``)."""
    tr = build(t)
    return _page("run.html.j2", tr=tr, extra=transcript_extra(tr, checkpoints), title=f"{tr.run_id} · tether",
                 lang=tr.lang, home="run", nav=nav, subtitle=f"run {tr.run_id}", crumb=crumb)


def render_trajectory_diff(base: Trajectory, new: Trajectory, *, nav: list[tuple[str, str]]) -> str:
    b = base.started.run_id if base.started else "base"
    n = new.started.run_id if new.started else "new"
    d = diff_view(base, new, "diff", f"{b} → {n}")
    return _page("diffpage.html.j2", d=d, title=f"diff {b} → {n} · tether", lang="en", home="diff", nav=nav,
                 subtitle="diff")


def render_index(*, evals: list[dict], runs: list[dict], stats: dict[str, Any], store: str,
                 nav: list[tuple[str, str]], query: dict[str, str], page: dict[str, Any] | None = None,
                 evals_page: dict[str, Any] | None = None) -> str:
    return _page("index.html.j2", evals=evals, runs=runs, m=stats, store=store, title="runs · tether",
                 lang="en", home="index", nav=nav, subtitle=store, query=query, page=page, evals_page=evals_page)
