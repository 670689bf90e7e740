#!/usr/bin/env python3
"""Validator for round-7 writer L items (stdlib only). Usage: python3 check_l.py"""
import json, os, sys, collections
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "l7")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
bad = 0
counts = collections.Counter()
urls = set()
ids = set()
for name in sorted(os.listdir(HERE)):
    if not name.endswith(".json"):
        continue
    path = os.path.join(HERE, name)
    probs = []
    try:
        d = json.load(open(path, encoding="utf-8"))
    except Exception as e:
        print(f"{name}: invalid JSON: {e}"); bad += 1; continue
    missing = KEYS - set(d)
    if missing: probs.append(f"missing keys {sorted(missing)}")
    if not str(d.get("id", "")).startswith("l-"): probs.append("id must start with l-")
    if d.get("id") + ".json" != name: probs.append("file name != id")
    if d.get("id") in ids: probs.append("duplicate id")
    ids.add(d.get("id"))
    lab = d.get("label")
    if lab not in ("loop", "ok"): probs.append("bad label")
    acts = d.get("actions") or []
    if not isinstance(acts, list) or not acts: probs.append("no actions")
    if len(acts) >= 30: probs.append("30+ actions")
    if lab == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or tb < 1 or tb > len(acts): probs.append("bad trip_by")
        elif len(acts) < tb + 2: probs.append("fewer than 2 actions after trip_by")
    elif "trip_by" in d:
        probs.append("trip_by on ok item")
    src = d.get("source") or {}
    for k in ("url", "title", "quote"):
        if not src.get(k): probs.append(f"source.{k} empty")
    if len(src.get("quote", "")) >= 200: probs.append("quote >= 200 chars")
    urls.add(src.get("url"))
    for i, a in enumerate(acts, 1):
        if "ask" in a:
            if "answer" not in a: probs.append(f"action {i}: ask without answer")
            continue
        if not {"tool", "args", "result"} <= set(a): probs.append(f"action {i}: needs tool/args/result"); continue
        r = a["result"]
        if not isinstance(r, dict) or "ok" not in r: probs.append(f"action {i}: result.ok missing"); continue
        if r["ok"] is True and "data" not in r: probs.append(f"action {i}: ok result without data")
        if r["ok"] is False and not ({"error", "error_type"} <= set(r)): probs.append(f"action {i}: error result needs error/error_type")
    if probs:
        bad += 1
        print(f"{name}: " + "; ".join(probs))
    counts[(d.get("family"), lab)] += 1
fams = sorted({f for f, _ in counts})
print(f"{'family':30s} loop  ok")
for f in fams:
    print(f"{f:30s} {counts[(f,'loop')]:4d} {counts[(f,'ok')]:3d}")
print(f"total {sum(counts.values())} items, {sum(v for (f,l),v in counts.items() if l=='loop')} loop, "
      f"{sum(v for (f,l),v in counts.items() if l=='ok')} ok, {len(urls)} distinct URLs, {bad} with problems")
sys.exit(1 if bad else 0)
