"""Experiment: does a learned loop scorer generalise across corpus writers better than the rules?

    python benchmarks/learned_loop.py                  # leave-one-writer-out table, cost, model size
    python benchmarks/learned_loop.py --writers a,b,c  # only these writers' folders (a quick run)
    python benchmarks/learned_loop.py --json out.json  # also the numbers as JSON

Data: every item under ``tests/data/loop_corpus/tuning/`` (the blind writers; a writer's
batches share a letter: a + a2 are writer a) and the authors' corpus (``corpus.py``). The
sealed ``heldout/`` folder is never listed nor opened.

Per agent action t of an item, :mod:`loop_features` computes a feature vector from
actions ``1..t`` only (what a live guard has seen after the call returned). Labels:
every step of an ``ok`` item is negative; a step of a ``loop`` item from ``trip_by - 1``
to ``trip_by + 2`` is positive; earlier steps of a loop item are left out of training
(the loop may have begun before the writer's deadline, and firing early on a loop item
is never a miss, so calling those steps negative would teach the model to wait; later
steps only add more of the same state, so they are capped to keep long items from
dominating).

An item is *caught* if the scorer fires at some action <= ``trip_by``; an ``ok`` item
is a *false alarm* if it fires at any action. Models: logistic regression (standardised
features) and a small gradient-boosted tree model. Evaluation is true leave-one-writer-
out: for each blind writer W, fit on every other blind writer plus the authors' corpus,
test on W. The firing threshold is chosen inside the training fold, on out-of-fold
scores: an inner leave-one-writer-out over the training writers scores each training
writer's items with a model that never saw that writer, and the threshold is the lowest
one that leaves at most 2% of those writers' ok items with an alarm. (A threshold read
off in-sample scores is printed too: it shows how much a fitted model flatters itself.)

The rules (the reference stack ``guard_stack("on")``, offline, as
``guard_quality.py`` measures it) are scored on the same held-out writers, but they were
tuned on every one of them, so their per-writer numbers are optimistic; their honest
forecast is what they scored on each round while it was sealed (63-83%). The
``rules OR learned`` line adds the learned scorer as a hint-only guard beside the rules.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

try:
    import numpy as np
except ImportError:  # the models need the bench extra; the features and the threshold do not
    np = None

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guard_quality import CORPUS_ROOT, authors_items, load_corpus, run_item, writer_of  # noqa: E402
from loop_features import FEATURES, Action, Featurizer, actions_of  # noqa: E402

from tether.guards.stacks import guard_stack  # noqa: E402

ALARM_BUDGET = 0.02     # at most 2% of the training writers' ok items may draw an alarm
POS_AFTER = 2           # loop steps up to trip_by + POS_AFTER are positives
RULE_FEATURES = ["rules_now", "rules_ever"]


@dataclass
class Row:
    """One item, featurised."""
    id: str
    writer: str
    label: str
    trip_by: int | None
    X: np.ndarray            # (steps, features + rule features)
    rules_first: int | None  # the reference stack's first trip (action), or None
    rules_block_or_stop: bool


def featurise(items) -> list[Row]:
    make = guard_stack("on")
    rows = []
    for it in items:
        acts = actions_of(it.trajectory)
        fz = Featurizer()
        feats = [fz.step(a) for a in acts]
        out = run_item(it, make)
        at = sorted({a for a, _ in out.trips})
        rule = []
        for t in range(1, len(acts) + 1):
            rule.append([float(t in at), float(bool(at) and at[0] <= t)])
        X = np.hstack([np.array(feats, dtype=float).reshape(len(acts), len(FEATURES)),
                       np.array(rule, dtype=float).reshape(len(acts), 2)])
        rows.append(Row(it.id, writer_of(it), it.label, it.trip_by, X, out.first,
                        it.label == "ok" and (out.block or out.stop)))
    return rows


def training_set(rows: list[Row], cols: slice, pos_after: int = POS_AFTER) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for r in rows:
        if r.label == "ok":
            xs.append(r.X[:, cols])
            ys.append(np.zeros(len(r.X)))
        else:
            lo, hi = max(r.trip_by - 2, 0), min(r.trip_by + pos_after, len(r.X))
            xs.append(r.X[lo:hi, cols])
            ys.append(np.ones(hi - lo))
    return np.vstack(xs), np.concatenate(ys)


def make_model(kind: str, quick: bool = False):
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "lr":
        return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=3000))
    return GradientBoostingClassifier(n_estimators=40 if quick else 120, max_depth=3, learning_rate=0.1,
                                      subsample=0.8, min_samples_leaf=10, random_state=0)


def item_scores(model, rows: list[Row], cols: slice) -> list[float]:
    """Per item the highest score where it counts: up to trip_by on a loop, anywhere on an ok item."""
    if not rows:
        return []
    allx = np.vstack([r.X[:, cols] for r in rows])
    p = model.predict_proba(allx)[:, 1]
    out, i = [], 0
    for r in rows:
        n = len(r.X)
        s = p[i:i + n]
        i += n
        out.append(float(s[:r.trip_by].max() if r.label == "loop" else s.max()))
    return out


def pick_threshold(ok_scores: list[float], budget: float = ALARM_BUDGET) -> float:
    """The lowest threshold (fire when score >= it) leaving at most ``budget`` of ``ok_scores`` alarmed."""
    allowed = math.floor(budget * len(ok_scores))
    s = sorted(ok_scores, reverse=True)
    if allowed >= len(s):
        return 0.0
    return math.nextafter(s[allowed], 1.0)     # strictly above the (allowed+1)-th highest ok score


@dataclass
class Variant:
    name: str
    kind: str               # lr / gbt
    rules_feature: bool
    pos_after: int = POS_AFTER

    def cols(self) -> slice:
        return slice(0, len(FEATURES) + (2 if self.rules_feature else 0))


VARIANTS = [Variant("learned: logistic regression", "lr", False),
            Variant("learned: gradient-boosted trees", "gbt", False),
            Variant("learned: trees + rules' verdict as a feature", "gbt", True),
            Variant("learned: trees, positives only at trip_by - 1 and trip_by", "gbt", False, 0)]
BUDGETS = (0.02, 0.05, 0.10)


def fit(variant: Variant, rows: list[Row], quick: bool):
    X, y = training_set(rows, variant.cols(), variant.pos_after)
    m = make_model(variant.kind, quick)
    m.fit(X, y)
    return m


def lowo(rows: list[Row], variant: Variant, quick: bool, log=print) -> dict:
    writers = sorted({r.writer for r in rows if r.writer != "authors"})
    authors = [r for r in rows if r.writer == "authors"]
    per: dict[str, dict] = {}
    for w in writers:
        train = [r for r in rows if r.writer not in (w,)]
        test = [r for r in rows if r.writer == w]
        # the threshold: inner leave-one-writer-out over the training writers (authors always in training)
        oof_ok = []
        for v in writers:
            if v == w:
                continue
            inner_train = [r for r in train if r.writer != v]
            inner_test = [r for r in train if r.writer == v]
            m = fit(variant, inner_train, quick)
            oof_ok += [s for r, s in zip(inner_test, item_scores(m, inner_test, variant.cols())) if r.label == "ok"]
        thr = pick_threshold(oof_ok)
        m = fit(variant, train, quick)
        blind_train = [r for r in train if r.writer != "authors"]
        ins_ok = [s for r, s in zip(blind_train, item_scores(m, blind_train, variant.cols())) if r.label == "ok"]
        thr_in = pick_threshold(ins_ok)
        scores = item_scores(m, test, variant.cols())
        per[w] = {"threshold": thr, "threshold_in_sample": thr_in, "test": test, "scores": scores,
                  "fired": [s >= thr for s in scores], "fired_in_sample": [s >= thr_in for s in scores],
                  "by_budget": {b: [s >= pick_threshold(oof_ok, b) for s in scores] for b in BUDGETS}}
        log(f"  {variant.name}: held out {w}: threshold {thr:.3f} (in-sample {thr_in:.3f})", file=sys.stderr)
    del authors
    return per


def count(test: list[Row], fired: list[bool]) -> dict:
    loops = [f for r, f in zip(test, fired) if r.label == "loop"]
    oks = [f for r, f in zip(test, fired) if r.label == "ok"]
    return {"loops": len(loops), "caught": sum(loops), "oks": len(oks), "alarms": sum(oks)}


def rules_fired(test: list[Row]) -> list[bool]:
    return [r.rules_first is not None and (r.label == "ok" or r.rules_first <= r.trip_by) for r in test]


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} {a / b:.1%}" if b else "-"


def table(rows: list[Row], results: dict[str, dict]) -> dict:
    """Markdown: per held-out writer, recall by trip_by and ok alarms, for the rules and each variant."""
    writers = sorted({r.writer for r in rows if r.writer != "authors"})
    lines: dict[str, dict[str, dict]] = defaultdict(dict)
    for w in writers:
        test = [r for r in rows if r.writer == w]
        lines["rules (reference stack, tuned on every writer)"][w] = count(test, rules_fired(test))
        for name, per in results.items():
            lines[name][w] = count(per[w]["test"], per[w]["fired"])
            lines[name + ", in-sample threshold"][w] = count(per[w]["test"], per[w]["fired_in_sample"])
            lines["rules OR " + name.removeprefix("learned: ") + " (hint)"][w] = count(
                test, [a or b for a, b in zip(rules_fired(test), per[w]["fired"])])
    print("| held-out writer | " + " | ".join(lines) + " |")
    print("|---|" + "---:|" * len(lines))
    for w in writers:
        print(f"| {w} | " + " | ".join(
            f"{_pct(c[w]['caught'], c[w]['loops'])}; ok {_pct(c[w]['alarms'], c[w]['oks'])}"
            for c in lines.values()) + " |")
    summary = {}
    print("\n| scorer | pooled recall (by trip_by) | pooled ok alarms | worst writer recall | writers meeting "
          "95% / 2% |")
    print("|---|---:|---:|---:|---:|")
    for name, per in lines.items():
        tot = {k: sum(c[k] for c in per.values()) for k in ("loops", "caught", "oks", "alarms")}
        worst = min(per, key=lambda w: per[w]["caught"] / max(per[w]["loops"], 1))
        meet = sum(1 for c in per.values() if c["caught"] >= 0.95 * c["loops"] and c["alarms"] <= 0.02 * c["oks"])
        print(f"| {name} | {_pct(tot['caught'], tot['loops'])} | {_pct(tot['alarms'], tot['oks'])} | "
              f"{worst} {_pct(per[worst]['caught'], per[worst]['loops'])} | {meet}/{len(per)} |")
        summary[name] = {"pooled": tot, "per_writer": per}
    print("\n| learned scorer | " + " | ".join(f"OOF threshold at {b:.0%}: recall; ok alarms" for b in BUDGETS)
          + " | mean per-writer ROC AUC (items) |")
    print("|---|" + "---:|" * (len(BUDGETS) + 1))
    from sklearn.metrics import roc_auc_score

    for name, per in results.items():
        cells = []
        for b in BUDGETS:
            tot = defaultdict(int)
            for w in writers:
                for k, v in count(per[w]["test"], per[w]["by_budget"][b]).items():
                    tot[k] += v
            cells.append(f"{_pct(tot['caught'], tot['loops'])}; {_pct(tot['alarms'], tot['oks'])}")
        aucs = [roc_auc_score([r.label == "loop" for r in per[w]["test"]], per[w]["scores"]) for w in writers]
        summary[name]["auc"] = statistics.mean(aucs)
        print(f"| {name} | " + " | ".join(cells) + f" | {statistics.mean(aucs):.3f} |")
    blocks = sum(r.rules_block_or_stop for r in rows if r.writer != "authors")
    print(f"\n(the rules put a block or stop on {blocks} blind ok items; the learned scorer only ever hints)")
    return summary


# -- cost ------------------------------------------------------------------------------
class TreeScorer:
    """The fitted trees as plain lists, walked in Python: what a product guard would ship."""

    def __init__(self, model) -> None:
        self.init = float(model._raw_predict_init(np.zeros((1, model.n_features_in_)))[0, 0])
        self.lr = model.learning_rate
        self.trees = []
        for est in model.estimators_[:, 0]:
            t = est.tree_
            self.trees.append((t.feature.tolist(), t.threshold.tolist(), t.children_left.tolist(),
                               t.children_right.tolist(), t.value[:, 0, 0].tolist()))

    def raw(self, x: list[float]) -> float:
        s = 0.0
        for feat, thr, left, right, val in self.trees:
            n = 0
            while left[n] != -1:
                n = left[n] if x[feat[n]] <= thr[n] else right[n]
            s += val[n]
        return self.init + self.lr * s

    @property
    def nodes(self) -> int:
        return sum(len(t[0]) for t in self.trees)


class LinearScorer:
    def __init__(self, pipe) -> None:
        sc, lr = pipe[0], pipe[-1]
        w = lr.coef_[0] / sc.scale_
        self.w = w.tolist()
        self.b = float(lr.intercept_[0] - (sc.mean_ * lr.coef_[0] / sc.scale_).sum())

    def raw(self, x: list[float]) -> float:
        return self.b + sum(a * b for a, b in zip(self.w, x))


def synthetic_action(i: int) -> Action:
    """guards_bench.py's history: four search tools, a keyword and page that vary, a one-item result."""
    tool = ("taobao_search_products", "weibo_search_posts", "web_search", "maps_text_search")[i % 4]
    return Action("call", tool=tool, args={"keyword": f"关键词 {i}", "page": i % 7}, ok=True,
                  data={"total": 1, "items": [f"item {i}"]})


def cost(models: dict, sizes=(10, 10_000), measured: int = 300) -> list[dict]:
    out = []
    for n in sizes:
        fz = Featurizer()
        for i in range(n):
            fz.step(synthetic_action(i))
        tail = [synthetic_action(n + i) for i in range(measured)]
        t0 = time.perf_counter_ns()
        xs = [fz.step(a) for a in tail]
        feat_us = (time.perf_counter_ns() - t0) / measured / 1000
        row = {"history": n, "features_us": feat_us}
        for name, scorer in models.items():
            xr = [x + [0.0, 0.0] for x in xs]
            t0 = time.perf_counter_ns()
            for x in xr:
                scorer.raw(x)
            row[name + "_us"] = (time.perf_counter_ns() - t0) / measured / 1000
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writers", help="comma-separated writer letters to use (default: every tuning writer)")
    p.add_argument("--quick", action="store_true", help="fewer trees (for tests)")
    p.add_argument("--no-cost", action="store_true")
    p.add_argument("--cost-only", action="store_true", help="only the cost and size (fits once on everything)")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    if np is None:
        print("learned_loop.py needs numpy and scikit-learn: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    t0 = time.time()
    items = load_corpus([CORPUS_ROOT / "tuning"], "tuning")       # never heldout/
    if a.writers:
        keep = set(a.writers.split(","))
        items = [i for i in items if writer_of(i) in keep]
    items += authors_items()
    rows = featurise(items)
    n_steps = sum(len(r.X) for r in rows)
    by_w = defaultdict(lambda: [0, 0])
    for r in rows:
        by_w[r.writer][r.label == "ok"] += 1
    print(f"learned loop scorer, leave one writer out; {len(rows)} items, {n_steps} steps, {len(FEATURES)} "
          f"features (+2 from the rules); writers: " + ", ".join(f"{w} {lo}L/{ok}ok" for w, (lo, ok) in
                                                                 sorted(by_w.items())) + "\n")
    report: dict = {"features": FEATURES}
    if not a.cost_only:
        results = {}
        for v in VARIANTS:
            results[v.name] = lowo(rows, v, a.quick)
        report["summary"] = table(rows, results)
        print("\nthresholds (chosen in each training fold on out-of-fold scores; in-sample in brackets): ")
        for name, per in results.items():
            print(f"  {name}: " + ", ".join(f"{w} {d['threshold']:.3f} ({d['threshold_in_sample']:.3f})"
                                            for w, d in per.items()))
    if not a.no_cost:
        lr = fit(VARIANTS[0], rows, a.quick)
        gbt = fit(VARIANTS[1], rows, a.quick)
        lin, trees = LinearScorer(lr), TreeScorer(gbt)
        x = rows[0].X[0, :len(FEATURES)]
        assert abs(lin.raw(list(x)) - lr.decision_function([x])[0]) < 1e-6
        assert abs(trees.raw(list(x)) - gbt.decision_function([x])[0]) < 1e-6
        rows_cost = cost({"logistic": lin, "trees": trees})
        print("\n## cost per step (pure Python, the models as plain lists; one core of a shared machine)\n")
        print("| history | features µs | + logistic µs | + trees µs |")
        print("|---:|---:|---:|---:|")
        for c in rows_cost:
            print(f"| {c['history']:,} | {c['features_us']:.1f} | {c['logistic_us']:.1f} | {c['trees_us']:.1f} |")
        print(f"\nmodel size: logistic {len(lin.w) + 1} numbers ({len(pickle.dumps(lin.__dict__))} bytes pickled); "
              f"trees {len(trees.trees)} trees, {trees.nodes} nodes ({len(pickle.dumps(trees.trees))} bytes pickled)")
        importance = sorted(zip(gbt.feature_importances_, FEATURES), reverse=True)[:10]
        print("trees' top features: " + ", ".join(f"{n} {v:.2f}" for v, n in importance))
        coefs = sorted(zip(lr[-1].coef_[0], FEATURES), key=lambda p: -abs(p[0]))[:10]
        print("logistic's largest standardised weights: " + ", ".join(f"{n} {v:+.2f}" for v, n in coefs))
        report["cost"] = rows_cost
    print(f"\n(ran in {time.time() - t0:.0f} s)")
    if a.json:
        a.json.write_text(json.dumps(report, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
