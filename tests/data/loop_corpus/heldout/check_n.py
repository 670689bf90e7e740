#!/usr/bin/env python3
"""Validator for round8 writer N items (stdlib only).

Usage: python3 check_n.py [folder]   (default: the n/ folder next to this file)
"""
import json, os, re, sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "n")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
CJK = re.compile(r"[\u4e00-\u9fff]")
ID_RE = re.compile(r"^n-[a-z0-9]+(-[a-z0-9]+)*$")


def check(path):
    errs = []
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except Exception as e:  # noqa: BLE001
        return None, [f"cannot parse: {e}"]
    keys = set(d)
    want = KEYS | ({"trip_by"} if d.get("label") == "loop" else set())
    if keys != want:
        errs.append(f"keys differ: missing {sorted(want - keys)}, extra {sorted(keys - want)}")
    if not isinstance(d.get("id"), str) or not ID_RE.match(d["id"]):
        errs.append("id must be kebab-case starting with n-")
    elif os.path.basename(path) != d["id"] + ".json":
        errs.append("file name does not match id")
    if d.get("label") not in ("loop", "ok"):
        errs.append("label must be loop or ok")
    if not isinstance(d.get("family"), str) or not d["family"]:
        errs.append("family must be a non-empty string")
    src = d.get("source")
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append("source must have url, title, quote")
    else:
        if not str(src["url"]).startswith(("http://", "https://")):
            errs.append("source.url must be http(s)")
        if not src["quote"] or len(src["quote"]) >= 200:
            errs.append("source.quote must be 1..199 characters")
    if not isinstance(d.get("task"), str) or not d["task"].strip():
        errs.append("task must be a non-empty string")
    acts = d.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list")
        acts = []
    if len(acts) >= 30:
        errs.append("items must have under 30 actions")
    for i, a in enumerate(acts, 1):
        if not isinstance(a, dict):
            errs.append(f"action {i} not an object")
            continue
        if set(a) == {"ask", "answer"}:
            if not isinstance(a["ask"], str) or not isinstance(a["answer"], str):
                errs.append(f"action {i}: ask/answer must be strings")
            continue
        if set(a) != {"tool", "args", "result"}:
            errs.append(f"action {i}: keys must be tool/args/result or ask/answer, got {sorted(a)}")
            continue
        if not isinstance(a["tool"], str) or not a["tool"]:
            errs.append(f"action {i}: tool must be a non-empty string")
        if not isinstance(a["args"], dict):
            errs.append(f"action {i}: args must be an object")
        r = a["result"]
        if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
            errs.append(f"action {i}: result.ok must be a boolean")
        elif r["ok"]:
            if set(r) != {"ok", "data"}:
                errs.append(f"action {i}: ok result must have exactly ok, data")
        else:
            if set(r) != {"ok", "error", "error_type"} or not r["error"] or not r["error_type"]:
                errs.append(f"action {i}: failed result must have ok, error, error_type")
    if d.get("label") == "loop":
        t = d.get("trip_by")
        if not isinstance(t, int) or isinstance(t, bool) or t < 1 or t > len(acts):
            errs.append("trip_by must be a 1-based index into actions")
        elif len(acts) < t + 2:
            errs.append("loop items must run at least two actions past trip_by")
    if not (d.get("final") is None or isinstance(d.get("final"), str)):
        errs.append("final must be a string or null")
    if not isinstance(d.get("why"), str) or not d["why"].strip():
        errs.append("why must be a non-empty string")
    return d, errs


def main():
    files = sorted(f for f in os.listdir(FOLDER) if f.endswith(".json"))
    bad = 0
    fam = Counter()
    lab = Counter()
    urls = set()
    ids = Counter()
    zh = 0
    lengths = []
    for f in files:
        d, errs = check(os.path.join(FOLDER, f))
        if errs:
            bad += 1
            for e in errs:
                print(f"FAIL {f}: {e}")
        if d is None:
            continue
        ids[d.get("id")] += 1
        fam[(d.get("family"), d.get("label"))] += 1
        lab[d.get("label")] += 1
        if isinstance(d.get("source"), dict):
            urls.add(d["source"].get("url"))
        if CJK.search(d.get("task") or ""):
            zh += 1
        lengths.append(len(d.get("actions") or []))
    for i, c in ids.items():
        if c > 1:
            bad += 1
            print(f"FAIL duplicate id {i}")
    print(f"files: {len(files)}  failing: {bad}")
    print(f"labels: {dict(lab)}")
    print(f"chinese tasks: {zh} ({(100*zh/len(files)) if files else 0:.0f}%)")
    print(f"distinct source urls: {len(urls)}")
    if lengths:
        print(f"actions per item: min {min(lengths)} max {max(lengths)}")
    print("family                      loop  ok")
    for f in sorted({k[0] for k in fam}):
        print(f"{f:<27} {fam[(f, 'loop')]:>4} {fam[(f, 'ok')]:>3}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
