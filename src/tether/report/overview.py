"""One line per eval, for lists of evals (``tether view``'s index, ``tether runs evals``).

Read from the eval row (its config: the subjects and guard settings), a count of
its runs by status (one grouped query a page) and, once finished, its results
document: per subject, the rate of each dimension in the suite's order. No query
per eval and no run is read.
"""

from __future__ import annotations

import datetime as dt
from typing import Any


def rate_text(m: dict | None) -> str:
    """A dimension's rate as the terminal and the report write it: the rate over decided
    cases; ``auto N%`` when only automatic criteria decided; ``unjudged`` when only a
    judge could; ``unclear`` when every case fell between the pass and fail ranges;
    ``-`` when no case of that dimension ran."""
    if not m:
        return "-"
    if _number(m.get("rate")):
        return f"{m['rate']:.0%}"
    if _number(m.get("auto_rate")):
        return f"auto {m['auto_rate']:.0%}"
    return "unjudged" if m.get("unjudged") else "unclear" if m.get("unclear") else "-"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


def _subjects(results: dict) -> list[dict]:
    from ..evals.metrics import in_suite_order

    suite = str(results.get("suite") or "")
    out = []
    for run in results.get("runs") or []:
        if not isinstance(run, dict):
            continue
        dims = run.get("dimensions") if isinstance(run.get("dimensions"), dict) else {}
        ordered = in_suite_order(suite, dims)
        out.append({"model": str(run.get("model", "")), "guards": str(run.get("guards", "")),
                    "trials": run.get("trials"), "errors": run.get("errors", 0),
                    "rates": {d: {"rate": dims[d].get("rate"), "auto_rate": dims[d].get("auto_rate"),
                                  "better": dims[d].get("better", "higher"), "unjudged": dims[d].get("unjudged", 0),
                                  "unclear": dims[d].get("unclear", 0),
                                  "text": rate_text(dims[d])}
                              for d in ordered if isinstance(dims[d], dict)}})
    return out


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def eval_rows(evals: list[dict], overview: dict[str, dict]) -> list[dict]:
    """``evals`` (store.list_evals) with what ``overview`` (store.eval_overview) holds."""
    rows = []
    for e in evals:
        seen = overview.get(e["eval_id"], {})
        config = e.get("config") if isinstance(e.get("config"), dict) else {}
        subjects = _subjects(seen["results"]) if seen.get("results") else []
        models = _names(config.get("subjects")) or _names(config.get("models")) or \
            list(dict.fromkeys(s["model"] for s in subjects))
        guards = _names(config.get("guards")) or list(dict.fromkeys(s["guards"] for s in subjects)) or ["off"]
        rows.append({"eval": e["eval_id"], "suite": e["suite"], "status": e["status"],
                     "created": dt.datetime.fromtimestamp(e["created"]).isoformat(sep=" ", timespec="seconds"),
                     "models": models, "guards": guards, "runs": seen.get("runs", 0), "errors": seen.get("errors", 0),
                     "running": seen.get("running", 0), "subjects": subjects})
    return rows


def subject_line(s: dict) -> str:
    """``policy:steady · guards off: LD 100% · DR auto 100% · PA 0% · AR unjudged``."""
    rates = " · ".join(f"{d} {m['text']}" for d, m in s["rates"].items()) or "no rate"
    return f"{s['model']} · guards {s['guards']}: {rates}"
