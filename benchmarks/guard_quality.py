"""Loop detection quality on labelled corpora: recall, and hints / blocks /
stops on legitimate runs, per set, per folder and per family.

    python benchmarks/guard_quality.py                     # every set found: tuning, held-out, authors'
    python benchmarks/guard_quality.py --half tuning       # only the tuning pool (never opens held-out files)
    python benchmarks/guard_quality.py --half heldout      # only the sealed held-out set: aggregates only
    python benchmarks/guard_quality.py --corpus DIR ...    # other folders of JSON items (each searched recursively)
    python benchmarks/guard_quality.py --items             # also every item's first trip (not for sealed items)
    python benchmarks/guard_quality.py --rules             # also each loop rule alone
    python benchmarks/guard_quality.py --show-sealed-ids   # also name sealed items (spends the seal)
    python benchmarks/guard_quality.py --write-traces D    # every JSON item as a JSONL trace in D (tether guard-check D)
    python benchmarks/guard_quality.py --lowo              # the tuning pool per writer, and the worst writer

Three sets, printed apart:

* **tuning**: every JSON item under a folder named ``tuning`` (written blind,
  by people who had not read ``src/tether/guards/``, from public threads; see
  ``tests/data/loop_corpus/README.md`` for which of them were once held out
  and why they moved). Printed with a line per sub-folder and every miss and
  false alarm by id: rules are tuned on these.
* **held-out**: every JSON item under a folder named ``heldout``: sealed.
  Only aggregates and the per-family table are printed, never an item id
  (``--show-sealed-ids`` names them, and after that the set is no longer
  held out). Skipped, with a line saying so, when the folder has no items.
* **authors' corpus**: the 85 items of ``tests/data/loop_corpus/corpus.py``,
  written by the same people as the rules (kept as a regression set).

A file named ``second_reader*.json`` (``third_reader*.json``) holds a second (third) reader's labels, not an
item. Where a set has one, the stack's table gets a line more: the reader's own labels scored as a detector by
the same measure (a loop
caught when the reader's intervention point is at or before the writer's ``trip_by``; an ok item the reader
called a loop counts as a hint). It is the agreement of two people on the same items, with hindsight: the
ceiling a measure by one writer's ``trip_by`` can be expected to reach.

Each item is converted to a tether trajectory (the events ``tether
guard-check`` reads: model request and decision, tool call and result, or a
question to the user and the reply; items carry no timing, so each model turn
is given 2 s, every other event 40 ms) and fed through the reference stack by
tether's offline path (:func:`tether.guards.offline.check_trace`). Measures:

* recall: loop items on which a guard tripped (hint, block or stop) by the
  item's ``trip_by`` (1-based agent action: a tool call or a question);
* on ok items: items with a hint, with a block, with a stop (or escalation);
  the floor is 0 blocks, 0 stops and at most 2% hints.

A budget's soft notice (the budget guard's hint at 80% of a limit) counts as a
hint, as it did for every sealed round: the agent is told, so on a legitimate
run it is a false alarm. How many items drew one is printed apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data" / "loop_corpus"))

from tether.errors import CaseFileError, FileLocation  # noqa: E402
from tether.events import (  # noqa: E402
    AgentMessage,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from tether.guards.loop import RULES, LoopConfig, LoopGuard  # noqa: E402
from tether.guards.offline import check_trace  # noqa: E402
from tether.guards.stacks import guard_stack  # noqa: E402
from tether.messages import DecisionKind, ToolCallRequest  # noqa: E402
from tether.status import TerminalStatus  # noqa: E402

CORPUS_ROOT = ROOT / "tests" / "data" / "loop_corpus"
HALVES = ("tuning", "heldout")
SEALED = frozenset({"heldout"})           # halves whose item ids are never printed by default
NOT_ITEMS = frozenset({"second_reader.json"})   # readers' labels kept beside the items
READERS = ("second_reader", "third_reader")      # file name prefixes of other readers' labels, in order
MAX_FILE_BYTES = 4_000_000
MAX_ACTIONS = 5_000
# The items carry no timing; they are runs of LLM agents, so each model turn is
# given 2 s (a short LLM turn), every other event 40 ms. The same for every item.
TURN_MS = 2000.0


@dataclass
class Item:
    id: str
    label: str               # "loop" or "ok"
    family: str
    trajectory: Trajectory
    trip_by: int | None = None
    source: str = ""
    half: str = "authors"    # tuning / heldout / authors
    path: str = ""
    folder: str = ""         # the folder under its half (tuning/a2 -> "a2"), for per-folder lines


# -- the JSON corpus ---------------------------------------------------------------
def half_of(path: Path) -> str | None:
    """The half a file belongs to: the nearest folder on its path named tuning or heldout."""
    for part in reversed(path.parts[:-1]):
        if part in HALVES:
            return part
    return None


def corpus_files(folders: Iterable[Path], half: str | None = None) -> list[Path]:
    """JSON item files under ``folders`` (recursively), of one half or all.
    A file of another half is never opened."""
    out: dict[Path, None] = {}      # a file under two of the folders (one inside the other) counts once
    for folder in folders:
        folder = Path(folder)
        files = [folder] if folder.is_file() else sorted(folder.rglob("*.json"))
        out |= {f.resolve(): None for f in files if not is_not_item(f) and (half is None or half_of(f) == half)}
    return list(out)


def is_not_item(path: Path) -> bool:
    """Readers' labels and their maps kept beside the items (second_reader*.json, third_reader*.json)."""
    return path.name in NOT_ITEMS or path.name.startswith(READERS)


def folder_of(path: Path) -> str:
    """The folder between a file's half and the file (``tuning/a2/x.json`` -> ``a2``), or ``-``."""
    parts = path.parts[:-1]
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in HALVES:
            return "/".join(parts[i + 1:]) or "-"
    return "-"


def _fail(path: str, what: str) -> CaseFileError:
    return CaseFileError([(FileLocation(path), what)])


def load_item(path: Path) -> Item:
    """One JSON item as a trajectory; a file that is not an item is a
    :class:`CaseFileError` naming the file and what is wrong."""
    where = str(path)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise _fail(where, f"larger than {MAX_FILE_BYTES} bytes")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(where, f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _fail(where, "not a JSON object")
    if "label" not in doc and "actions" not in doc:
        raise NotAnItem(where)             # labels or notes kept beside the items
    label, actions = doc.get("label"), doc.get("actions")
    if label not in ("loop", "ok"):
        raise _fail(where, f"label must be 'loop' or 'ok', not {label!r}")
    if not isinstance(actions, list) or not actions or len(actions) > MAX_ACTIONS:
        raise _fail(where, f"actions must be a list of 1 to {MAX_ACTIONS} actions")
    trip_by = doc.get("trip_by")
    if label == "loop" and not (isinstance(trip_by, int) and 1 <= trip_by <= len(actions)):
        raise _fail(where, f"a loop item needs trip_by, an action number from 1 to {len(actions)}; got {trip_by!r}")
    source = doc.get("source")
    source = source.get("url", "") if isinstance(source, dict) else str(source or "")
    trajectory = _trajectory(where, str(doc.get("task") or ""), actions, doc.get("final"))
    return Item(id=str(doc.get("id") or path.stem), label=label, family=str(doc.get("family") or "-"),
                trajectory=trajectory, trip_by=trip_by if label == "loop" else None, source=source,
                half=half_of(path) or "-", path=where, folder=folder_of(path))


def _trajectory(where: str, task: str, actions: list, final: Any) -> Trajectory:
    """Events the way the run loop records them: per action a model request and
    decision, then the tool call and its result, or the question and the reply
    (no reply when ``answer`` is null)."""
    tools = sorted({a["tool"] for a in actions if isinstance(a, dict) and isinstance(a.get("tool"), str)})
    t = Trajectory()
    clock = [0.0]

    def add(event: Any) -> None:
        clock[0] += TURN_MS if isinstance(event, ModelDecisionEvent) else 40.0
        event.at_ms = clock[0]
        if isinstance(event, ModelDecisionEvent):    # the guards measure pacing in the model's time on the wire
            event.latency_ms = TURN_MS
            event.attempts = [{"outcome": "ok", "wire_ms": TURN_MS}]
        t.append(event)

    def decide(step: int, kind: DecisionKind, **kw: Any) -> None:
        add(ModelRequestEvent(step=step, message_count=2 * step, tools=tools))
        add(ModelDecisionEvent(step=step, kind=kind, **kw))

    add(RunStarted(run_id="corpus", model="corpus", tools=tools))
    add(UserMessage(content=task))
    for step, action in enumerate(actions, 1):
        if not isinstance(action, dict):
            raise _fail(where, f"action {step} is not an object")
        if "ask" in action:
            question = str(action.get("ask") or "")
            decide(step, DecisionKind.QUESTION, text=question)
            add(AgentMessage(content=question, kind="question", step=step))
            if action.get("answer") is not None:
                add(UserMessage(content=str(action["answer"]), source="simulator"))
            continue
        tool, args, result = action.get("tool"), action.get("args", {}), action.get("result", {})
        if not isinstance(tool, str) or not tool:
            raise _fail(where, f"action {step} has neither a tool nor an ask")
        if not isinstance(args, dict) or not isinstance(result, dict):
            raise _fail(where, f"action {step}: args and result must be objects")
        cid = f"call_{step}"
        decide(step, DecisionKind.TOOL_CALLS, tool_calls=[ToolCallRequest(id=cid, name=tool, arguments=args)])
        add(ToolCallEvent(step=step, call_id=cid, tool=tool, arguments=args))
        ok = bool(result.get("ok", "error" not in result))
        error = None if ok else str(result.get("error") or "error")
        add(ToolResultEvent(step=step, call_id=cid, tool=tool, ok=ok, data=result.get("data") if ok else None,
                            error=error, error_type=(str(result.get("error_type") or "tool_error")) if not ok else None))
    if isinstance(final, str):
        decide(len(actions) + 1, DecisionKind.FINAL, text=final)
        add(RunFinished(status=TerminalStatus.COMPLETED, reply=final, steps=len(actions) + 1))
    else:
        add(RunFinished(status=TerminalStatus.STEP_LIMIT, reply="", steps=len(actions), reason="trajectory ends"))
    return t


class NotAnItem(Exception):
    """A JSON file beside the items that is not one (a reader's labels, notes)."""


def load_corpus(folders: Iterable[Path], half: str | None = None) -> list[Item]:
    out = []
    for f in corpus_files(folders, half):
        try:
            out.append(load_item(f))
        except NotAnItem:
            continue
    return out


def default_folders() -> list[Path]:
    """The blind corpus in the repository: every folder named tuning / heldout under tests/data/loop_corpus."""
    return sorted({p.parent for p in CORPUS_ROOT.rglob("*.json") if half_of(p) and not is_not_item(p)}) \
        if CORPUS_ROOT.exists() else []


def authors_items() -> list[Item]:
    from corpus import items

    return [Item(id=i.id, label=i.label, family=i.pattern, trajectory=i.trajectory, trip_by=i.trip_by,
                 source=i.source, half="authors") for i in items()]


# -- measuring ---------------------------------------------------------------------
def action_index(trajectory: Trajectory) -> dict[int, int]:
    """Event seq -> the 1-based agent action it belongs to (a tool call or a
    question; a question decision belongs to the question it is about to ask)."""
    out: dict[int, int] = {}
    n = 0
    for e in trajectory:
        if isinstance(e, ToolCallEvent) or (isinstance(e, ModelDecisionEvent) and e.kind == DecisionKind.QUESTION):
            n += 1
        out[e.seq] = max(n, 1)
    return out


@dataclass
class Outcome:
    item: Item
    first: int | None        # action of the first trip
    hint: bool
    block: bool
    stop: bool
    trips: list
    notices: int = 0         # budget notices among the trips (see is_notice)


def is_notice(trip) -> bool:
    """A budget's soft notice ("80% of the tool-call budget used"): it comes at a fixed count, whatever
    the calls did. It still counts as a hint (the agent is told); ``notices`` says how many there were."""
    return trip.verdict.action == "hint" and trip.verdict.rule.startswith("budget.") \
        and trip.verdict.rule.endswith(".soft")


def run_item(item: Item, make: Callable[[], Sequence]) -> Outcome:
    trips = asyncio.run(check_trace(item.trajectory, list(make())))
    where = action_index(item.trajectory)
    notices = sum(1 for t in trips if not t.after_stop and is_notice(t))
    live = [t for t in trips if not t.after_stop]
    first = min((where.get(t.seq, 1) for t in live), default=None)
    kinds = {t.verdict.action for t in live}
    return Outcome(item, first, "hint" in kinds, "block" in kinds, bool(kinds & {"stop", "escalate"}),
                   [(where.get(t.seq, 1), t) for t in live], notices)


def measure(corpus: list[Item], make: Callable[[], Sequence]) -> dict:
    return summarize([run_item(i, make) for i in corpus])


def summarize(outcomes: list[Outcome]) -> dict:
    """The measurement of items already run (a subset of another measurement's ``outcomes``)."""
    loops = [o for o in outcomes if o.item.label == "loop"]
    oks = [o for o in outcomes if o.item.label == "ok"]
    caught = [o for o in loops if o.first is not None and o.first <= o.item.trip_by]
    families: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(
        ("loops", "caught", "oks", "hints", "blocks", "stops"), 0))
    for o in loops:
        f = families[o.item.family]
        f["loops"] += 1
        f["caught"] += o in caught
    for o in oks:
        f = families[o.item.family]
        f["oks"] += 1
        f["hints"] += o.hint
        f["blocks"] += o.block
        f["stops"] += o.stop
    return {
        "loops": len(loops), "oks": len(oks), "caught": len(caught),
        "missed": [f"{o.item.id}" + (f" (at {o.first}, due {o.item.trip_by})" if o.first else "")
                   for o in loops if o not in caught],
        "hints": [o.item.id for o in oks if o.hint], "blocks": [o.item.id for o in oks if o.block],
        "stops": [o.item.id for o in oks if o.stop],
        "alarms": [o.item.id for o in oks if o.first is not None],
        "notices": [o.item.id for o in outcomes if o.notices],
        "median": statistics.median(o.first for o in caught) if caught else None,
        "families": dict(sorted(families.items())), "outcomes": outcomes,
    }


# -- a second reader, as a detector -------------------------------------------------
def reader_labels(folders: Iterable[Path], reader: str = "second_reader") -> dict[str, dict]:
    """A reader's labels by item id, from every ``<reader>*.json`` (not its ``*_items.json`` map)
    under the corpus each folder belongs to (the folder above its ``tuning`` / ``heldout``, else the folder
    itself): a round's reader file sits beside its items or in a notes folder next to them."""
    def corpus_root(folder: Path) -> Path:
        folder = Path(folder).resolve()
        return next((p.parent for p in (folder, *folder.parents) if p.name in HALVES), folder)

    roots = {corpus_root(f) for f in folders}
    files = sorted({f.resolve() for r in roots if r.is_dir() for f in r.rglob(f"{reader}*.json")
                    if not f.name.endswith("_items.json")})
    out: dict[str, dict] = {}
    for f in files:
        if f.stat().st_size > MAX_FILE_BYTES:
            raise _fail(str(f), f"larger than {MAX_FILE_BYTES} bytes")
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _fail(str(f), f"not JSON ({exc})") from None
        if isinstance(data, dict):
            out |= {k: v for k, v in data.items() if isinstance(v, dict) and v.get("label") in ("loop", "ok")}
    return out


def other_readers(folders: Iterable[Path]) -> dict[str, dict[str, dict]]:
    """Every other reader's labels: a second reader's (every round has one), a third's (where one read too)."""
    return {"a second reader": reader_labels(folders, "second_reader"),
            "a third reader": reader_labels(folders, "third_reader")}


def reader_measure(corpus: list[Item], labels: dict[str, dict]) -> dict | None:
    """The second reader's own labels scored as if they were a detector, by the same measure as the stack:
    a loop caught when the reader called it a loop with an intervention point at or before the writer's
    ``trip_by``; an ok item the reader called a loop counts as a hint. Only items the reader labelled;
    None when there are none. The reader saw each whole trajectory (hindsight a live guard has not)."""
    read = [i for i in corpus if i.id in labels]
    if not read:
        return None

    def point(i: Item) -> int | None:
        r = labels[i.id]
        t = r.get("trip_by")
        return t if r["label"] == "loop" and isinstance(t, int) and not isinstance(t, bool) else None

    loops = [i for i in read if i.label == "loop"]
    oks = [i for i in read if i.label == "ok"]
    caught = [i for i in loops if point(i) is not None and point(i) <= i.trip_by]
    return {"loops": len(loops), "oks": len(oks), "caught": len(caught), "read": len(read),
            "hints": [i.id for i in oks if labels[i.id]["label"] == "loop"], "blocks": [], "stops": [],
            "median": statistics.median(point(i) for i in caught) if caught else None}


def passes(m: dict) -> bool:
    """The floor: recall >= 95%, hints on ok <= 2%, no block and no stop on ok."""
    return (m["loops"] == 0 or m["caught"] / m["loops"] >= 0.95) and \
        (m["oks"] == 0 or len(m["hints"]) / m["oks"] <= 0.02) and not m["blocks"] and not m["stops"]


def family_passes(f: dict) -> bool:
    return f["caught"] == f["loops"] and f["blocks"] == 0 and f["stops"] == 0 and f["hints"] == 0


def rule_alone(rule: str) -> Callable[[], Sequence]:
    return lambda: (LoopGuard(LoopConfig(rules=frozenset({rule}))),)


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} = {a / b:.1%}" if b else "-"


def _row(name: str, r: dict) -> str:
    median = "-" if r["median"] is None else f"{r['median']:g}"
    return (f"| {name} | {_pct(r['caught'], r['loops'])} | {_pct(len(r['hints']), r['oks'])} | {len(r['blocks'])} | "
            f"{len(r['stops'])} | {median} | {'meets' if passes(r) else 'MISSES'} |")


def report(title: str, corpus: list[Item], make: Callable[[], Sequence], *, items: bool = False,
           rules: bool = False, sealed: bool = False, by_folder: bool = False,
           extra: Sequence[tuple[str, list[Item]]] = (), readers: dict[str, dict[str, dict]] | None = None) -> dict:
    """Print one set: the stack's line (a line per sub-folder with ``by_folder``,
    a line per ``extra`` pool, a line per other reader's labels scored the same way, ``readers``: who ->
    labels), each rule alone with ``rules``, the per-family
    table, and, unless ``sealed``, the ids of the misses and false alarms."""
    m = measure(corpus, make)
    print(f"## {title}: {len(corpus)} items ({m['loops']} loop, {m['oks']} ok)\n")
    print("| stack | recall (by trip_by) | ok with a hint | ok with a block | ok with a stop | median action caught | floor |")
    print("|---|---:|---:|---:|---:|---:|---|")
    print(_row("reference stack (on)", m))
    groups: dict[str, list[Item]] = defaultdict(list)
    per_folder: dict[str, dict] = {}          # each folder's share of the one run above
    if by_folder:
        for it in corpus:
            groups[it.folder].append(it)
        if len(groups) > 1:
            for name, group in sorted(groups.items()):
                per_folder[name] = summarize([o for o in m["outcomes"] if o.item.folder == name])
                print(_row(f"  {name}/ ({len(group)} items)", per_folder[name]))
    for name, pool in extra:
        print(_row(f"  {name} ({len(pool)} items)", measure(pool, make)))
    readers = {who: labels for who, labels in (readers or {}).items() if labels}
    for who, labels in readers.items():
        human = reader_measure(corpus, labels)
        if human:
            print(_row(f"{who}'s labels, as a detector ({human['read']} items read; hindsight)", human))
    if readers and len(groups) > 1:
        per = {name: [reader_measure(group, labels) for labels in readers.values()]
               for name, group in sorted(groups.items())}
        if any(any(r) for r in per.values()):
            print("\n| folder | the stack's recall | " + " | ".join(f"{who}'s recall (as a detector)" for who in readers)
                  + " |")
            print("|---|---:|" + "---:|" * len(readers))
            for name, rs in per.items():
                if any(rs):
                    st = per_folder.get(name) or summarize([o for o in m["outcomes"] if o.item.folder == name])
                    print(f"| {name}/ | {_pct(st['caught'], st['loops'])} | "
                          + " | ".join(_pct(r['caught'], r['loops']) if r else "-" for r in rs) + " |")
    if rules:
        for r in RULES:
            print(_row(f"loop: {r} alone", measure(corpus, rule_alone(r))))
    print("\n| family | loop items | caught | ok items | hints | blocks | stops | |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for fam, f in m["families"].items():
        print(f"| {fam} | {f['loops']} | {f['caught']} | {f['oks']} | {f['hints']} | {f['blocks']} | {f['stops']} | "
              f"{'ok' if family_passes(f) else 'MISS'} |")
    print(f"\nitems with a budget notice (80% of a budget used; counted above as a hint): {len(m['notices'])}")
    if sealed:
        print("\n(sealed: item ids are not printed; --show-sealed-ids names them and spends the seal)\n")
        return m
    print(f"\nmissed: {', '.join(m['missed']) or 'none'}")
    print(f"hints on ok: {', '.join(m['hints']) or 'none'}; blocks on ok: {', '.join(m['blocks']) or 'none'}; "
          f"stops on ok: {', '.join(m['stops']) or 'none'}\n")
    if items:
        for o in m["outcomes"]:
            desc = "; ".join(f"{t.guard}.{t.verdict.rule} {t.verdict.action} @{at}" for at, t in o.trips[:3])
            print(f"  {o.item.id:44} {o.item.label:4} by {o.item.trip_by or '-':>3}  {desc or '-'}")
        print()
    return m


# -- leave one writer out ----------------------------------------------------------
# The folders of one person: a writer's second batch sits beside the first under a trailing round number
# (a, a2 -> writer a). Rules cannot be refit automatically, so "leave one writer out" is read off a
# per-writer table: a rule that only pays on the writer it was written for shows as a gap between writers.
def writer_of(item: Item) -> str:
    if item.half == "authors":
        return "authors"
    name = item.folder.split("/")[0]
    return name.rstrip("0123456789") or name


def lowo(corpus: list[Item], make: Callable[[], Sequence]) -> dict[str, dict]:
    """Per writer: the stack's measurement on that writer's items alone."""
    groups: dict[str, list[Item]] = defaultdict(list)
    for it in corpus:
        groups[writer_of(it)].append(it)
    return {w: measure(group, make) for w, group in sorted(groups.items())}


def lowo_report(corpus: list[Item], make: Callable[[], Sequence]) -> dict[str, dict]:
    per = lowo(corpus, make)
    print("## per writer (leave one writer out: each row is one person's items)\n")
    print("| writer | folders | recall (by trip_by) | ok with a hint | ok with a block | ok with a stop | floor |")
    print("|---|---|---:|---:|---:|---:|---|")
    for w, m in per.items():
        folders = sorted({o.item.folder for o in m["outcomes"]})
        print(f"| {w} | {', '.join(folders)} | {_pct(m['caught'], m['loops'])} | {_pct(len(m['hints']), m['oks'])} | "
              f"{len(m['blocks'])} | {len(m['stops'])} | {'meets' if passes(m) else 'MISSES'} |")
    blind = {w: m for w, m in per.items() if w != "authors" and m["loops"]}
    if blind:
        worst = min(blind, key=lambda w: blind[w]["caught"] / blind[w]["loops"])
        noisy = max(blind, key=lambda w: len(blind[w]["hints"]) / max(blind[w]["oks"], 1))
        rates = [blind[w]["caught"] / blind[w]["loops"] for w in blind]
        print(f"\nworst writer by recall: {worst} ({_pct(blind[worst]['caught'], blind[worst]['loops'])}); "
              f"most hints on ok: {noisy} ({_pct(len(blind[noisy]['hints']), blind[noisy]['oks'])}); "
              f"mean recall over writers {statistics.mean(rates):.1%}\n")
    return per


def write_traces(corpus: list[Item], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for it in corpus:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in it.id)[:120] or "item"
        it.trajectory.save(out / f"{it.half}-{safe}.jsonl")
    print(f"wrote {len(corpus)} traces to {out}/")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", action="append", type=Path, help="a folder of JSON items (repeatable)")
    p.add_argument("--half", choices=("tuning", "heldout", "authors", "all"), default="all")
    p.add_argument("--items", action="store_true", help="every item's first trip (sealed items only with "
                                                        "--show-sealed-ids)")
    p.add_argument("--rules", action="store_true")
    p.add_argument("--show-sealed-ids", action="store_true", help="name held-out items (spends the seal)")
    p.add_argument("--guards", default="on", help="the guard stack (default: the reference stack)")
    p.add_argument("--write-traces", type=Path)
    p.add_argument("--lowo", action="store_true", help="the tuning pool and the authors' corpus per writer")
    a = p.parse_args(argv)
    folders = a.corpus or default_folders()
    make = guard_stack(a.guards)
    try:
        if a.write_traces:
            write_traces(load_corpus(folders, None if a.half == "all" else a.half), a.write_traces)
            return 0
        if a.lowo:
            per = lowo_report(load_corpus(folders, "tuning") + authors_items(), make)
            return 0 if all(passes(m) for m in per.values()) else 1
        print(f"guards {a.guards!r}, offline path (check_trace); folders: "
              f"{', '.join(str(f) for f in folders) or 'none'}\n")
        ok = True
        authors = authors_items() if a.half in ("authors", "all") else []
        if a.half in ("tuning", "all"):
            corpus = load_corpus(folders, "tuning")
            if corpus:
                pools = [("tuning pool + authors' corpus", corpus + authors_items())]
                ok &= passes(report("tuning (written blind; tuned on)", corpus, make, items=a.items,
                                    rules=a.rules, by_folder=True, extra=pools, readers=other_readers(folders)))
            else:
                print("## tuning: no items\n")
        if a.half in ("heldout", "all"):
            corpus = load_corpus(folders, "heldout")
            if corpus:
                sealed = not a.show_sealed_ids
                ok &= passes(report("held-out (written blind, sealed)", corpus, make,
                                    items=a.items and not sealed, rules=a.rules, sealed=sealed,
                                    readers=other_readers(folders)))
            else:
                print("## held-out: no items (sealed material goes under tests/data/loop_corpus/heldout/); "
                      "skipped\n")
        if authors:
            ok &= passes(report("authors' corpus (written by the rule authors, tests/data/loop_corpus/corpus.py; "
                                "regression set)", authors, make, items=a.items, rules=a.rules))
    except CaseFileError as exc:
        if a.half in ("heldout", "all") and not a.show_sealed_ids and any(
                half_of(Path(str(loc.path))) in SEALED for loc, _ in exc.problems):
            print("error: a file of the sealed held-out set is not a valid item (its name is an item id: "
                  "--show-sealed-ids names it)", file=sys.stderr)
        else:
            print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
