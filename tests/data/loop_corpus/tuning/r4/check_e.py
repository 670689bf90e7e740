#!/usr/bin/env python3
"""Validate writer E's round-4 loop corpus items (stdlib only).

Usage: python3 check_e.py [DIR]   (default: ../e4, the round-4 items of writer E)
Prints counts per family and label; exits 1 if any item is malformed.
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "e4")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
CJK = re.compile(r"[\u4e00-\u9fff]")
KEBAB = re.compile(r"^e-[a-z0-9]+(-[a-z0-9]+)*$")


def check_action(i, a, errs):
    if not isinstance(a, dict):
        errs.append(f"action {i}: not an object"); return
    if "ask" in a:
        if set(a) != {"ask", "answer"} or not all(isinstance(a[k], str) and a[k] for k in ("ask", "answer")):
            errs.append(f"action {i}: ask actions need exactly non-empty 'ask' and 'answer'")
        return
    if set(a) != {"tool", "args", "result"}:
        errs.append(f"action {i}: keys must be tool/args/result, got {sorted(a)}"); return
    if not isinstance(a["tool"], str) or not a["tool"]:
        errs.append(f"action {i}: tool must be a non-empty string")
    if not isinstance(a["args"], dict):
        errs.append(f"action {i}: args must be an object")
    r = a["result"]
    if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
        errs.append(f"action {i}: result needs boolean ok"); return
    if r["ok"]:
        if set(r) != {"ok", "data"}:
            errs.append(f"action {i}: ok result must be {{ok, data}}")
    else:
        if set(r) != {"ok", "error", "error_type"} or not r.get("error") or not r.get("error_type"):
            errs.append(f"action {i}: failed result must be {{ok, error, error_type}}")


def check(path, d):
    errs = []
    name = os.path.basename(path)[:-5]
    want = KEYS | ({"trip_by"} if d.get("label") == "loop" else set())
    if set(d) != want:
        errs.append(f"keys {sorted(d)} != {sorted(want)}")
    if d.get("id") != name:
        errs.append("id does not match file name")
    if not KEBAB.match(str(d.get("id", ""))):
        errs.append("id must be kebab-case with prefix e-")
    if d.get("label") not in ("loop", "ok"):
        errs.append("label must be loop or ok")
    if not isinstance(d.get("family"), str) or not d.get("family"):
        errs.append("family must be a non-empty string")
    s = d.get("source")
    if not isinstance(s, dict) or set(s) != {"url", "title", "quote"}:
        errs.append("source must have url, title, quote")
    else:
        if not str(s["url"]).startswith("https://"):
            errs.append("source.url must be https")
        if not s["quote"] or len(s["quote"]) >= 200:
            errs.append("source.quote must be 1..199 characters")
    acts = d.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list")
        acts = []
    if len(acts) >= 30:
        errs.append("items must have under 30 actions")
    for i, a in enumerate(acts, 1):
        check_action(i, a, errs)
    if d.get("label") == "loop":
        t = d.get("trip_by")
        if not isinstance(t, int) or isinstance(t, bool) or t < 1 or t > len(acts):
            errs.append("trip_by must be a 1-based action index")
        elif len(acts) - t < 2:
            errs.append("loop items must run at least two actions past trip_by")
    if not (d.get("final") is None or isinstance(d.get("final"), str)):
        errs.append("final must be a string or null")
    for k in ("task", "why"):
        if not isinstance(d.get(k), str) or not d.get(k):
            errs.append(f"{k} must be a non-empty string")
    return errs


def main():
    files = sorted(f for f in os.listdir(DIR) if f.endswith(".json"))
    counts = collections.Counter()
    labels = collections.Counter()
    urls, ids = set(), set()
    zh = 0
    bad = 0
    for f in files:
        p = os.path.join(DIR, f)
        try:
            with open(p, encoding="utf-8") as fh:
                d = json.load(fh)
        except Exception as e:  # noqa: BLE001
            print(f"{f}: cannot parse: {e}"); bad += 1; continue
        errs = check(p, d)
        if d.get("id") in ids:
            errs.append("duplicate id")
        ids.add(d.get("id"))
        if errs:
            bad += 1
            for e in errs:
                print(f"{f}: {e}")
            continue
        counts[(d["family"], d["label"])] += 1
        labels[d["label"]] += 1
        urls.add(d["source"]["url"])
        zh += bool(CJK.search(d["task"]))
    fams = sorted({f for f, _ in counts})
    print(f"{'family':<22} {'loop':>5} {'ok':>5}")
    for fam in fams:
        print(f"{fam:<22} {counts[(fam, 'loop')]:>5} {counts[(fam, 'ok')]:>5}")
    total = sum(labels.values())
    print(f"{'TOTAL':<22} {labels['loop']:>5} {labels['ok']:>5}   items={total}")
    print(f"chinese tasks: {zh} ({(100 * zh / total) if total else 0:.0f}%)   distinct urls: {len(urls)}   malformed: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
