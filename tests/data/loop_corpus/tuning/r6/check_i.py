#!/usr/bin/env python3
"""Validator for round-6 writer I items (stdlib only).

Usage: python3 check_i.py   (run from anywhere)
Checks every i/*.json against the item format of the round-6 writer brief and
prints counts per family and label.
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "i")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def check(path, d):
    errs = []
    want = KEYS | ({"trip_by"} if d.get("label") == "loop" else set())
    if set(d) != want:
        errs.append(f"keys {sorted(set(d) ^ want)}")
    if not re.fullmatch(r"i-[a-z0-9]+(-[a-z0-9]+)*", d.get("id", "")):
        errs.append("bad id")
    if os.path.basename(path) != d.get("id", "") + ".json":
        errs.append("file name != id")
    if d.get("label") not in ("loop", "ok"):
        errs.append("bad label")
    if not isinstance(d.get("family"), str) or not d["family"]:
        errs.append("bad family")
    src = d.get("source", {})
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append("bad source")
    else:
        if not src["url"].startswith("http"):
            errs.append("bad url")
        if not src["quote"] or len(src["quote"]) >= 200:
            errs.append("quote empty or >= 200 chars")
    acts = d.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("no actions")
        acts = []
    if len(acts) >= 30:
        errs.append("30+ actions")
    for i, a in enumerate(acts, 1):
        if "ask" in a:
            if set(a) != {"ask", "answer"} or not all(isinstance(a[k], str) for k in a):
                errs.append(f"action {i}: bad ask")
            continue
        if set(a) != {"tool", "args", "result"}:
            errs.append(f"action {i}: keys {sorted(a)}")
            continue
        if not isinstance(a["tool"], str) or not isinstance(a["args"], dict):
            errs.append(f"action {i}: tool/args type")
        r = a["result"]
        if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
            errs.append(f"action {i}: result.ok")
        elif r["ok"]:
            if set(r) != {"ok", "data"}:
                errs.append(f"action {i}: ok result keys")
        else:
            if set(r) != {"ok", "error", "error_type"} or not r["error"] or not r["error_type"]:
                errs.append(f"action {i}: error result keys")
    if d.get("label") == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or isinstance(tb, bool) or tb < 1:
            errs.append("bad trip_by")
        elif tb + 2 > len(acts):
            errs.append("loop must run >= 2 actions past trip_by")
    if d.get("final") is not None and not isinstance(d.get("final"), str):
        errs.append("final must be str or null")
    if not isinstance(d.get("task"), str) or not d["task"].strip():
        errs.append("empty task")
    if not isinstance(d.get("why"), str) or not d["why"].strip():
        errs.append("empty why")
    return errs


def main():
    files = sorted(f for f in os.listdir(DIR) if f.endswith(".json"))
    bad = 0
    counts = collections.Counter()
    fams = collections.defaultdict(collections.Counter)
    urls = set()
    zh = 0
    ids = set()
    for f in files:
        p = os.path.join(DIR, f)
        try:
            with open(p, encoding="utf-8") as fh:
                d = json.load(fh)
        except Exception as e:  # noqa: BLE001
            print(f"{f}: cannot parse: {e}")
            bad += 1
            continue
        errs = check(p, d)
        if d.get("id") in ids:
            errs.append("duplicate id")
        ids.add(d.get("id"))
        if errs:
            bad += 1
            print(f"{f}: " + "; ".join(errs))
        counts[d.get("label")] += 1
        fams[d.get("family")][d.get("label")] += 1
        urls.add(d.get("source", {}).get("url"))
        if CJK.search(d.get("task", "")):
            zh += 1
    used = "/work/used_urls.txt"
    if os.path.exists(used):
        with open(used, encoding="utf-8") as fh:
            prev = {l.strip().lower() for l in fh if l.strip()}
        clash = sorted(u for u in urls if u and u.lower() in prev)
        for u in clash:
            print(f"URL already used by earlier writers: {u}")
        bad += len(clash)
    print(f"\n{'family':28} loop  ok")
    for fam in sorted(fams):
        print(f"{fam:28} {fams[fam]['loop']:4} {fams[fam]['ok']:3}")
    n = len(files)
    print(f"\ntotal {n}: loop {counts['loop']}, ok {counts['ok']}; "
          f"chinese tasks {zh} ({100 * zh / max(n, 1):.0f}%); distinct URLs {len(urls)}")
    print("OK" if not bad else f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
