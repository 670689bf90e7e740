#!/usr/bin/env python3
"""Stdlib-only validator for writer H's round-5 loop corpus items (round5/h/*.json)."""
import json
import os
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "h")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def check(path, seen):
    errs = []
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except Exception as e:  # noqa: BLE001
        return [f"cannot parse: {e}"], None
    keys = set(d)
    need = KEYS | ({"trip_by"} if d.get("label") == "loop" else set())
    if keys != need:
        errs.append(f"keys {sorted(keys ^ need)} wrong")
    iid = d.get("id", "")
    if not re.fullmatch(r"h-[a-z0-9]+(-[a-z0-9]+)*", iid or ""):
        errs.append("id not kebab-case with h- prefix")
    if os.path.basename(path) != f"{iid}.json":
        errs.append("file name != id")
    if iid in seen:
        errs.append("duplicate id")
    seen.add(iid)
    if d.get("label") not in ("loop", "ok"):
        errs.append("label must be loop|ok")
    if not isinstance(d.get("family"), str) or not d["family"]:
        errs.append("family missing")
    src = d.get("source") or {}
    if set(src) != {"url", "title", "quote"} or not str(src.get("url", "")).startswith("http"):
        errs.append("source malformed")
    elif len(src["quote"]) >= 200:
        errs.append("quote >= 200 chars")
    acts = d.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("actions empty")
        acts = []
    if len(acts) >= 30:
        errs.append("30 or more actions")
    for i, a in enumerate(acts, 1):
        if "ask" in a:
            if set(a) != {"ask", "answer"}:
                errs.append(f"action {i}: ask/answer keys")
            continue
        if set(a) != {"tool", "args", "result"} or not isinstance(a.get("args"), dict):
            errs.append(f"action {i}: tool/args/result keys")
            continue
        r = a["result"]
        if r.get("ok") is True:
            if set(r) != {"ok", "data"}:
                errs.append(f"action {i}: ok result keys")
        elif r.get("ok") is False:
            if set(r) != {"ok", "error", "error_type"} or not r.get("error") or not r.get("error_type"):
                errs.append(f"action {i}: error result keys")
        else:
            errs.append(f"action {i}: result.ok not bool")
    if d.get("label") == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or tb < 1 or tb + 2 > len(acts):
            errs.append("trip_by must be 1-based and leave >= 2 actions after it")
    if not isinstance(d.get("final"), (str, type(None))):
        errs.append("final must be str or null")
    return errs, d


def main():
    seen, bad = set(), 0
    fam, lab, zh, urls = Counter(), Counter(), 0, set()
    files = sorted(f for f in os.listdir(DIR) if f.endswith(".json"))
    for f in files:
        errs, d = check(os.path.join(DIR, f), seen)
        if errs:
            bad += 1
            print(f"FAIL {f}: " + "; ".join(errs))
        if d:
            fam[(d.get("family"), d.get("label"))] += 1
            lab[d.get("label")] += 1
            zh += bool(CJK.search(d.get("task", "")))
            urls.add((d.get("source") or {}).get("url"))
    print(f"{len(files)} items, {bad} failing, loop={lab['loop']} ok={lab['ok']}, "
          f"Chinese tasks={zh} ({100*zh/max(1,len(files)):.0f}%), distinct URLs={len(urls)}")
    for fm in sorted({k[0] for k in fam}):
        print(f"  {fm:20s} loop={fam[(fm,'loop')]:2d} ok={fam[(fm,'ok')]:2d}")
    used = "/work/used_urls.txt"
    if os.path.exists(used):
        old = {l.strip() for l in open(used, encoding="utf-8") if l.strip()}
        clash = sorted(u for u in urls if u in old)
        print(f"URLs also in {used}: {len(clash)}" + ("" if not clash else " -> " + ", ".join(clash)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
