"""SQL both backends share: run filters, keyset pages, the run metrics as
aggregate queries, the tables a copy moves. Written with ``?`` placeholders;
the PostgreSQL backend turns them into ``%s`` (:func:`pg`).

Filters are globs (``*`` any run of characters, ``?`` one character), matched
case-sensitively: SQLite's ``GLOB``, PostgreSQL's ``LIKE`` with the glob
translated; a value without wildcards is an equality (an index lookup).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from .facts import COLUMNS as METRIC_COLUMNS

COMPLETION_STATUSES = ("completed", "submitted", "succeeded")
LEFT_OUT = ("running", "error")
NO_OUTCOME = ("ended",)      # a record with no outcome (an MCP gateway window): not in the completion rate at all
FILTER_COLUMNS = ("eval_id", "model", "case_id", "status", "kind")
SEARCH_COLUMNS = ("run_id", "case_id", "model", "status", "eval_id")

# Every table a store holds and its columns, in the order a copy moves them
# (runs before the rows that name a run).
TABLES: dict[str, tuple[str, ...]] = {
    "evals": ("eval_id", "created", "updated", "suite", "status", "config", "results"),
    "runs": ("run_id", "created", "updated", "status", "model", "case_id", "reply", "reason", "meta", "kind",
             "eval_id", "trial", "guards", "digest", "error_kind", *METRIC_COLUMNS),
    "events": ("run_id", "seq", "last", "events"),
    "checkpoints": ("run_id", "n", "step", "phase", "event_count", "state", "created", "base"),
    "effects": ("key", "run_id", "signature", "tool", "arguments", "step", "status", "result", "created", "updated"),
    "approvals": ("id", "run_id", "tool", "arguments", "digest", "reason", "status", "decided_by", "note",
                  "new_arguments", "created", "decided", "expires", "used"),
    "leases": ("run_id", "holder", "pid", "host", "acquired", "expires"),
}
KEYS = {"evals": "eval_id", "runs": "run_id", "events": "run_id, seq", "checkpoints": "run_id, n", "effects": "key",
        "approvals": "id", "leases": "run_id"}
# the tables whose rows belong to a run (pruned with it)
RUN_TABLES = ("events", "checkpoints", "effects", "approvals", "leases")


def pg(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal % doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def is_glob(value: str) -> bool:
    return any(c in value for c in "*?[")


def like_pattern(glob: str) -> str:
    """A glob as a LIKE pattern (escape character: backslash)."""
    out = []
    for c in glob:
        if c in "%_\\":
            out.append("\\" + c)
        elif c == "*":
            out.append("%")
        elif c == "?":
            out.append("_")
        else:
            out.append(c)
    return "".join(out)


def run_where(dialect: str, *, since: float | None = None, before: tuple[float, str] | None = None,
              q: str | None = None, **filters: str | None) -> tuple[str, list[Any]]:
    """(`` WHERE ...`` or "", params) for runs matching globs on eval, model,
    case, status and kind; created since a time; older than a keyset cursor
    ``before`` = (created, run_id); and a search text ``q`` (a substring or glob of
    the id, case, model, status or eval, any case)."""
    where: list[str] = []
    params: list[Any] = []
    for column, value in filters.items():
        if column not in FILTER_COLUMNS:
            raise TypeError(f"no run filter {column!r}")
        if value is None:
            continue
        if not is_glob(value):
            where.append(f"{column} = ?")
            params.append(value)
        elif dialect == "sqlite":
            where.append(f"{column} GLOB ?")
            params.append(value)
        else:
            where.append(f"{column} LIKE ? ESCAPE '\\'")
            params.append(like_pattern(value))
    if since is not None:
        where.append("created >= ?")
        params.append(since)
    if before is not None:
        where.append("(created < ? OR (created = ? AND run_id < ?))")
        params.extend([before[0], before[0], before[1]])
    if q:
        pattern = "%" + like_pattern(q.lower()) + "%" if not is_glob(q) else like_pattern(q.lower())
        where.append("(" + " OR ".join(f"LOWER(COALESCE({c}, '')) LIKE ? ESCAPE '\\'" for c in SEARCH_COLUMNS) + ")")
        params.extend([pattern] * len(SEARCH_COLUMNS))
    return (" WHERE " + " AND ".join(where) if where else ""), params


# what a listing shows of a run (not its reply, reason or metrics: a page reads and sends less)
LISTED = ("run_id", "created", "updated", "status", "model", "case_id", "meta", "kind", "eval_id", "trial", "guards",
          "error_kind")


def runs_select(dialect: str, *, counts: bool = False) -> str:
    """``SELECT ... FROM runs``: every column and ``last_active`` (the later of
    the run's update and its last checkpoint); with ``counts``, a listing's columns (:data:`LISTED`),
    ``last_active``, and the run's ``checkpoints`` and ``approvals_waiting`` (two index lookups a run)."""
    greatest = "MAX" if dialect == "sqlite" else "GREATEST"
    sql = (f"SELECT {', '.join(LISTED) if counts else '*'}, {greatest}(updated, COALESCE((SELECT c.created FROM "
           "checkpoints c WHERE c.run_id = runs.run_id ORDER BY c.n DESC LIMIT 1), 0)) AS last_active")
    if counts:
        sql += (", (SELECT COUNT(*) FROM checkpoints c WHERE c.run_id = runs.run_id) AS checkpoints, "
                "(SELECT COUNT(*) FROM approvals a WHERE a.run_id = runs.run_id AND a.status = 'pending') "
                "AS approvals_waiting")
    return sql + " FROM runs"


RECENT = 2_000          # a glob's page is looked for first among this many of the newest runs
_NEWEST = " ORDER BY created DESC, run_id DESC LIMIT ?"


def page_sql(dialect: str, limit: int, *, before: tuple[float, str] | None = None, counts: bool = True,
             how: str = "plain", **filters: Any) -> tuple[str, tuple]:
    """(sql, params) of one page of a run listing: the newest ``limit`` runs matching ``filters``
    (:func:`run_where`) older than the cursor ``before``; with ``counts`` the columns a listing shows and
    each run's counts, else every column (:func:`runs_select`).

    ``how``: ``plain`` leaves the way to the database: right for exact values (an index lookup) and
    for no filter (the creation-time index). A glob's matches may lie anywhere in time (an eval id
    names its date), which no planner knows: it would walk the runs from the newest one until it
    has a page, through most of the store for a rare match, or gather every match of a common
    prefix and sort them. ``recent`` looks among the :data:`RECENT` newest runs only (bounded: a page
    of a common match is there); ``sorted`` takes every match (through the prefix's index where there
    is one) and sorts them: bounded by the matches, for a match that is not among the newest."""
    if how == "plain":
        where, params = run_where(dialect, before=before, **filters)
        return runs_select(dialect, counts=counts) + where + _NEWEST, (*params, limit)
    if how == "recent":
        near, near_params = run_where(dialect, before=before)
        where, params = run_where(dialect, **filters)
        ids = f"SELECT run_id FROM (SELECT * FROM runs{near}{_NEWEST}) AS recent{where}{_NEWEST}"
        params = [*near_params, RECENT, *params, limit]
    else:               # sorted: the keys of every match (an index holds them), then the page's rows
        where, params = run_where(dialect, before=before, **filters)
        ids = f"SELECT run_id FROM runs{where} ORDER BY created + 0 DESC, run_id DESC LIMIT ?"       # +0: no index
        params = [*params, limit]
    # a page's counts are read for its own runs only, not for every run the page was chosen from
    return (runs_select(dialect, counts=counts) + f" WHERE run_id IN ({ids}) ORDER BY created DESC, run_id DESC",
            tuple(params))


def read_page(fetch: Callable[..., list[list[Any]]], dialect: str, limit: int, *,
              before: tuple[float, str] | None = None, counts: bool = True, count: bool = False,
              upto: int | None = None, **filters: Any) -> tuple[list[Any], int | None]:
    """(the rows of a listing's page (:func:`page_sql`), how many runs match (:func:`capped_count`) when
    ``count``, else None). ``fetch(*queries)`` runs (sql, params) queries, ``?`` placeholders, in one
    round trip and returns each one's rows (mappings). With a glob, the page is looked for among
    the newest runs first, then, when that page is short, among every match."""
    globbed = any(isinstance(filters.get(c), str) and is_glob(filters[c]) for c in FILTER_COLUMNS)
    queries = [page_sql(dialect, limit, before=before, counts=counts, how="recent" if globbed else "plain",
                        **filters)]
    if count:
        where, params = run_where(dialect, **{k: v for k, v in filters.items()})
        queries.append(capped_count(where, params, upto))
    found = fetch(*queries)
    rows = found[0]
    if globbed and len(rows) < limit:
        rows = fetch(page_sql(dialect, limit, before=before, counts=counts, how="sorted", **filters))[0]
    return rows, (int(found[1][0]["c"]) if count else None)


def capped_count(where: str, params: list[Any], upto: int | None) -> tuple[str, tuple[Any, ...]]:
    """The query counting the runs that match ``where``; with ``upto`` it stops past ``upto`` rows (answering
    ``upto + 1``), so a listing's total costs the same at 1,000 runs and at 1,000,000 on either backend
    (PostgreSQL has no cheap exact COUNT(*): it reads every row)."""
    if upto is None:
        return "SELECT COUNT(*) AS c FROM runs" + where, tuple(params)
    return ("SELECT COUNT(*) AS c FROM (SELECT 1 FROM runs" + where + " LIMIT ?) AS capped",
            (*params, int(upto) + 1))


def _and(where: str, clause: str) -> str:
    return (where + " AND " if where else " WHERE ") + clause


def run_metrics(query: Callable[[str, list[Any]], list[tuple]], dialect: str, **filters: Any) -> dict[str, Any]:
    """The run metrics (keys of :mod:`tether.report.metrics`) of the runs matching
    ``filters`` (see :func:`run_where`), as three aggregate queries. ``query(sql,
    params)`` runs one (``?`` placeholders) and returns its rows as tuples."""
    where, params = run_where(dialect, **filters)
    statuses = {str(s): int(n) for s, n in query(f"SELECT status, COUNT(*) FROM runs{where} GROUP BY status", params)}
    done = _and(where, "status NOT IN ('running', 'error')")
    completed = ", ".join(f"'{s}'" for s in COMPLETION_STATUSES)
    no_outcome = ", ".join(f"'{s}'" for s in NO_OUTCOME)
    row = query("SELECT COUNT(*), "
                f"SUM(CASE WHEN status IN ({completed}) THEN 1 ELSE 0 END), "
                "SUM(COALESCE(steps, 0)), SUM(COALESCE(looped, 0)), SUM(COALESCE(invented, 0)), "
                "SUM(COALESCE(hitl, 0)), SUM(COALESCE(cost, 0)), SUM(COALESCE(tokens, 0)), "
                f"SUM(CASE WHEN status IN ({no_outcome}) THEN 1 ELSE 0 END) "
                f"FROM runs{done}", params)[0]
    n = int(row[0] or 0)
    p95 = None
    if n:
        k = max(0, math.ceil(0.95 * n) - 1)          # the k-th smallest (nearest rank), from a count per value:
        seen = 0                                      # a run has few distinct step counts, so no sort of every run
        for steps, count in query(f"SELECT COALESCE(steps, 0) AS s, COUNT(*) FROM runs{done} GROUP BY s ORDER BY s",
                                  params):
            seen += int(count)
            if seen > k:
                p95 = int(steps)
                break

    def share(value: Any, digits: int = 4) -> float | None:
        return round(float(value or 0) / n, digits) if n else None

    judged = n - int(row[8] or 0)
    return {
        "completion_rate": round(float(row[1] or 0) / judged, 4) if judged else None,
        "steps_mean": share(row[2]),
        "steps_p95": p95,
        "loop_trigger_rate": share(row[3]),
        "invented_completion_rate": share(row[4]),
        "hitl_rate": share(row[5]),
        "cost_mean": share(row[6], 6),
        "tokens_mean": share(row[7], 1),
        "runs": n,
        "errors": statuses.get("error", 0),
        "running": statuses.get("running", 0),
        "statuses": dict(sorted((s, c) for s, c in statuses.items() if s not in LEFT_OUT)),
    }


def keep_clause(dialect: str, keep_evals: Iterable[str]) -> tuple[str, list[Any]]:
    """(SQL true for a run or eval whose eval id matches one of the globs, params)."""
    clauses, params = [], []
    for glob in keep_evals:
        if dialect == "sqlite":
            clauses.append("COALESCE(eval_id, '') GLOB ?")
            params.append(glob)
        else:
            clauses.append("COALESCE(eval_id, '') LIKE ? ESCAPE '\\'")
            params.append(like_pattern(glob))
    return ("(" + " OR ".join(clauses) + ")" if clauses else "(1=0)"), params


# -- the evals list: a keyset page, then what each eval of the page holds (two queries a page)
def evals_page_sql(before: str | None) -> str:
    """The newest evals (``?`` the limit), or those older than eval ``before`` (``?`` its
    id first): the order of the ``evals_by_created`` index, the id breaking ties."""
    older = (" WHERE (created, eval_id) < (SELECT created, eval_id FROM evals WHERE eval_id = ?)"
             if before is not None else "")
    return ("SELECT eval_id, created, updated, suite, status, config FROM evals" + older
            + " ORDER BY created DESC, eval_id DESC LIMIT ?")


def eval_overview_sql(count: int) -> tuple[str, str]:
    """(runs of each eval by status, the results documents) for ``count`` eval ids."""
    marks = ",".join("?" * count)
    return (f"SELECT eval_id, COUNT(*), SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END) FROM runs WHERE eval_id IN ({marks}) "
            "GROUP BY eval_id",
            f"SELECT eval_id, results FROM evals WHERE eval_id IN ({marks}) AND results IS NOT NULL")


def eval_overview(rows: Callable[[str, tuple], Iterable[tuple]], eval_ids: list[str],
                  results: list[str] | None = None) -> dict[str, dict]:
    """{eval id: {"runs", "errors", "running", "results"}} through a backend's ``rows``
    (sql, params) -> tuples; the results documents of ``results`` (default: every
    eval; a caller that keeps them gives fewer); one that does not read is None."""
    import orjson

    out: dict[str, dict] = {e: {"runs": 0, "errors": 0, "running": 0, "results": None} for e in eval_ids}
    if not eval_ids:
        return out
    counts_sql, _ = eval_overview_sql(len(eval_ids))
    for eval_id, runs, errors, running in rows(counts_sql, tuple(eval_ids)):
        out[eval_id].update(runs=int(runs), errors=int(errors or 0), running=int(running or 0))
    wanted = [e for e in (eval_ids if results is None else results) if e in out]
    if not wanted:
        return out
    _, results_sql = eval_overview_sql(len(wanted))
    for eval_id, text in rows(results_sql, tuple(wanted)):
        try:
            doc = orjson.loads(text)
        except (orjson.JSONDecodeError, TypeError):
            continue
        out[eval_id]["results"] = doc if isinstance(doc, dict) else None
    return out


def approvals_sql(run_id: str | None, status: str | None, limit: int | None) -> tuple[str, tuple]:
    """A run's approvals in the order they were asked; every run's (``run_id`` None), newest first."""
    where = [w for w, v in (("run_id = ?", run_id), ("status = ?", status)) if v is not None]
    params = tuple(v for v in (run_id, status) if v is not None)
    sql = ("SELECT * FROM approvals" + (" WHERE " + " AND ".join(where) if where else "")
           + (" ORDER BY created" if run_id is not None else " ORDER BY created DESC, id DESC"))
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    return sql, params
