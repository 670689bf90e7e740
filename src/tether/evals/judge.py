"""The LLM judge: rubric criteria decided by a model, with samples and a cache.

One request per rubric criterion (and per sample): the case, the criterion
(rubric, pass_when, fail_when, the seed's own wording) and the run rendered
compactly (numbered events ``#seq``: user messages, the agent's questions,
tool calls with what the tools returned, guard trips, the final reply;
Chinese kept as is). The judge answers one JSON object::

    {"verdict": "pass" | "fail" | "unclear", "reason": "...", "steps": [8, 20]}

Answers are parsed robustly (code fences, prose around the object); an answer
with no usable object becomes ``unclear`` with the parse problem as its reason,
never an exception.

With ``samples=N`` the same request is made N times. Unanimous samples give
their verdict; any disagreement gives ``unclear``, reported as a disagreement
(the ``value`` of the criterion result is the agreement ratio: the share of
samples that gave the most common verdict).

Answers are cached by canonical request: sha256 of the canonical JSON of the
judge's name, the messages and the sample index, in a readable JSON Lines file
(``<cache dir>/answers.jsonl``, default ``.tether-cache/judge/``). A second
scoring of the same traces makes no judge request at all.

Documented in docs/judge.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel, Field

from ..errors import UsageError
from ..events import AgentMessage, GuardTripped, Outcome, ModelDecisionEvent, ToolCallEvent, ToolResultEvent, Trajectory, UserMessage
from ..messages import Message, canonical_json
from ..models import Model, ModelRequest
from .case import Case, Rubric
from .scoring import CriterionResult, Verdict

__all__ = [
    "DEFAULT_CACHE_DIR",
    "JUDGE_SYSTEM_PROMPT",
    "Conflict",
    "Judge",
    "JudgeCache",
    "JudgeCall",
    "JudgeRecord",
    "JudgeSample",
    "find_conflicts",
    "judge_messages",
    "judge_trial",
    "parse_judge_answer",
    "render_run",
]

DEFAULT_CACHE_DIR = Path(".tether-cache") / "judge"
CACHE_FILE = "answers.jsonl"

JUDGE_SYSTEM_PROMPT = """\
You are a strict, careful evaluator of one run of a tool-using AI agent. You decide ONE criterion of a test case.

You are given:
- the case: the user's task and the behaviour the test expects;
- the criterion: a rubric, when it passes, when it fails, and the test author's original wording (判定标准);
- the run, as numbered events (#N): user messages, questions the agent asked, every tool call with what the tool \
actually returned (long results are shortened), guard interventions, and the agent's final reply.

Rules:
- Judge only this criterion, and only from the events shown. Tool results are the ground truth: anything the final \
reply states that no tool result or user message supports is invented.
- "pass": the run clearly meets the pass condition. "fail": it clearly meets the fail condition, or clearly misses \
the pass condition. "unclear": the events do not let you decide; say what is missing. Do not guess.
- Cite the numbers (#N) of the events your verdict relies on.

Answer with ONE JSON object and nothing else:
{"verdict": "pass" | "fail" | "unclear", "reason": "<one or two sentences, in the language of the rubric>", \
"steps": [<event numbers>]}"""

# Rendering limits (characters). Long tool results are shortened with a marker
# saying how much was cut; the final reply is kept whole up to REPLY_LIMIT.
ARGS_LIMIT = 300
RESULT_LIMIT = 700
REPLY_LIMIT = 4000
RUN_LIMIT = 24000


# -- rendering the run ---------------------------------------------------------
def _clip(text: str, limit: int) -> str:
    text = text.replace("\r", "")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def _one_line(text: str) -> str:
    return " ⏎ ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def _result_text(result: ToolResultEvent | None, limit: int) -> str:
    if result is None:
        return "-> (no result)"
    if result.outcome is Outcome.BLOCKED:
        return f"-> blocked by a guard: {_one_line(result.error or canonical_json(result.data))}"
    if not result.executed:
        return f"-> not run ({result.outcome.label}): {_one_line(result.error or canonical_json(result.data))}"
    if not result.ok:
        kind = f" [{result.error_type}]" if result.error_type else ""
        body = result.error if result.error is not None else canonical_json(result.data)
        return f"-> error{kind}: {_clip(_one_line(str(body)), limit)}"
    data = result.data if isinstance(result.data, str) else canonical_json(result.data)
    return f"-> ok: {_clip(_one_line(data), limit)}"


def run_lines(trajectory: Trajectory, *, result_limit: int = RESULT_LIMIT, args_limit: int = ARGS_LIMIT,
              total_limit: int = RUN_LIMIT) -> list[str]:
    """The run as one line per event a judge or reviewer needs, each ``#seq ...``.

    The final reply is not included (see :func:`render_run`). When the lines
    exceed ``total_limit`` characters, calls from the middle of the run are
    elided with a marker saying how many.
    """
    results = {r.call_id: r for r in trajectory.tool_results()}
    lines: list[str] = []
    for e in trajectory.events:
        if isinstance(e, UserMessage):
            who = {"input": "user", "history": "user (earlier turn)", "simulator": "user"}[e.source]
            lines.append(f"#{e.seq} {who}: {_one_line(e.content)}")
        elif isinstance(e, AgentMessage):
            if e.kind == "final":
                continue
            label = "agent asks" if e.kind == "question" else "agent says"
            if e.source == "history":
                label += " (earlier turn)"
            lines.append(f"#{e.seq} {label}: {_one_line(e.content)}")
        elif isinstance(e, ModelDecisionEvent):
            if e.tool_calls and e.text.strip():
                lines.append(f"#{e.seq} agent note: {_clip(_one_line(e.text), args_limit)}")
        elif isinstance(e, ToolCallEvent):
            args = _clip(canonical_json(e.arguments), args_limit)
            lines.append(f"#{e.seq} call {e.tool} {args} {_result_text(results.get(e.call_id), result_limit)}")
        elif isinstance(e, GuardTripped):
            lines.append(f"#{e.seq} guard {e.guard} ({e.rule}, {e.verdict}): {_one_line(e.message)}")
    return _elide(lines, total_limit)


def _elide(lines: list[str], limit: int) -> list[str]:
    if sum(len(line) + 1 for line in lines) <= limit or len(lines) < 8:
        return lines
    head: list[str] = []
    tail: list[str] = []
    budget = limit // 2
    for line in lines:
        if sum(len(x) + 1 for x in head) + len(line) > budget:
            break
        head.append(line)
    for line in reversed(lines[len(head):]):
        if sum(len(x) + 1 for x in tail) + len(line) > budget:
            break
        tail.insert(0, line)
    cut = len(lines) - len(head) - len(tail)
    if cut <= 0:
        return lines
    return head + [f"… {cut} events elided (the run is long; the first and last events are shown) …"] + tail


def render_run(trajectory: Trajectory) -> str:
    """The run block of the judge prompt: events, then the final reply and status."""
    finished = trajectory.finished
    status = str(finished.status) if finished else "unknown (no run_finished event)"
    steps = finished.steps if finished else 0
    out = [f"Status: {status} after {steps} step(s)."]
    out += run_lines(trajectory)
    if finished is not None:
        reply = finished.reply.strip()
        out.append(f"#{finished.seq} final reply:" if reply else f"#{finished.seq} final reply: (empty)")
        if reply:
            out.append(_clip(reply, REPLY_LIMIT))
        if finished.error:
            out.append(f"(run error: {finished.error})")
    return "\n".join(out)


def judge_messages(case: Case, criterion: Rubric, trajectory: Trajectory) -> list[Message]:
    """The judge request for one criterion: the system prompt and one user message."""
    parts = [f"## Case {case.id} · {case.title} (dimension {case.dimension})"]
    task = case.input.message or next((t.content for t in reversed(case.input.history) if t.role == "user"), "")
    if task:
        parts.append(f"User's task: {task}")
    if case.expected_behavior:
        parts.append("Expected behaviour:\n" + "\n".join(f"- {b}" for b in case.expected_behavior))
    parts.append(f"\n## Criterion {criterion.id}")
    parts.append(f"Rubric: {criterion.rubric.strip()}")
    if criterion.pass_when:
        parts.append(f"Passes when: {criterion.pass_when.strip()}")
    if criterion.fail_when:
        parts.append(f"Fails when: {criterion.fail_when.strip()}")
    if criterion.seed_text:
        parts.append(f"Test author's wording (判定标准):\n{criterion.seed_text.strip()}")
    parts.append("\n## Run")
    parts.append(render_run(trajectory))
    parts.append('\nAnswer with one JSON object: {"verdict": "pass" | "fail" | "unclear", "reason": "...", "steps": [...]}')
    return [Message(role="system", content=JUDGE_SYSTEM_PROMPT), Message(role="user", content="\n".join(parts))]


# -- parsing the answer ------------------------------------------------------------
class JudgeSample(BaseModel):
    """One judge answer, parsed."""

    verdict: Literal["pass", "fail", "unclear"]
    reason: str = ""
    steps: list[int] = Field(default_factory=list)
    problem: str | None = None     # why the answer could not be used (then verdict is unclear)
    cached: bool = False
    # The request itself failed (after the adapter's retries): "infrastructure" when
    # the judge could not be reached or kept failing, "model" otherwise. Such a
    # sample is no verdict at all: it is left out of the criterion's verdict.
    error_kind: str | None = None


_VERDICT_WORDS = {
    "pass": "pass", "passed": "pass", "passes": "pass", "通过": "pass", "合格": "pass",
    "fail": "fail", "failed": "fail", "fails": "fail", "failure": "fail", "不通过": "fail", "失败": "fail",
    "不合格": "fail",
    "unclear": "unclear", "uncertain": "unclear", "unknown": "unclear", "undecided": "unclear",
    "不确定": "unclear", "无法判断": "unclear", "不明确": "unclear",
}
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.S)


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object found in the text: fenced blocks first, then anywhere."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for src in sources:
        i = src.find("{")
        while i != -1:
            try:
                obj, end = decoder.raw_decode(src, i)
            except json.JSONDecodeError:
                i = src.find("{", i + 1)
                continue
            if isinstance(obj, dict):
                found.append(obj)
            i = src.find("{", end)
    return found


def _steps(value: Any) -> list[int]:
    items = value if isinstance(value, list) else [value]
    steps: list[int] = []
    for item in items:
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            steps.append(item)
        elif isinstance(item, str):
            steps += [int(n) for n in re.findall(r"\d+", item)]
    return list(dict.fromkeys(steps))


def parse_judge_answer(text: str) -> JudgeSample:
    """Parse a judge answer; anything unusable becomes ``unclear`` with the problem."""
    if not text or not text.strip():
        return JudgeSample(verdict="unclear", reason="the judge gave an empty answer", problem="empty answer")
    objects = _objects(text)
    if not objects:
        snippet = _clip(_one_line(text), 120)
        return JudgeSample(verdict="unclear", reason=f"the judge answer is not JSON: {snippet}",
                           problem="no JSON object in the answer")
    lowered = [{str(k).strip().lower(): v for k, v in obj.items()} for obj in objects]
    obj = next((o for o in lowered if "verdict" in o), None)
    if obj is None:
        keys = sorted(lowered[0])
        return JudgeSample(verdict="unclear", reason=f"the judge answer has no \"verdict\" key (keys: {keys})",
                           problem="no verdict key")
    raw = obj["verdict"]
    word = _VERDICT_WORDS.get(str(raw).strip().lower()) if isinstance(raw, str) else None
    reason = obj.get("reason", obj.get("explanation", obj.get("rationale", "")))
    reason = reason if isinstance(reason, str) else canonical_json(reason)
    steps = _steps(obj.get("steps", obj.get("events", [])))
    if word is None:
        return JudgeSample(verdict="unclear", steps=steps,
                           reason=f"the judge answered verdict {raw!r}, expected pass, fail or unclear"
                                  + (f" ({reason.strip()})" if reason.strip() else ""),
                           problem="bad verdict value")
    return JudgeSample(verdict=word, reason=reason.strip(), steps=steps)


# -- the cache -------------------------------------------------------------------
def request_key(model_name: str, messages: Sequence[Message], sample: int) -> str:
    """sha256 of the canonical JSON of the judge's name, the messages and the sample index."""
    payload = {
        "model": model_name,
        "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in messages],
        "sample": sample,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class JudgeCache:
    """Judge answers in a readable JSON Lines file, one answer a line.

    Each line: ``{"key", "model", "sample", "case_id", "criterion", "answer", "created"}``.
    Lookups are by ``key`` only; the other fields are there for people. Lines
    that do not parse are skipped (and counted in ``skipped``), never fatal.
    """

    def __init__(self, directory: str | Path = DEFAULT_CACHE_DIR):
        self.directory = Path(directory)
        self.path = self.directory / CACHE_FILE
        self._answers: dict[str, str] | None = None
        self.skipped = 0

    def _load(self) -> dict[str, str]:
        if self._answers is None:
            self._answers = {}
            if self.path.exists():
                for line in self.path.read_text(encoding="utf-8").split("\n"):
                    try:
                        row = json.loads(line)
                        self._answers[row["key"]] = row["answer"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        if line.strip():
                            self.skipped += 1
        return self._answers

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def put(self, key: str, answer: str, **meta: Any) -> None:
        answers = self._load()
        if answers.get(key) == answer:
            return
        answers[key] = answer
        self.directory.mkdir(parents=True, exist_ok=True)
        row = {"key": key, **meta, "answer": answer,
               "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def __len__(self) -> int:
        return len(self._load())


# -- judging -------------------------------------------------------------------
class JudgeRecord(BaseModel):
    """The judge's decision on one criterion of one trial, with every sample."""

    criterion: str
    judge: str                       # "llm:<model name>"
    verdict: Verdict
    agreement: float                 # share of samples that gave the most common verdict
    samples: list[JudgeSample]
    disagreement: bool = False
    # Every request for this criterion failed: no verdict (``unjudged``); the
    # trial is reported as an error of this kind, not as agent behaviour.
    error_kind: str | None = None

    @property
    def failed(self) -> bool:
        return self.error_kind is not None

    @property
    def answered(self) -> list[JudgeSample]:
        return [s for s in self.samples if s.error_kind is None]

    @property
    def sample_verdicts(self) -> list[str]:
        return [s.verdict for s in self.answered]

    def evidence(self) -> str:
        if self.failed:
            return f"no verdict: {self.samples[0].reason}"
        n = len(self.answered)
        if self.disagreement:
            counts = Counter(self.sample_verdicts)
            tally = ", ".join(f"{k} {counts[k]}" for k in ("pass", "fail", "unclear") if counts[k])
            reasons = " | ".join(f"{s.verdict}: {_clip(_one_line(s.reason), 160)}" for s in self.answered)
            return f"judge samples disagree ({tally} of {n}; agreement {self.agreement:.0%}): {reasons}"
        first = next((s for s in self.answered if s.reason), self.answered[0])
        steps = sorted({st for s in self.answered for st in s.steps})
        where = f" [events {', '.join(f'#{st}' for st in steps)}]" if steps else ""
        agree = f"{n}/{n} samples agree: " if n > 1 else ""
        return f"{agree}{first.reason or '(no reason given)'}{where}"

    def to_result(self, criterion: Rubric, *, at: str | None = None) -> CriterionResult:
        expected = criterion.pass_when or criterion.rubric[:80]
        if self.failed:
            return CriterionResult(id=criterion.id, kind="judge", check="rubric", verdict=Verdict.UNJUDGED,
                                   expected=expected, evidence=self.evidence())
        return CriterionResult(id=criterion.id, kind="judge", check="rubric", verdict=self.verdict,
                               value=round(self.agreement, 4), expected=expected, evidence=self.evidence(),
                               judged_by=self.judge, judged_at=at or _now(), samples=self.sample_verdicts,
                               agreement=round(self.agreement, 4))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def combine_samples(criterion_id: str, judge: str, samples: list[JudgeSample]) -> JudgeRecord:
    """Unanimous samples give their verdict; any disagreement is ``unclear``.
    Samples whose request failed are left out; when every one failed the
    record has no verdict (``unjudged``) and carries the failure's kind."""
    answered = [s for s in samples if s.error_kind is None]
    if not answered:
        kind = "infrastructure" if any(s.error_kind == "infrastructure" for s in samples) else "model"
        return JudgeRecord(criterion=criterion_id, judge=judge, verdict=Verdict.UNJUDGED, agreement=0.0,
                           samples=samples, error_kind=kind)
    counts = Counter(s.verdict for s in answered)
    top, top_n = counts.most_common(1)[0]
    agreement = top_n / len(answered)
    disagreement = len(counts) > 1
    verdict = Verdict(top) if not disagreement else Verdict.UNCLEAR
    return JudgeRecord(criterion=criterion_id, judge=judge, verdict=verdict, agreement=agreement,
                       samples=samples, disagreement=disagreement)


@dataclass
class JudgeCall:
    """One request the judge actually sent, with its answer (for the run's record)."""

    request: ModelRequest
    response: Any
    latency_ms: float
    sample: int
    criterion: str
    model: str


RequestHook = Callable[[JudgeCall], None]


@dataclass
class JudgeStats:
    requests: int = 0        # requests made to the judge model
    cache_hits: int = 0
    failures: int = 0        # requests that raised (recorded as unclear, not cached)
    criteria: int = 0        # criteria judged


@dataclass
class Judge:
    """A judge model with its settings: samples per criterion, cache, concurrency.

    ``cache_dir=None`` disables the cache. ``stats`` counts requests and cache
    hits across every call.
    """

    model: Model
    samples: int = 1
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR
    concurrency: int = 4
    stats: JudgeStats = field(default_factory=JudgeStats)

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise UsageError(f"judge samples must be at least 1 (got {self.samples})")
        self.cache = JudgeCache(self.cache_dir) if self.cache_dir is not None else None
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None
        self._inflight: dict[str, asyncio.Future[str]] = {}

    @property
    def label(self) -> str:
        return f"llm:{self.model.name}"

    async def _answer(self, messages: list[Message], sample: int, meta: dict[str, Any],
                      on_request: "RequestHook | None" = None) -> JudgeSample:
        key = request_key(self.model.name, messages, sample)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return parse_judge_answer(hit).model_copy(update={"cached": True})
        if key in self._inflight:          # the same request is already on its way
            self.stats.cache_hits += 1
            try:
                return parse_judge_answer(await asyncio.shield(self._inflight[key]))
            except UsageError:
                raise
            except Exception as exc:   # noqa: BLE001 - reported as unclear
                return self._failed(exc)
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            loop = asyncio.get_running_loop()
            if self._sem is None or self._sem_loop is not loop:   # one per event loop (asyncio.run twice)
                self._sem, self._sem_loop = asyncio.Semaphore(max(1, self.concurrency)), loop
            async with self._sem:
                self.stats.requests += 1
                request = ModelRequest(messages=messages, step=sample)
                started = time.perf_counter()
                response = await self.model.request(request)
                latency_ms = (time.perf_counter() - started) * 1000
            text = response.decision.text
            if on_request is not None:
                on_request(JudgeCall(request=request, response=response, latency_ms=latency_ms, sample=sample,
                                     criterion=str(meta.get("criterion", "")), model=self.model.name))
            fut.set_result(text)
        except UsageError as exc:
            fut.set_exception(exc)
            fut.exception()   # retrieved: no "never retrieved" warning
            raise
        except Exception as exc:  # noqa: BLE001 - a judge failure is an unclear sample, never a crash
            fut.set_exception(exc)
            fut.exception()
            return self._failed(exc)
        finally:
            self._inflight.pop(key, None)
        if self.cache is not None:
            self.cache.put(key, text, model=self.model.name, sample=sample, **meta)
        return parse_judge_answer(text)

    def _failed(self, exc: BaseException) -> JudgeSample:
        self.stats.failures += 1
        detail = f"{type(exc).__name__}: {exc}"
        kind = "infrastructure" if getattr(exc, "infrastructure", False) else "model"
        return JudgeSample(verdict="unclear", reason=f"the judge request failed ({_clip(detail, 200)})",
                           problem="request failed", error_kind=kind)

    async def judge_criterion(self, case: Case, criterion: Rubric, trajectory: Trajectory,
                              on_request: "RequestHook | None" = None) -> JudgeRecord:
        messages = judge_messages(case, criterion, trajectory)
        meta = {"case_id": case.id, "criterion": criterion.id}
        samples = await asyncio.gather(*(self._answer(messages, i, meta, on_request) for i in range(self.samples)))
        self.stats.criteria += 1
        return combine_samples(criterion.id, self.label, list(samples))

    async def judge_trial(self, case: Case, trajectory: Trajectory, criteria: Sequence[str] | None = None, *,
                          on_request: "RequestHook | None" = None) -> dict[str, JudgeRecord]:
        """Judge every rubric criterion of the case (or only the ids in ``criteria``).
        ``on_request`` is called with every request actually sent (not cache hits),
        so the caller can record it as an event of the judged run."""
        wanted = [c for c in case.judge_criteria if criteria is None or c.id in criteria]
        records = await asyncio.gather(*(self.judge_criterion(case, c, trajectory, on_request) for c in wanted))
        return {r.criterion: r for r in records}


def as_judge(judge: Model | Judge, samples: int = 1, cache_dir: str | Path | None = DEFAULT_CACHE_DIR) -> Judge:
    return judge if isinstance(judge, Judge) else Judge(judge, samples=samples, cache_dir=cache_dir)


async def judge_trial(case: Case, trajectory: Trajectory, judge_model: Model | Judge, samples: int = 1, *,
                      cache_dir: str | Path | None = DEFAULT_CACHE_DIR) -> dict[str, CriterionResult]:
    """Judge every rubric criterion of ``case`` over ``trajectory``.

    Returns criterion id -> :class:`CriterionResult` (``judged_by`` ``"llm:<model name>"``,
    ``value`` the samples' agreement), ready for ``score_trajectory(..., judged=...)``.
    Pass a :class:`Judge` instead of a model to share its cache and statistics.
    """
    judge = as_judge(judge_model, samples, cache_dir)
    records = await judge.judge_trial(case, trajectory)
    by_id = {c.id: c for c in case.judge_criteria}
    return {cid: rec.to_result(by_id[cid]) for cid, rec in records.items()}


# -- judge vs counters ---------------------------------------------------------------
class Conflict(BaseModel):
    """A judge (LLM or human) passed a criterion while an automatic check of the same
    case failed. Flagged for a person to look at; verdicts are not changed."""

    criterion: str                   # the judged criterion
    judged_by: str
    judge_verdict: str
    check: str                       # the automatic criterion that failed
    check_verdict: str
    failure_type: str                # the judged criterion's failure type
    check_failure_type: str
    same_failure_type: bool
    message: str


def find_conflicts(case: Case, criteria: Sequence[CriterionResult]) -> list[Conflict]:
    """Judge-vs-counter disagreements in one trial's criterion results."""
    specs = {c.id: c for c in case.criteria}
    failed_autos = [r for r in criteria if r.kind == "auto" and r.verdict == Verdict.FAIL and r.judged_by is None]
    out: list[Conflict] = []
    for r in criteria:
        if r.kind != "judge" or r.verdict != Verdict.PASS or not r.judged_by:
            continue
        ft = specs[r.id].failure_type if r.id in specs else "other"
        for auto in failed_autos:
            aft = specs[auto.id].failure_type if auto.id in specs else "other"
            same = ft == aft
            why = f"same failure type {ft}" if same else f"failure types {ft} / {aft}"
            out.append(Conflict(
                criterion=r.id, judged_by=r.judged_by, judge_verdict=str(r.verdict), check=auto.id,
                check_verdict=str(auto.verdict), failure_type=ft, check_failure_type=aft, same_failure_type=same,
                message=f"{r.id} judged pass by {r.judged_by}, but automatic {auto.id} failed ({why}): "
                        f"{_clip(auto.evidence, 160)}",
            ))
    return out
