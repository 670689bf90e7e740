"""What ``tether runs import`` checks in a record from elsewhere (issue 19).

A run export is data written by anyone. Before a row is stored, every field
of its ``run_started`` that the store indexes, the CLI prints or
``tether resume`` rebuilds from is checked: ids against the one id pattern
(:mod:`tether.ids`), kinds and statuses against their enums (the event
models), text fields bounded and free of control characters, the rebuild
recipe (``meta.cli``) well formed, and no import joins an eval the store already holds. Each refusal names the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import CaseFileError, FileLocation
from ..ids import ID_RULE, is_id, shown

MAX_TEXT = 256            # model, guards, a recipe string
MAX_TRIAL = 1_000_000     # --trials is at most 1,000 per eval
MAX_META = 1 << 20        # bytes of the run's metadata as JSON
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _refuse(path: str, field: str, what: str) -> CaseFileError:
    return CaseFileError([(FileLocation(path, 1, field=field), what)])


def check_text(path: str, field: str, value: Any, *, limit: int = MAX_TEXT, empty: bool = True) -> None:
    if not isinstance(value, str):
        raise _refuse(path, field, f"expected text, got {type(value).__name__}")
    if len(value) > limit:
        raise _refuse(path, field, f"{len(value)} characters: at most {limit}")
    if not empty and not value.strip():
        raise _refuse(path, field, "empty")
    if _CONTROL.search(value):
        raise _refuse(path, field, f"{shown(value)} holds control characters; refused")


def check_started(started: Any, path: str) -> None:
    """Refuse a ``run_started`` whose fields are not what tether writes."""
    for field in ("run_id", "eval_id", "case_id"):
        value = getattr(started, field)
        if field != "run_id" and value in (None, ""):
            continue
        if not is_id(value):
            raise _refuse(path, field, f"{shown(value)} is not a valid id ({ID_RULE}); refused")
    if not 0 <= started.trial < MAX_TRIAL:
        raise _refuse(path, "trial", f"{started.trial} is out of range (0 to {MAX_TRIAL - 1})")
    check_text(path, "model", started.model, empty=False)
    check_text(path, "guards", started.guards)
    try:
        size = len(json.dumps(started.meta, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):
        raise _refuse(path, "meta", "not a JSON object") from None
    if size > MAX_META:
        raise _refuse(path, "meta", f"{size} bytes: at most {MAX_META}")
    cli = started.meta.get("cli")
    if cli is not None:
        _check_recipe(cli, started.model, path)


def _check_recipe(cli: Any, model: str, path: str) -> None:
    from ..runtime.approvals import APPROVERS

    if not isinstance(cli, dict):
        raise _refuse(path, "meta.cli", "not an object")
    for key in ("model", "case", "guards"):
        check_text(path, f"meta.cli.{key}", cli.get(key), limit=4096 if key == "case" else MAX_TEXT)
    if cli.get("budget") is not None:
        check_text(path, "meta.cli.budget", cli["budget"])
    if cli.get("approver", "deferred") not in APPROVERS:
        raise _refuse(path, "meta.cli.approver", f"{shown(cli.get('approver'))}: use one of {', '.join(APPROVERS)}")
    approve = cli.get("approve") or []
    if not isinstance(approve, list) or len(approve) > 100:
        raise _refuse(path, "meta.cli.approve", "expected a list of at most 100 tool patterns")
    for pattern in approve:
        check_text(path, "meta.cli.approve", pattern)
    steps = cli.get("max_steps")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 1000):
        raise _refuse(path, "meta.cli.max_steps", f"{shown(steps)}: a whole number from 1 to 1,000")


def check_joins_no_eval(store: Any, started: Any, path: str) -> None:
    """An imported run never becomes a trial of an eval the store already holds."""
    eval_id = started.eval_id
    if not eval_id:
        return
    if store.get_eval(eval_id) is not None or store.count_runs(eval_id=eval_id):
        raise _refuse(path, "eval_id", f"names eval {eval_id}, which is in {store.path} already: an imported run "
                                       "never becomes a trial of an existing eval; import it into another store")
