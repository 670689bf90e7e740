#!/usr/bin/env python3
"""Validate the round-2 held-out loop corpus (stdlib only) and print counts.

Usage: python check.py [folder]   (default: the folder of this file)
Exit status 1 if any file is invalid.
"""
import collections
import json
import pathlib
import re
import sys

ID_RE = re.compile(r"r2-[a-z0-9][a-z0-9-]{2,55}")
FAMILY_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")


def check_action(i, a, errs):
    where = f"action {i}"
    if not isinstance(a, dict):
        errs.append(f"{where}: not an object")
        return
    if "ask" in a:
        if set(a) != {"ask", "answer"}:
            errs.append(f"{where}: ask step must have exactly ask and answer")
        if not isinstance(a.get("ask"), str) or not a["ask"].strip():
            errs.append(f"{where}: ask must be a non-empty string")
        if a.get("answer") is not None and not isinstance(a.get("answer"), str):
            errs.append(f"{where}: answer must be a string or null")
        return
    if set(a) != {"tool", "args", "result"}:
        errs.append(f"{where}: tool step must have exactly tool, args, result (has {sorted(a)})")
        return
    if not isinstance(a["tool"], str) or not a["tool"]:
        errs.append(f"{where}: tool must be a non-empty string")
    if not isinstance(a["args"], dict):
        errs.append(f"{where}: args must be an object")
    r = a["result"]
    if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
        errs.append(f"{where}: result must be an object with boolean ok")
        return
    if r["ok"]:
        if set(r) != {"ok", "data"}:
            errs.append(f"{where}: ok result must have exactly ok and data")
    else:
        if set(r) != {"ok", "error", "error_type"}:
            errs.append(f"{where}: failed result must have exactly ok, error, error_type")
        elif not (isinstance(r["error"], str) and r["error"] and isinstance(r["error_type"], str) and r["error_type"]):
            errs.append(f"{where}: error and error_type must be non-empty strings")


def check_file(path):
    errs = []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ["not UTF-8"], None
    if "\\u" in text and re.search(r"\\u[0-9a-fA-F]{4}", text):
        errs.append("contains \\uXXXX escapes (write with ensure_ascii=False)")
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        return [f"invalid JSON: {e}"], None
    if not isinstance(d, dict):
        return ["top level is not an object"], None
    allowed = {"id", "family", "label", "trip_by", "source", "task", "actions", "final", "why"}
    extra = set(d) - allowed
    if extra:
        errs.append(f"unknown keys {sorted(extra)}")
    for k in ("id", "family", "label", "source", "task", "actions", "why"):
        if k not in d:
            errs.append(f"missing {k}")
    if errs:
        return errs, d
    if not (isinstance(d["id"], str) and ID_RE.fullmatch(d["id"])):
        errs.append(f"bad id {d['id']!r}")
    elif path.name != d["id"] + ".json":
        errs.append(f"file name does not match id {d['id']}")
    if not (isinstance(d["family"], str) and FAMILY_RE.fullmatch(d["family"])):
        errs.append(f"bad family {d['family']!r}")
    if d["label"] not in ("loop", "ok"):
        errs.append(f"bad label {d['label']!r}")
    src = d["source"]
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append("source must have exactly url, title, quote")
    else:
        if not (isinstance(src["url"], str) and src["url"].startswith("https://")):
            errs.append("source.url must be an https URL")
        if not (isinstance(src["title"], str) and src["title"].strip()):
            errs.append("source.title empty")
        if not (isinstance(src["quote"], str) and 0 < len(src["quote"]) < 200):
            errs.append("source.quote must be 1..199 characters")
    for k in ("task", "why"):
        if not (isinstance(d[k], str) and d[k].strip()):
            errs.append(f"{k} must be a non-empty string")
    if "final" in d and not isinstance(d["final"], str):
        errs.append("final must be a string")
    acts = d["actions"]
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list")
        return errs, d
    for i, a in enumerate(acts, 1):
        check_action(i, a, errs)
    n = len(acts)
    if d["label"] == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or isinstance(tb, bool) or tb < 1:
            errs.append("loop item needs integer trip_by >= 1")
        elif tb + 2 > n:
            errs.append(f"loop item must run at least 2 actions past trip_by ({tb}) but has {n}")
        if n > 30:
            errs.append(f"loop item has {n} actions (max 30)")
    elif d["label"] == "ok":
        if "trip_by" in d:
            errs.append("ok item must not have trip_by")
        if n > 25:
            errs.append(f"ok item has {n} actions (max 25)")
    return errs, d


def main(argv):
    folder = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parent
    files = sorted(p for p in folder.glob("*.json") if p.name != "second_reader.json")
    if not files:
        print(f"no items in {folder}")
        return 1
    bad = 0
    counts = collections.Counter()
    labels = collections.Counter()
    urls = set()
    chinese = 0
    ids = set()
    for p in files:
        errs, d = check_file(p)
        if d and isinstance(d.get("id"), str):
            if d["id"] in ids:
                errs.append("duplicate id")
            ids.add(d["id"])
        if errs:
            bad += 1
            for e in errs:
                print(f"{p.name}: {e}")
            continue
        counts[(d["family"], d["label"])] += 1
        labels[d["label"]] += 1
        urls.add(d["source"]["url"])
        if CJK_RE.search(d["task"]):
            chinese += 1
    fams = sorted({f for f, _ in counts})
    w = max([len(f) for f in fams] + [6])
    print(f"{'family':<{w}}  loop    ok")
    for f in fams:
        print(f"{f:<{w}}  {counts[(f, 'loop')]:>4}  {counts[(f, 'ok')]:>4}")
    print(f"{'total':<{w}}  {labels['loop']:>4}  {labels['ok']:>4}")
    print(f"items: {len(files)}  valid: {len(files) - bad}  distinct source URLs: {len(urls)}  Chinese tasks: {chinese}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
