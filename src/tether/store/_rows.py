"""What both backends make of their rows and write into them, with no database
module of its own: a PostgreSQL command never imports SQLite's store (nor
``sqlite3``) to read a run, and SQLite's never imports psycopg."""

from __future__ import annotations

import json
import time
from typing import Any, Mapping

import orjson


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _host() -> str:
    import socket

    return socket.gethostname()


_LINE = orjson.OPT_APPEND_NEWLINE


# A run's row made (``create_run``, ``add_whole_run``) and ended (``finish_run``), with ? placeholders
# (PostgreSQL's store passes them through ``pg``); the ending's metric columns are store/facts.py's.
_INSERT_RUN = ("INSERT INTO runs (run_id, created, updated, status, model, case_id, meta, kind, eval_id, trial, "
               "guards) VALUES (?,?,?,?,?,?,?,?,?,?,?)")


def _finish_run_sql() -> str:
    from .facts import COLUMNS

    return ("UPDATE runs SET status=?, reply=?, reason=?, updated=?, digest=?, error_kind=?, "
            + ", ".join(f"{c}=?" for c in COLUMNS) + " WHERE run_id=?")


def _new_run(run_id: str, run: dict) -> tuple:
    """``_INSERT_RUN``'s values for a new run (``run``: create_run's keywords)."""
    now = time.time()
    return (run_id, now, now, "running", run.get("model", ""), run.get("case_id"), _json(run.get("meta") or {}),
            run.get("kind", "run"), run.get("eval_id"), run.get("trial", 0), run.get("guards", "off"))


def _ended_run(run_id: str, end: dict, chunk: tuple | None) -> tuple:
    """``_finish_run_sql()``'s values for a whole run's end (``end``: finish_run's keywords), its
    metrics read from the events of its one chunk."""
    from .facts import row_values, run_facts

    events = [orjson.loads(line) for line in chunk[3].split(b"\n") if line] if chunk else []
    facts = row_values(run_facts({"status": end["status"]}, events))
    return (end["status"], end.get("reply", ""), end.get("reason", ""), time.time(), end.get("digest"),
            end.get("error_kind"), *facts, run_id)


def _taken(run_id: str, where: Any) -> Exception:
    from ..errors import UsageError

    return UsageError(f"run id {run_id!r} is already in {where}; a run is never overwritten: choose another id")


def _chunk(run_id: str, events: list[tuple[int, dict]]) -> tuple:
    first, last = events[0][0], events[-1][0]
    if last - first + 1 != len(events):
        from ..errors import RunFailure

        raise RunFailure(f"run {run_id}: events {first}..{last} are not consecutive ({len(events)} given)")
    return (run_id, first, last, b"".join([orjson.dumps(e, default=str, option=_LINE) for _, e in events]))


class _Chain:
    """A run's checkpoint numbering and delta chain, in memory: the whole checkpoint
    the chain starts from, how long it is, the previous state's lists."""

    __slots__ = ("next", "base", "length", "lists")

    def __init__(self, next_n: int):
        self.next = next_n
        self.base: int | None = None
        self.length = 0
        self.lists: dict = {}


def _duplicate(run_id: str, events: list[tuple[int, dict]]) -> Exception:
    from ..errors import RunFailure

    seqs = [seq for seq, _ in events]
    return RunFailure(f"run {run_id}: events {seqs[0]}..{seqs[-1]} overlap events already stored; events are "
                      "append-only (is another process driving this run?)")


def _run(r: Mapping[str, Any]) -> dict:
    """A runs row as a dict; ValueError saying what is wrong with a damaged one."""
    d = dict(r)
    d["updated"] = d.pop("last_active", d["updated"])
    try:
        d["meta"] = json.loads(d["meta"])
    except (TypeError, ValueError, RecursionError):
        raise ValueError("its meta column is not JSON") from None
    if not isinstance(d["meta"], dict):
        raise ValueError("its meta column is not a JSON object")
    for key in ("created", "updated"):
        if isinstance(d[key], bool) or not isinstance(d[key], (int, float)):
            raise ValueError(f"its {key} column is not a time ({d[key]!r:.40})")
    for key in ("run_id", "status", "model", "kind", "guards"):
        if not isinstance(d[key], str):
            raise ValueError(f"its {key} column is not text")
    return d


def _effect(r: Mapping[str, Any]) -> dict:
    d = dict(r)
    d["arguments"] = json.loads(d["arguments"])
    d["result"] = json.loads(d["result"]) if d["result"] else None
    return d


def _approval(r: Mapping[str, Any]) -> dict:
    d = dict(r)
    d["arguments"] = json.loads(d["arguments"])
    d["new_arguments"] = json.loads(d["new_arguments"]) if d["new_arguments"] else None
    return d
