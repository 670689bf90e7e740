#!/usr/bin/env python3
"""Validate round-8 writer-M loop corpus items (stdlib only).

Usage: python3 check_m.py [folder]   (default: the m/ folder next to this file)
Checks every *.json against the item format of the brief and prints counts
per family and label. Exit status 1 if any item is invalid.
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "m")
KEBAB = re.compile(r"^m-[a-z0-9]+(-[a-z0-9]+)*$")
CJK = re.compile(r"[\u4e00-\u9fff]")
TOP_KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}


def check_action(i, a, errs):
    if not isinstance(a, dict):
        errs.append("action %d is not an object" % i)
        return
    if "ask" in a:
        if set(a) != {"ask", "answer"}:
            errs.append("action %d: ask actions need exactly ask+answer" % i)
        elif not isinstance(a["ask"], str) or not isinstance(a["answer"], str):
            errs.append("action %d: ask/answer must be strings" % i)
        return
    if set(a) != {"tool", "args", "result"}:
        errs.append("action %d: keys must be tool/args/result, got %s" % (i, sorted(a)))
        return
    if not isinstance(a["tool"], str) or not a["tool"]:
        errs.append("action %d: tool must be a non-empty string" % i)
    if not isinstance(a["args"], dict):
        errs.append("action %d: args must be an object" % i)
    r = a["result"]
    if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
        errs.append("action %d: result needs boolean ok" % i)
        return
    if r["ok"]:
        if set(r) != {"ok", "data"}:
            errs.append("action %d: ok result must be {ok, data}" % i)
    else:
        if set(r) != {"ok", "error", "error_type"}:
            errs.append("action %d: failed result must be {ok, error, error_type}" % i)
        elif not isinstance(r["error"], str) or not isinstance(r["error_type"], str):
            errs.append("action %d: error and error_type must be strings" % i)


def check_item(path, d):
    errs = []
    if not isinstance(d, dict):
        return ["not an object"]
    label = d.get("label")
    want = TOP_KEYS | ({"trip_by"} if label == "loop" else set())
    if set(d) != want:
        errs.append("keys differ: missing %s extra %s" % (sorted(want - set(d)), sorted(set(d) - want)))
    if not isinstance(d.get("id"), str) or not KEBAB.match(d.get("id", "")):
        errs.append("id must be kebab-case starting with m-")
    elif os.path.basename(path) != d["id"] + ".json":
        errs.append("file name does not match id")
    if label not in ("loop", "ok"):
        errs.append("label must be loop or ok")
    if not isinstance(d.get("family"), str) or not d.get("family"):
        errs.append("family must be a non-empty string")
    src = d.get("source")
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append("source must have url, title, quote")
    else:
        if not str(src["url"]).startswith("https://"):
            errs.append("source.url must be https")
        if not isinstance(src["quote"], str) or not src["quote"] or len(src["quote"]) >= 200:
            errs.append("source.quote must be a non-empty string under 200 chars")
    if not isinstance(d.get("task"), str) or not d.get("task"):
        errs.append("task must be a non-empty string")
    acts = d.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list")
        acts = []
    if len(acts) >= 30:
        errs.append("too many actions (%d, must be under 30)" % len(acts))
    for i, a in enumerate(acts, 1):
        check_action(i, a, errs)
    if not (d.get("final") is None or isinstance(d.get("final"), str)):
        errs.append("final must be a string or null")
    if not isinstance(d.get("why"), str) or not d.get("why"):
        errs.append("why must be a non-empty string")
    if label == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or isinstance(tb, bool) or tb < 1:
            errs.append("trip_by must be a positive integer")
        elif tb + 2 > len(acts):
            errs.append("loop must run at least two actions past trip_by (%d of %d)" % (tb, len(acts)))
    return errs


def main():
    files = sorted(f for f in os.listdir(FOLDER) if f.endswith(".json"))
    bad = 0
    ids = set()
    urls = set()
    fam = collections.Counter()
    lab = collections.Counter()
    zh = 0
    for f in files:
        p = os.path.join(FOLDER, f)
        try:
            with open(p, encoding="utf-8") as fh:
                d = json.load(fh)
        except (OSError, ValueError) as e:
            print("INVALID %s: %s" % (f, e))
            bad += 1
            continue
        errs = check_item(p, d)
        if d.get("id") in ids:
            errs.append("duplicate id")
        ids.add(d.get("id"))
        if errs:
            bad += 1
            for e in errs:
                print("INVALID %s: %s" % (f, e))
            continue
        fam[(d["family"], d["label"])] += 1
        lab[d["label"]] += 1
        urls.add(d["source"]["url"])
        if CJK.search(d["task"]):
            zh += 1
    print("%-30s %5s %5s" % ("family", "loop", "ok"))
    for f in sorted({k[0] for k in fam}):
        print("%-30s %5d %5d" % (f, fam[(f, "loop")], fam[(f, "ok")]))
    total = sum(lab.values())
    print("total %d valid (loop %d, ok %d), invalid %d" % (total, lab["loop"], lab["ok"], bad))
    if total:
        print("Chinese tasks: %d (%.0f%%); distinct source URLs: %d" % (zh, 100.0 * zh / total, len(urls)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
