"""Counters, per-dimension rates, pass^k and failure attribution."""

from __future__ import annotations

from collections import defaultdict

from ..events import Trajectory
from .case import Case, Dimension
from .results import Attribution, CaseResult, Counters, DimensionMetrics, FailureMode, TrialResult
from .scoring import TrialScore, Verdict, combine, strategy_kinds, unsuccessful

DIMENSIONS = {
    Dimension.LD: ("loop detection rate", "higher"),
    Dimension.DR: ("deadlock recovery rate", "higher"),
    Dimension.PA: ("premature abandonment rate", "lower"),
    Dimension.AR: ("abandonment rationality rate", "higher"),
}


def counters(t: Trajectory) -> Counters:
    failed_sigs: set[str] = set()
    retries = 0
    for call, result in t.calls_with_results():
        if call.signature in failed_sigs:
            retries += 1
        if unsuccessful(result):
            failed_sigs.add(call.signature)
    tools = {c.tool for c in t.tool_calls()}
    return Counters(
        steps=t.finished.steps if t.finished else 0,
        tool_calls=len(t.tool_calls()),
        retries=retries,
        max_identical=t.max_identical_calls(),
        strategies=len(strategy_kinds(t, tools)),
        questions=len(t.questions_to_user(include_history=False)),
        errors=sum(1 for r in t.tool_results() if not r.ok),
    )


_ROOT_CAUSES = {
    "loop": "未识别重复操作：同一工具被反复调用，未根据失败结果改变策略",
    "deadlock": "未识别依赖链断裂或用户拒绝提供信息造成的死锁，持续等待或追问",
    "abandonment": "遇到轻微障碍就放弃，未尝试修改参数、重试或降级",
    "irrational_abandonment": "放弃时未说明原因或未给出替代方案",
    "hallucination": "回复中出现工具未返回的数据",
    "dropped_item": "结果不完整时删掉了用户要求的对象，而不是标注缺失",
}


def attribute(case: Case, trial: int, score: TrialScore, t: Trajectory, c: Counters) -> Attribution | None:
    failed = score.failed()
    if not failed:
        return None
    by_id = {cr.id: cr for cr in case.criteria}
    first = by_id[failed[0].id]
    failure_type = first.failure_type
    manifestation = "; ".join(f"{r.id}: {r.evidence}" for r in failed)
    root = _ROOT_CAUSES.get(failure_type, "见失败的判定标准")
    if failure_type == "loop" and c.max_identical >= 3:
        root = f"未识别参数重复：同一调用（工具 + 参数完全相同）重复了 {c.max_identical} 次"
    elif failure_type == "loop":
        root = f"不断调整参数但没有新结果，共 {c.tool_calls} 次工具调用，未及时停止"
    elif failure_type == "abandonment":
        root = f"第一次失败后只尝试了 {c.strategies} 种恢复策略就结束"
    fix = first.fix_suggestion or {
        "loop": "在工具调用前检查是否与历史调用重复",
        "deadlock": "识别依赖无法满足时退出并说明原因、给出替代方案",
        "abandonment": "失败后至少尝试修改参数、重试或降级中的两种策略",
    }.get(failure_type, "")
    return Attribution(case_id=case.id, trial=trial, failure_type=failure_type, manifestation=manifestation,
                       root_cause=root, fix_suggestion=fix, criteria=[r.id for r in failed])


def case_result(case: Case, trials: list[TrialResult]) -> CaseResult:
    k = len(trials)
    passes = sum(1 for tr in trials if tr.verdict == Verdict.PASS)
    return CaseResult(
        case_id=case.id, title=case.title, dimension=case.dimension.value,
        verdict=combine(tr.verdict for tr in trials),
        auto_verdict=combine(tr.auto_verdict for tr in trials),
        pass_at_1=round(passes / k, 4) if k else 0.0,
        pass_hat_k=1.0 if k and passes == k else 0.0,
        trials=trials,
    )


def dimension_metrics(cases: list[tuple[Case, CaseResult]]) -> dict[str, DimensionMetrics]:
    out: dict[str, DimensionMetrics] = {}
    grouped: dict[Dimension, list[CaseResult]] = defaultdict(list)
    for case, result in cases:
        grouped[case.dimension].append(result)
    for dim, (name, better) in DIMENSIONS.items():
        results = grouped.get(dim, [])
        if not results:
            continue
        counts = {v: sum(1 for r in results if r.verdict == v) for v in Verdict}
        autos = {v: sum(1 for r in results if r.auto_verdict == v) for v in Verdict}
        out[dim.value] = DimensionMetrics(
            name=name, better=better,
            rate=_rate(counts, better), auto_rate=_rate(autos, better), cases=len(results),
            passed=counts[Verdict.PASS], failed=counts[Verdict.FAIL],
            unclear=counts[Verdict.UNCLEAR], unjudged=counts[Verdict.UNJUDGED],
        )
    return out


def _rate(counts: dict[Verdict, int], better: str) -> float | None:
    decided = counts[Verdict.PASS] + counts[Verdict.FAIL]
    if not decided:
        return None
    hit = counts[Verdict.FAIL] if better == "lower" else counts[Verdict.PASS]
    return round(hit / decided, 4)


def failure_modes(results: list[CaseResult]) -> dict[str, FailureMode]:
    total = sum(len(r.trials) for r in results)
    modes: dict[str, FailureMode] = {}
    for r in results:
        for tr in r.trials:
            if tr.attribution is None:
                continue
            m = modes.setdefault(tr.attribution.failure_type, FailureMode(count=0, rate=0.0))
            m.count += 1
            if r.case_id not in m.cases:
                m.cases.append(r.case_id)
    for m in modes.values():
        m.rate = round(m.count / total, 4) if total else 0.0
    return dict(sorted(modes.items()))
