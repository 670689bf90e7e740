"""Human review: export what needs a person to a YAML file, import the verdicts.

``export_review`` lists, per run / case / trial, every criterion whose verdict
is ``unclear`` or ``unjudged``, with what a reviewer needs to decide it: the
rubric, pass_when, fail_when, the seed's wording, and an excerpt of the run
(user input, tool calls with their results shortened, the final reply). Each
criterion has an empty ``verdict:`` and ``reason:`` to fill in.

``read_review`` validates a filled file (verdict ``pass | fail | unclear``,
left empty to skip) and reports problems with file, line and field;
``import_review`` applies the verdicts as ``judged_by: human`` and rebuilds
the metrics (see :mod:`tether.evals.rescore`).

The file is UTF-8 with Chinese as is (never ``\\uXXXX``). Documented in docs/judge.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import Trajectory
from .case import Case, Rubric
from .judge import REPLY_LIMIT, _clip, run_lines
from .rescore import HumanVerdict, apply_human_verdicts
from .results import Results
from .stored import RunMissing, RunSource, load_trial, open_runs
from .scoring import Verdict

__all__ = ["REVIEW_FORMAT", "REVIEW_VERSION", "ReviewEntry", "ReviewItems", "export_review", "import_review",
           "read_review", "review_document", "review_items", "write_review"]

REVIEW_FORMAT = "tether.review"
REVIEW_VERSION = 1
NEEDS_REVIEW = (Verdict.UNCLEAR, Verdict.UNJUDGED)
EXCERPT_RESULT_LIMIT = 300

# (model, guards, case id, trial) -> criterion id -> verdict
ReviewItems = dict[tuple[str, str, str, int], dict[str, HumanVerdict]]

HEADER = """\
# tether review file. For each criterion below, read the run and fill in
#   verdict: pass | fail | unclear      (leave empty to skip)
#   reason:  why, in a sentence
# then record the verdicts (they are marked judged_by: human) and rebuild the metrics:
#   tether review import {name} --results {results}
"""


# -- YAML with block strings and empty nulls -----------------------------------------
class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _none(dumper: yaml.SafeDumper, value: None) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:null", "")


_Dumper.add_representer(str, _str)
_Dumper.add_representer(type(None), _none)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=110, indent=2)


# -- export ---------------------------------------------------------------------
def _excerpt(case: Case, trajectory: Trajectory | None, reply: str, missing: str = "") -> dict[str, Any]:
    user = case.input.message or next((t.content for t in reversed(case.input.history) if t.role == "user"), "")
    if trajectory is None:
        return {"user_input": user, "steps": [f"(run not available: {missing or 'no store'}; only the final reply "
                                              "is shown)"],
                "final_reply": _clip(reply.strip(), REPLY_LIMIT)}
    return {
        "user_input": user,
        "steps": collapse_repeats(run_lines(trajectory, result_limit=EXCERPT_RESULT_LIMIT, args_limit=200,
                                            total_limit=12000)),
        "final_reply": _clip((trajectory.final_reply or reply).strip(), REPLY_LIMIT),
    }


_NUMBERED = re.compile(r"#(\d+) (.*)", re.S)


def collapse_repeats(lines: list[str]) -> list[str]:
    """Consecutive steps that differ only in their event number become one line
    (``#4..#44 (x11) call search_flights ... -> ok: ...``): a reviewer reads a loop once, with its count."""
    out: list[str] = []
    run: list[tuple[str, str]] = []      # (number, rest) of the repeating lines

    def flush() -> None:
        if len(run) == 1:
            out.append(f"#{run[0][0]} {run[0][1]}")
        elif run:
            out.append(f"#{run[0][0]}..#{run[-1][0]} (x{len(run)}) {run[0][1]}")
        run.clear()

    for line in lines:
        m = _NUMBERED.fullmatch(line)
        if m and run and m.group(2) == run[-1][1]:
            run.append((m.group(1), m.group(2)))
            continue
        flush()
        if m:
            run.append((m.group(1), m.group(2)))
        else:
            out.append(line)
    flush()
    return out


def _criterion_entry(spec: Any, current) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": spec.id, "kind": spec.kind, "current": str(current.verdict)}
    if current.judged_by:
        entry["judged_by"] = current.judged_by
    if current.evidence:
        entry["evidence"] = current.evidence
    if spec.description:
        entry["description"] = spec.description
    if isinstance(spec, Rubric):
        entry["rubric"] = spec.rubric.strip()
        entry["pass_when"] = spec.pass_when.strip()
        entry["fail_when"] = spec.fail_when.strip()
    elif current.expected:
        entry["expected"] = current.expected
    if spec.seed_text:
        entry["seed_text"] = spec.seed_text.strip()
    entry["verdict"] = None
    entry["reason"] = None
    return entry


def _source(results: Results, results_path: str | Path | None, store: Any) -> tuple[RunSource | None, str]:
    try:
        return open_runs(results, results_path, store=store), ""
    except RunMissing:
        raise
    except UsageError as exc:   # no store: the review still works, from the final replies
        return None, str(exc)


def review_document(results: Results, cases: Iterable[Case] | Mapping[str, Case], *,
                    store: Any = None, results_path: str | Path | None = None, runs: RunSource | None = None,
                    include: Iterable[Verdict] = NEEDS_REVIEW) -> dict[str, Any]:
    """The review document as data: one entry per trial with criteria to decide.
    The run excerpts come from the stored runs (``runs``, ``store`` or the store
    the results name); without them only the final replies are shown."""
    index = dict(cases) if isinstance(cases, Mapping) else {c.id: c for c in cases}
    wanted = set(include)
    source, why = (runs, "") if runs is not None else _source(results, results_path, store)
    trials: list[dict[str, Any]] = []
    for run in results.runs:
        for c in run.cases:
            case = index.get(c.case_id)
            if case is None:
                raise UsageError(f"no case definition for {c.case_id}: point at the cases (--cases DIR)")
            specs = {s.id: s for s in case.criteria}
            for tr in c.trials:
                todo = [cr for cr in tr.criteria if cr.verdict in wanted and cr.id in specs]
                if not todo:
                    continue
                t, missing = None, why
                if source is not None:
                    try:
                        t = load_trial(source, tr)
                    except RunMissing as exc:
                        missing = str(exc)
                trials.append({
                    "case_id": c.case_id, "title": c.title, "model": run.model, "guards": run.guards,
                    "trial": tr.trial, "status": tr.status, "run_id": tr.run_id,
                    "run": _excerpt(case, t, tr.reply, missing),
                    "criteria": [_criterion_entry(specs[cr.id], cr) for cr in todo],
                })
    return {"format": REVIEW_FORMAT, "version": REVIEW_VERSION, "suite": results.suite,
            "results": str(results_path) if results_path else None, "trials": trials}


def write_review(doc: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = HEADER.format(name=path.name, results=doc.get("results") or "RESULTS.json")
    from ..inputs import write_text

    write_text(path, header + _dump(doc), "review file")   # a failure names the file
    return path


def export_review(results: Results, cases: Iterable[Case] | Mapping[str, Case], path: str | Path, *,
                  store: Any = None, results_path: str | Path | None = None) -> tuple[Path, int]:
    """Write the review file; returns its path and the number of criteria to decide."""
    doc = review_document(results, cases, store=store, results_path=results_path)
    write_review(doc, path)
    return Path(path), sum(len(t["criteria"]) for t in doc["trials"])


# -- import ---------------------------------------------------------------------
def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                return v
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]
    return None


def _line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


def _guards(value: Any) -> str:
    # an unquoted `off` / `on` reads as a YAML boolean
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


@dataclass(frozen=True)
class ReviewEntry:
    """One verdict a reviewer filled in, with where it is in the file."""

    model: str
    guards: str
    case_id: str
    trial: int
    criterion: str
    verdict: Verdict
    reason: str
    location: FileLocation

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.model, self.guards, self.case_id, self.trial)


def _review_bounds():
    from .case_yaml import Bounds

    return Bounds("review file", max_bytes=8 * 1024 * 1024, max_nodes=1_000_000, max_depth=24)


def read_review(path: str | Path) -> list[ReviewEntry]:
    """Read and validate a filled review file; every problem reported with file and line.

    Criteria whose ``verdict`` is left empty are skipped (not reviewed).
    """
    path = Path(path)
    from ..inputs import read_text
    from .case_yaml import parse

    text = read_text(path, "review file", max_bytes=_review_bounds().max_bytes)
    data, root, dupes = parse(text, str(path), _review_bounds())
    if dupes:
        raise CaseFileError(dupes)
    where = str(path)
    if not isinstance(data, dict) or data.get("format") != REVIEW_FORMAT:
        raise CaseFileError([(FileLocation(where, 1), f"not a tether review file (expected format: {REVIEW_FORMAT})")])
    if data.get("version", REVIEW_VERSION) != REVIEW_VERSION:
        raise CaseFileError([(FileLocation(where, _line(_child(root, "version")), field="version"),
                              f"review format version {data.get('version')!r}; this tether reads {REVIEW_VERSION}")])
    trials = data.get("trials") or []
    tnodes = _child(root, "trials")
    if not isinstance(trials, list):
        raise CaseFileError([(FileLocation(where, _line(tnodes), field="trials"), "must be a list")])
    problems: list[tuple[FileLocation, str]] = []
    entries: list[ReviewEntry] = []
    for i, tr in enumerate(trials):
        tnode = _child(tnodes, i)
        if not isinstance(tr, dict):
            problems.append((FileLocation(where, _line(tnode), field=f"trials.{i}"), "must be a mapping"))
            continue
        missing = [k for k in ("case_id", "model", "guards", "trial") if tr.get(k) is None]
        if missing or not isinstance(tr.get("trial"), int) or not 0 <= tr["trial"] <= 1_000_000:
            problems.append((FileLocation(where, _line(tnode), field=f"trials.{i}"),
                             f"missing or bad {', '.join(missing) or 'trial'} (keep the keys the export wrote)"))
            continue
        cnodes = _child(tnode, "criteria")
        if not isinstance(tr.get("criteria") or [], list):
            problems.append((FileLocation(where, _line(cnodes or tnode), field=f"trials.{i}.criteria"),
                             "must be a list of criteria (keep what the export wrote)"))
            continue
        for j, cr in enumerate(tr.get("criteria") or []):
            cnode = _child(cnodes, j)
            field = f"trials.{i}.criteria.{j}"
            if not isinstance(cr, dict) or not cr.get("id"):
                problems.append((FileLocation(where, _line(cnode), field=field), "a criterion needs an id"))
                continue
            raw = cr.get("verdict")
            if raw is None or (isinstance(raw, str) and not raw.strip()):
                continue   # not reviewed
            vnode = _child(cnode, "verdict")
            loc = FileLocation(where, _line(vnode), vnode.start_mark.column + 1 if vnode is not None else None,
                               field=f"{field}.verdict")
            word = raw.strip().lower() if isinstance(raw, str) else None
            if word not in ("pass", "fail", "unclear"):
                problems.append((loc, f"verdict must be pass, fail or unclear (got {raw!r})"))
                continue
            reason = cr.get("reason")
            entries.append(ReviewEntry(model=str(tr["model"]), guards=_guards(tr["guards"]), case_id=str(tr["case_id"]),
                                       trial=tr["trial"], criterion=str(cr["id"]), verdict=Verdict(word),
                                       reason="" if reason is None else str(reason).strip(), location=loc))
    if problems:
        raise CaseFileError(problems)
    return entries


def review_items(entries: Iterable[ReviewEntry], results: Results, cases: Mapping[str, Case],
                 reviewer: str | None = None) -> ReviewItems:
    """Check every entry names a trial and criterion of the results; group them by trial."""
    problems: list[tuple[FileLocation, str]] = []
    known = {(r.model, r.guards, c.case_id, t.trial) for r in results.runs for c in r.cases for t in c.trials}
    items: ReviewItems = {}
    for e in entries:
        if e.key not in known:
            problems.append((e.location, f"no trial {e.trial} of {e.case_id} for model {e.model} "
                                         f"(guards {e.guards}) in the results"))
            continue
        case = cases.get(e.case_id)
        if case is None or e.criterion not in {c.id for c in case.criteria}:
            problems.append((e.location, f"{e.case_id} has no criterion {e.criterion!r}"))
            continue
        items.setdefault(e.key, {})[e.criterion] = HumanVerdict(verdict=e.verdict, reason=e.reason, reviewer=reviewer)
    if problems:
        raise CaseFileError(problems)
    return items


def import_review(path: str | Path | list[ReviewEntry], results: Results,
                  cases: Iterable[Case] | Mapping[str, Case], *, reviewer: str | None = None) -> tuple[Results, int]:
    """Apply a filled review file (or its entries, already read); returns the re-scored
    results and the number of verdicts recorded (each with ``reviewer``, when, and what it replaced)."""
    index = dict(cases) if isinstance(cases, Mapping) else {c.id: c for c in cases}
    entries = path if isinstance(path, list) else read_review(path)
    items = review_items(entries, results, index, reviewer)
    count = sum(len(v) for v in items.values())
    return apply_human_verdicts(results, index, items), count
