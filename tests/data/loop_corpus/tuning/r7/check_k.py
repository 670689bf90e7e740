#!/usr/bin/env python3
"""Validator for round-7 writer K items (stdlib only)."""
import json, os, sys, collections
D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "k7")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
bad = 0; counts = collections.Counter(); zh = 0; urls = set(); ids = set()
def fail(f, m):
    global bad; bad += 1; print(f"FAIL {f}: {m}")
for f in sorted(os.listdir(D)):
    if not f.endswith(".json"): continue
    try: it = json.load(open(os.path.join(D, f), encoding="utf-8"))
    except Exception as e: fail(f, e); continue
    miss = KEYS - set(it)
    if miss: fail(f, f"missing {miss}")
    if it.get("label") not in ("loop", "ok"): fail(f, "label")
    if not str(it.get("id", "")).startswith("k-") or it["id"] + ".json" != f: fail(f, "id/filename")
    if it.get("id") in ids: fail(f, "dup id")
    ids.add(it.get("id"))
    src = it.get("source", {})
    if not all(src.get(k) for k in ("url", "title", "quote")): fail(f, "source fields")
    if len(src.get("quote", "")) >= 200: fail(f, "quote too long")
    urls.add(src.get("url"))
    acts = it.get("actions", [])
    if not isinstance(acts, list) or not acts or len(acts) >= 30: fail(f, "actions length")
    for i, a in enumerate(acts, 1):
        if "ask" in a:
            if "answer" not in a: fail(f, f"action {i} ask without answer")
            continue
        if not isinstance(a.get("tool"), str) or not isinstance(a.get("args"), dict) or not isinstance(a.get("result"), dict):
            fail(f, f"action {i} shape"); continue
        r = a["result"]
        if r.get("ok") is True:
            if "data" not in r: fail(f, f"action {i} ok without data")
        elif r.get("ok") is False:
            if not r.get("error") or not r.get("error_type"): fail(f, f"action {i} error fields")
        else: fail(f, f"action {i} result.ok")
    if it.get("label") == "loop":
        tb = it.get("trip_by")
        if not isinstance(tb, int) or tb < 1 or tb + 2 > len(acts): fail(f, "trip_by")
    elif "trip_by" in it: fail(f, "trip_by on ok item")
    counts[(it.get("family"), it.get("label"))] += 1
    if any("\u4e00" <= ch <= "\u9fff" for ch in it.get("task", "")): zh += 1
fams = sorted({k[0] for k in counts})
print(f"{'family':28} loop  ok")
for fm in fams: print(f"{fm:28} {counts[(fm,'loop')]:4} {counts[(fm,'ok')]:3}")
tot = sum(counts.values())
print(f"total {tot}: loop {sum(v for k,v in counts.items() if k[1]=='loop')}, ok {sum(v for k,v in counts.items() if k[1]=='ok')}; chinese tasks {zh}; distinct urls {len(urls)}")
sys.exit(1 if bad else 0)
