#!/usr/bin/env python3
"""Validator for round-6 writer J items (stdlib only).

Checks every j/*.json against the item format of the round-6 brief and prints
counts per family and label. Exit code 1 if any file fails.
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "j")
ID_RE = re.compile(r"^j-[a-z0-9]+(-[a-z0-9]+)*$")
CJK = re.compile(r"[\u4e00-\u9fff]")


def check(path):
    errs = []
    with open(path, encoding="utf-8") as fh:
        d = json.load(fh)
    req = ["id", "family", "label", "source", "task", "actions", "final", "why"]
    for k in req:
        if k not in d:
            errs.append(f"missing key {k}")
    if errs:
        return d, errs
    if not ID_RE.match(d["id"]):
        errs.append("bad id")
    if os.path.basename(path) != d["id"] + ".json":
        errs.append("file name != id")
    if d["label"] not in ("loop", "ok"):
        errs.append("bad label")
    if not isinstance(d["family"], str) or not d["family"]:
        errs.append("bad family")
    src = d["source"]
    for k in ("url", "title", "quote"):
        if not isinstance(src.get(k), str) or not src.get(k):
            errs.append(f"source.{k} missing")
    if not str(src.get("url", "")).startswith("http"):
        errs.append("source.url not http")
    if len(src.get("quote", "")) >= 200:
        errs.append("quote too long")
    if not isinstance(d["task"], str) or not d["task"].strip():
        errs.append("empty task")
    if not (d["final"] is None or isinstance(d["final"], str)):
        errs.append("final must be string or null")
    if not isinstance(d["why"], str) or not d["why"].strip():
        errs.append("empty why")
    acts = d["actions"]
    if not isinstance(acts, list) or not acts:
        errs.append("actions empty")
        acts = []
    if len(acts) >= 30:
        errs.append("30+ actions")
    for i, a in enumerate(acts, 1):
        if "tool" in a:
            if set(a) != {"tool", "args", "result"}:
                errs.append(f"action {i}: keys {sorted(a)}")
                continue
            if not isinstance(a["args"], dict):
                errs.append(f"action {i}: args not object")
            r = a["result"]
            if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
                errs.append(f"action {i}: result.ok missing")
            elif r["ok"]:
                if "data" not in r:
                    errs.append(f"action {i}: ok result without data")
            else:
                if not r.get("error") or not r.get("error_type"):
                    errs.append(f"action {i}: error result needs error and error_type")
        elif "ask" in a:
            if set(a) != {"ask", "answer"}:
                errs.append(f"action {i}: ask keys {sorted(a)}")
        else:
            errs.append(f"action {i}: neither tool nor ask")
    if d["label"] == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or tb < 1:
            errs.append("loop needs integer trip_by >= 1")
        elif len(acts) < tb + 2:
            errs.append("loop must run at least two actions past trip_by")
    elif "trip_by" in d:
        errs.append("ok item must not have trip_by")
    return d, errs


def main():
    files = sorted(f for f in os.listdir(DIR) if f.endswith(".json"))
    bad = 0
    counts = collections.Counter()
    ids, urls = set(), set()
    zh = 0
    for f in files:
        d, errs = check(os.path.join(DIR, f))
        if d.get("id") in ids:
            errs.append("duplicate id")
        ids.add(d.get("id"))
        if errs:
            bad += 1
            print(f"FAIL {f}: {'; '.join(errs)}")
            continue
        counts[(d["family"], d["label"])] += 1
        urls.add(d["source"]["url"])
        if CJK.search(d["task"]):
            zh += 1
    fams = sorted({k[0] for k in counts})
    print(f"{'family':24} loop  ok")
    for fam in fams:
        print(f"{fam:24} {counts[(fam, 'loop')]:4} {counts[(fam, 'ok')]:3}")
    n = sum(counts.values())
    print(f"total {n} (loop {sum(v for k, v in counts.items() if k[1] == 'loop')}, "
          f"ok {sum(v for k, v in counts.items() if k[1] == 'ok')}), "
          f"chinese tasks {zh}, distinct urls {len(urls)}, failures {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
