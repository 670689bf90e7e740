#!/usr/bin/env python3
"""Validate writer D's round-3 loop corpus items (stdlib only).

Usage: python3 check_d.py [folder]   (default: the 'd' folder next to this file)
Prints problems, then counts per family and label.
"""
import json, os, re, sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "d3")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
CJK = re.compile(r"[\u3400-\u9fff]")

def check(path, seen):
    errs = []
    try:
        with open(path, encoding="utf-8") as f:
            it = json.load(f)
    except Exception as e:  # noqa: BLE001
        return [f"cannot parse: {e}"], None
    if not isinstance(it, dict):
        return ["top level is not an object"], None
    missing = KEYS - it.keys()
    if missing:
        errs.append(f"missing keys {sorted(missing)}")
    extra = it.keys() - KEYS - {"trip_by"}
    if extra:
        errs.append(f"unexpected keys {sorted(extra)}")
    iid = it.get("id", "")
    if not re.fullmatch(r"d-[a-z0-9]+(-[a-z0-9]+)*", iid or ""):
        errs.append(f"bad id {iid!r}")
    if os.path.basename(path) != f"{iid}.json":
        errs.append("file name does not match id")
    if iid in seen:
        errs.append("duplicate id")
    seen.add(iid)
    if not isinstance(it.get("family"), str) or not it.get("family"):
        errs.append("family must be a non-empty string")
    label = it.get("label")
    if label not in ("loop", "ok"):
        errs.append(f"bad label {label!r}")
    src = it.get("source", {})
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append("source must have exactly url, title, quote")
    else:
        if not str(src["url"]).startswith("http"):
            errs.append("source.url not http(s)")
        if not src["title"]:
            errs.append("empty source.title")
        if not src["quote"] or len(src["quote"]) >= 200:
            errs.append(f"quote empty or >=200 chars ({len(src['quote'])})")
    if not isinstance(it.get("task"), str) or not it["task"].strip():
        errs.append("task must be a non-empty string")
    acts = it.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list")
        acts = []
    if len(acts) >= 30:
        errs.append(f"{len(acts)} actions (must be under 30)")
    for i, a in enumerate(acts, 1):
        if not isinstance(a, dict):
            errs.append(f"action {i} not an object"); continue
        if "ask" in a:
            if set(a) != {"ask", "answer"} or not all(isinstance(a[k], str) for k in a):
                errs.append(f"action {i}: ask item needs exactly string ask/answer")
            continue
        if set(a) != {"tool", "args", "result"}:
            errs.append(f"action {i}: keys {sorted(a)}"); continue
        if not isinstance(a["tool"], str) or not a["tool"]:
            errs.append(f"action {i}: empty tool")
        if not isinstance(a["args"], dict):
            errs.append(f"action {i}: args not an object")
        r = a["result"]
        if not isinstance(r, dict) or "ok" not in r:
            errs.append(f"action {i}: result needs ok"); continue
        if r["ok"] is True:
            if set(r) != {"ok", "data"}:
                errs.append(f"action {i}: ok result must have exactly ok,data")
        elif r["ok"] is False:
            if set(r) != {"ok", "error", "error_type"} or not r.get("error") or not r.get("error_type"):
                errs.append(f"action {i}: error result needs error and error_type")
        else:
            errs.append(f"action {i}: ok must be boolean")
    if it.get("final") is not None and not isinstance(it.get("final"), str):
        errs.append("final must be a string or null")
    if not isinstance(it.get("why"), str) or not it["why"].strip():
        errs.append("why must be a non-empty string")
    if label == "loop":
        tb = it.get("trip_by")
        if not isinstance(tb, int) or isinstance(tb, bool) or tb < 1:
            errs.append(f"loop item needs integer trip_by >= 1, got {tb!r}")
        elif tb + 2 > len(acts):
            errs.append(f"trip_by {tb} needs at least {tb + 2} actions, has {len(acts)}")
    elif "trip_by" in it:
        errs.append("ok item must not have trip_by")
    return errs, it

def main():
    files = sorted(f for f in os.listdir(FOLDER) if f.endswith(".json"))
    seen, bad = set(), 0
    fam = defaultdict(Counter)
    labels, urls, zh = Counter(), set(), 0
    for fn in files:
        errs, it = check(os.path.join(FOLDER, fn), seen)
        if errs:
            bad += 1
            for e in errs:
                print(f"{fn}: {e}")
        if it:
            fam[it.get("family")][it.get("label")] += 1
            labels[it.get("label")] += 1
            urls.add(it.get("source", {}).get("url"))
            zh += bool(CJK.search(it.get("task", "")))
    print(f"\n{len(files)} files, {bad} with problems")
    print(f"{'family':28} loop  ok")
    for f in sorted(fam):
        print(f"{f:28} {fam[f]['loop']:4} {fam[f]['ok']:3}")
    print(f"labels: {dict(labels)}; distinct source URLs: {len(urls)}; Chinese tasks: {zh} ({zh / max(1, len(files)):.0%})")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
