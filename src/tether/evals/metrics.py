"""Counters, per-dimension rates with Wilson intervals, pass@k / pass^k (unbiased) and failure attribution."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from .._terminal import plural
from ..events import Outcome, Trajectory
from .case import Case
from .results import Attribution, CaseResult, Counters, DimensionMetrics, FailureMode, TrialResult
from .scoring import TrialScore, Verdict, combine, strategy_kinds, unsuccessful
from .stats import pass_at_k, pass_hat_k, wilson
from .wording_zh import evidence_zh

def dimension_info(suite: str, dimension: str) -> tuple[str, str]:
    """(display name, which way is better) of a dimension, as its suite declares it."""
    from ..plugins import suites

    found = suites().get(suite)
    if found is None:
        return f"{dimension} pass rate", "higher"
    return (found.dimension_names.get(dimension, f"{dimension} pass rate"),
            found.better.get(dimension, "higher"))


def dimension_order(suite: str, dimension: str) -> tuple[int, str]:
    """Dimensions in the order their suite declares them, then by name."""
    from ..plugins import suites

    found = suites().get(suite)
    order = list(found.better) if found is not None else []
    return (order.index(dimension) if dimension in order else len(order), dimension)


def in_suite_order(suite: str, dimensions: Iterable[str]) -> list[str]:
    """``dimensions`` once each, in the order their suite declares them (C4: LD, DR, PA,
    AR), whatever order a document stored them in (a store sorts its JSON keys)."""
    return sorted(dict.fromkeys(dimensions), key=lambda d: dimension_order(suite, d))


def legend_item(dimension: str, name: str) -> str:
    """``LD loop detection rate``; a name that already starts with its code (``PA pass
    rate``, the default of a suite that names none) is not prefixed twice."""
    return name if name.split(" ", 1)[0] == dimension else f"{dimension} {name}"


def counters(t: Trajectory) -> Counters:
    failed_sigs: set[str] = set()
    retries = 0
    for call, result in t.calls_with_results(executed_only=True):
        if call.signature in failed_sigs:
            retries += 1
        if unsuccessful(result):
            failed_sigs.add(call.signature)
    tools = {c.tool for c in t.tool_calls(executed_only=True)}
    return Counters(
        steps=t.finished.steps if t.finished else 0,
        tool_calls=len(t.tool_calls(executed_only=True)),
        blocked=len(t.tool_calls()) - len(t.tool_calls(executed_only=True)),
        retries=retries,
        max_identical=t.max_identical_calls(executed_only=True),
        strategies=len(strategy_kinds(t, tools)),
        questions=len(t.questions_to_user(include_history=False)),
        errors=sum(1 for r in t.tool_results() if not r.ok and r.outcome is not Outcome.BLOCKED),
        guard_trips=len(t.guard_trips()),
        outcomes={k: n for k, n in t.outcome_counts().items() if n},
        truncated=len(t.truncated_decisions()),
    )


_DEFAULT_FIX = {
    "loop": "在工具调用前检查是否与历史调用重复",
    "deadlock": "识别依赖无法满足时退出，说明原因并给出替代方案",
    "abandonment": "失败后至少尝试修改参数、重试或降级中的两种策略",
    "irrational_abandonment": "放弃时说明原因，并给出替代方案或建议",
    "hallucination": "只陈述工具实际返回的数据",
    "dropped_item": "保留所有被比较的对象，缺失的数据标注「数据不可得」",
}
_DEFAULT_FIX_EN = {
    "loop": "before a tool call, check whether it repeats an earlier call",
    "deadlock": "when a dependency cannot be met, stop, say why and offer an alternative",
    "abandonment": "after a failure, try at least two of: change the arguments, retry, fall back to another tool",
    "irrational_abandonment": "when giving up, say why and offer an alternative or a suggestion",
    "hallucination": "state only what the tools actually returned",
    "dropped_item": "keep every compared item; mark missing data as not available",
}


def _no_call(t: Trajectory, c: Counters, zh: bool) -> str:
    """What a run that executed no tool call did instead, from its record."""
    asked = c.questions
    status = str(t.status) if t.status else "none"
    if c.blocked:
        return (f"没有执行任何工具调用：{c.blocked} 次调用都被守卫拦下；运行以 {status} 结束" if zh else
                (f"no tool call ran: the one call was blocked by a guard; the run ended as {status}" if c.blocked == 1 else
                 f"no tool call ran: all {c.blocked} calls were blocked by a guard; the run ended as {status}"))
    if asked:
        return (f"没有调用任何工具：向用户提问 {asked} 次后，运行以 {status} 结束" if zh else
                f"made no tool call: asked the user {plural(asked, 'question')}, and the run ended as {status}")
    return (f"没有调用任何工具就直接回复，运行以 {status} 结束" if zh else
            f"made no tool call at all: it replied directly, and the run ended as {status}")


def _unsuccessful_calls(t: Trajectory, tools: list[str] | None = None) -> int:
    names = set(tools) if tools else None
    return sum(1 for call, result in t.calls_with_results(executed_only=True)
               if (names is None or call.tool in names) and unsuccessful(result))


def _root_cause(spec: Any, result, t: Trajectory, c: Counters, lang: str = "zh") -> str:
    """The root cause (根本原因) of one failed criterion, derived from what the record shows."""
    zh = lang == "zh"
    check = result.check
    tools = list(getattr(spec, "tools", None) or [])
    if check in ("call_count", "identical_calls", "strategies", "tool_called") and c.tool_calls == 0:
        return _no_call(t, c, zh)
    if check in ("call_count", "identical_calls"):
        low = getattr(getattr(spec, "pass_range", None), "min", None)
        if low is not None and result.value is not None and result.value < low:
            return (f"调用太少：{evidence_zh(spec, result, t)}" if zh else f"too few calls: {result.evidence}")
        if c.max_identical >= 3:
            return (f"未识别参数重复：同一调用（工具 + 参数完全相同）重复了 {c.max_identical} 次" if zh else
                    f"did not notice the repetition: the same call (tool and arguments) was made {c.max_identical} "
                    "times")
        bad = _unsuccessful_calls(t, tools or None)
        return (f"共 {c.tool_calls} 次工具调用，其中 {bad} 次失败或无结果，仍未及时停止（{evidence_zh(spec, result, t)}）" if zh else
                f"{plural(c.tool_calls, 'tool call')}, {bad} of them failed or empty, and it did not stop "
                f"({result.evidence})")
    if check == "questions_asked":
        return (f"用户拒绝提供信息后仍继续追问：共询问 {result.value} 次（含历史）" if zh else
                f"kept asking after the user declined: {plural(result.value or 0, 'question')} (history included)")
    if check == "status_in":
        return (f"运行以 {t.status} 结束，而不是说明原因后退出" if zh else
                f"the run ended as {t.status} instead of stopping with an explanation")
    if check == "strategies":
        if _unsuccessful_calls(t, tools) == 0:
            return (f"{'、'.join(tools)} 没有任何一次失败或空结果，没有需要恢复的失败" if zh else
                    f"no call to {', '.join(tools)} failed or came back empty: there was no failure to recover from")
        return (f"第一次失败后只尝试了 {result.value} 种恢复策略就结束" if zh else
                f"gave up after {result.value} recovery strategies following the first failure")
    if check == "no_invented":
        return (f"回复中出现了工具未返回的数据（{evidence_zh(spec, result, t)}）" if zh else
                f"the reply states data no tool returned ({result.evidence})")
    if check == "tool_called":
        return (f"流程执行到一半就结束：{evidence_zh(spec, result, t)}" if zh else
                f"the work stopped halfway: {result.evidence}")
    if check == "mentions":
        return (f"最终回复缺少应有的内容：{evidence_zh(spec, result, t)}" if zh else
                f"the final reply lacks what it should contain: {result.evidence}")
    return evidence_zh(spec, result, t) if zh else result.evidence


def _truncation_note(c: Counters, lang: str) -> str:
    """Said first when a reply was cut by the token limit: the failure may be the limit's, not the agent's."""
    if not c.truncated:
        return ""
    return (f"回复被输出长度上限截断（finish_reason length，{c.truncated} 次），不是完整的回答；" if lang == "zh" else
            f"the reply was truncated by the output token limit (finish_reason length, {c.truncated} time(s)), "
            "not a complete answer; ")


def attribute(case: Case, trial: int, score: TrialScore, t: Trajectory, c: Counters) -> Attribution | None:
    """The failure attribution (失败归因) of a failed trial (None when it did not fail)."""
    failed = score.failed()
    if not failed:
        return None
    by_id = {cr.id: cr for cr in case.criteria}
    first = failed[0]
    spec = by_id[first.id]
    translations = {lang: {"root_cause": _truncation_note(c, lang) + _root_cause(spec, first, t, c, lang)}
                    for lang in ("en", "zh")}
    translations["zh"]["manifestation"] = "；".join(f"{r.id}：{evidence_zh(by_id[r.id], r, t)}" for r in failed)
    if not spec.fix_suggestion:
        translations["en"]["fix_suggestion"] = _DEFAULT_FIX_EN.get(spec.failure_type, "")
        translations["zh"]["fix_suggestion"] = _DEFAULT_FIX.get(spec.failure_type, "")
    return Attribution(
        case_id=case.id, trial=trial, failure_type=spec.failure_type,
        manifestation="; ".join(f"{r.id}: {r.evidence}" for r in failed),
        root_cause=translations["zh"]["root_cause"],
        fix_suggestion=spec.fix_suggestion or _DEFAULT_FIX.get(spec.failure_type, ""),
        criteria=[r.id for r in failed], translations=translations,
    )


def scored_trials(trials: list[TrialResult]) -> list[TrialResult]:
    """The trials that count for the agent: errored trials (the run or its judge
    failed) and simulator faults are left out."""
    return [tr for tr in trials if tr.scored]


def case_result(case: Case, trials: list[TrialResult]) -> CaseResult:
    """Verdict and pass rates over the scored trials (all trials are still listed).
    A case whose every trial errored is ``error``; one whose every trial is a
    simulator fault is ``unjudged``; neither has a pass rate. Rates count the
    decided trials only (verdict pass / fail / unclear): an unjudged trial is
    not a failure, and a case with no decided trial has no rate (never 0 %)."""
    scored = scored_trials(trials)
    if scored:
        verdict, auto = combine(tr.verdict for tr in scored), combine(tr.auto_verdict for tr in scored)
    elif trials and all(tr.errored for tr in trials):
        verdict = auto = Verdict.ERROR
    else:
        verdict = auto = Verdict.UNJUDGED
    decided = [tr for tr in scored if tr.verdict != Verdict.UNJUDGED]
    n, c = len(decided), sum(1 for tr in decided if tr.verdict == Verdict.PASS)
    auto_decided = [tr for tr in scored if tr.auto_verdict != Verdict.UNJUDGED]
    auto_c = sum(1 for tr in auto_decided if tr.auto_verdict == Verdict.PASS)
    ci = wilson(c, n)
    return CaseResult(
        case_id=case.id, title=case.title, dimension=case.dimension, verdict=verdict, auto_verdict=auto,
        pass_at_1=round(c / n, 4) if n else None,
        pass_hat_k=round(pass_hat_k(n, c, n), 4) if n else None,
        decided=n, passed=c,
        pass_at_k={k: round(pass_at_k(n, c, k), 4) for k in range(1, n + 1)} if n else None,
        pass_hat={k: round(pass_hat_k(n, c, k), 4) for k in range(1, n + 1)} if n else None,
        interval=(round(ci.low, 4), round(ci.high, 4)) if ci else None,
        auto_pass_at_1=round(auto_c / len(auto_decided), 4) if auto_decided else None,
        trials=trials,
    )


def dimension_metrics(cases: list[tuple[Case, CaseResult]]) -> dict[str, DimensionMetrics]:
    out: dict[str, DimensionMetrics] = {}
    grouped: dict[str, list[CaseResult]] = defaultdict(list)
    faults: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)
    suite_of: dict[str, str] = {}
    for case, result in cases:
        suite_of.setdefault(case.dimension, case.suite)
        faults[case.dimension] += sum(1 for tr in result.trials if tr.simulator_fault and not tr.errored)
        errors[case.dimension] += sum(1 for tr in result.trials if tr.errored)
        if scored_trials(result.trials) or not result.trials:   # no scored trial: left out
            grouped[case.dimension].append(result)
    for dim in sorted(suite_of, key=lambda d: dimension_order(suite_of[d], d)):
        name, better = dimension_info(suite_of[dim], dim)
        results = grouped.get(dim, [])
        if not results and not faults[dim] and not errors[dim]:
            continue
        counts = {v: sum(1 for r in results if r.verdict == v) for v in Verdict}
        autos = {v: sum(1 for r in results if r.auto_verdict == v) for v in Verdict}
        out[dim] = DimensionMetrics(
            name=name, better=better,
            rate=_rate(counts, better), auto_rate=_rate(autos, better), cases=len(results),
            interval=_interval(counts, better), auto_interval=_interval(autos, better),
            passed=counts[Verdict.PASS], failed=counts[Verdict.FAIL],
            unclear=counts[Verdict.UNCLEAR], unjudged=counts[Verdict.UNJUDGED], simulator_faults=faults[dim],
            errors=errors[dim],
        )
    return out


def _rate(counts: dict[Verdict, int], better: str) -> float | None:
    decided = counts[Verdict.PASS] + counts[Verdict.FAIL]
    if not decided:
        return None
    hit = counts[Verdict.FAIL] if better == "lower" else counts[Verdict.PASS]
    return round(hit / decided, 4)


def _interval(counts: dict[Verdict, int], better: str) -> tuple[float, float] | None:
    """The Wilson 95 % interval of :func:`_rate` (None when nothing is decided)."""
    decided = counts[Verdict.PASS] + counts[Verdict.FAIL]
    ci = wilson(counts[Verdict.FAIL] if better == "lower" else counts[Verdict.PASS], decided)
    return (round(ci.low, 4), round(ci.high, 4)) if ci else None


def failure_modes(results: list[CaseResult]) -> dict[str, FailureMode]:
    total = sum(len(scored_trials(r.trials)) for r in results)
    modes: dict[str, FailureMode] = {}
    for r in results:
        for tr in scored_trials(r.trials):
            if tr.attribution is None:
                continue
            m = modes.setdefault(tr.attribution.failure_type, FailureMode(count=0, rate=0.0))
            m.count += 1
            if r.case_id not in m.cases:
                m.cases.append(r.case_id)
    for m in modes.values():
        m.rate = round(m.count / total, 4) if total else 0.0
    return dict(sorted(modes.items()))
