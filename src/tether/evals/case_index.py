"""Where case files are, and a quick look at each (``tether case list``).

:func:`case_files` finds a suite's YAML files; :func:`summaries` reads the few
fields a listing shows (id, dimension, difficulty, title, tools, how many
automatic and judge criteria) with libyaml when it is there, without building
the pydantic models or resolving tools: a listing, not a check. Every check is
:func:`tether.evals.loader.load_case` (``tether case validate``, ``tether eval``).
Imports nothing heavy, so the CLI lists cases fast.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

MAX_LIST_BYTES = 1_000_000   # as tether.evals.case_yaml.MAX_BYTES: larger files take the checked path


def builtin_suites() -> list[str]:
    """Suites registered through the ``tether.suites`` entry points (c4 is one)."""
    from ..plugins import suites

    return sorted(suites())


def case_files(source: str | Path) -> list[Path]:
    """YAML files of a suite: a registered suite name, a directory, or one file."""
    from ..plugins import suites

    found = suites().get(source) if isinstance(source, str) else None
    if found is not None:
        root = found.cases
        return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".yaml", ".yml")))
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise UsageError(f"no case files (*.yaml, *.yml) in {path}")
        return files
    if path.is_file():
        return [path]
    raise UsageError(f"no suite named '{source}' and no such file or directory "
                     f"(registered suites: {', '.join(builtin_suites()) or '(none)'})")


@dataclass(frozen=True)
class CaseSummary:
    id: str
    dimension: str
    difficulty: str
    title: str
    tools: tuple[str, ...]
    auto: int       # automatic criteria
    judge: int      # rubric criteria (the LLM judge or a human)

    @property
    def criteria(self) -> str:
        return f"{self.auto} auto, {self.judge} judge"


def summary(path: Path) -> CaseSummary | None:
    """The listing fields of one case file; None when it does not read as a case
    (the caller then loads it the checked way, which says what is wrong)."""
    try:
        if path.stat().st_size > MAX_LIST_BYTES:
            return None
        return _summary_of(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


@functools.lru_cache(maxsize=256)
def _summary_of(text: str) -> CaseSummary | None:
    """:func:`summary` of a file's text, once per text in a process (finding one case by id reads every file of
    its suite; a program that does that per run otherwise parses the same YAML again each time)."""
    import yaml

    from .case_yaml import LOADER

    try:
        data = yaml.load(text, Loader=LOADER)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    fields = [data.get(k) for k in ("id", "dimension", "difficulty", "title")]
    tools, criteria = data.get("tools", []), data.get("criteria", [])
    if (not all(isinstance(f, str) for f in fields[:2]) or not isinstance(tools, list)
            or not all(isinstance(t, str) for t in tools) or not isinstance(criteria, list)
            or not all(isinstance(c, dict) for c in criteria)):
        return None
    judge = sum(1 for c in criteria if c.get("kind") == "judge" or c.get("check") == "rubric")
    return CaseSummary(id=fields[0], dimension=fields[1], difficulty=str(fields[2] or "medium"),
                       title=str(fields[3] or ""), tools=tuple(tools), auto=len(criteria) - judge, judge=judge)


def summaries(source: str | Path) -> list[CaseSummary]:
    """Every case of ``source``, from a quick read of each file. A file that does not
    read as a case, or ids used twice, take the checked path: every case is loaded
    and validated, and its problems raised as :func:`tether.evals.load_suite` does."""
    found = [summary(p) for p in case_files(source)]
    ids = [s.id for s in found if s is not None]
    if all(s is not None for s in found) and len(set(ids)) == len(ids):
        return found  # type: ignore[return-value]
    from .loader import load_suite

    return [CaseSummary(id=c.id, dimension=c.dimension, difficulty=c.difficulty, title=c.title, tools=tuple(c.tools),
                        auto=len(c.auto_criteria), judge=len(c.judge_criteria)) for c in load_suite(source)]
