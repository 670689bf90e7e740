"""Validate every blind_a item against the corpus item format and print counts.

Stdlib only. Run: python3 tests/data/loop_corpus/blind_a/_check.py
Exit status 1 if any file is invalid.
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,60}$")
FAMILY_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
TOP_REQUIRED = {"id", "family", "label", "source", "task", "actions", "why"}
TOP_ALLOWED = TOP_REQUIRED | {"trip_by", "final"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def check_action(i, a, errs):
    where = f"actions[{i}]"
    if not isinstance(a, dict):
        errs.append(f"{where}: not an object")
        return
    if "ask" in a:
        if set(a) != {"ask", "answer"}:
            errs.append(f"{where}: ask entry must have exactly ask, answer")
        if not isinstance(a.get("ask"), str) or not a["ask"].strip():
            errs.append(f"{where}: ask must be a non-empty string")
        if a.get("answer") is not None and not isinstance(a.get("answer"), str):
            errs.append(f"{where}: answer must be a string or null")
        return
    if set(a) != {"tool", "args", "result"}:
        errs.append(f"{where}: tool entry must have exactly tool, args, result (has {sorted(a)})")
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
            errs.append(f"{where}: ok result must have exactly ok, data")
    else:
        if set(r) != {"ok", "error", "error_type"}:
            errs.append(f"{where}: failed result must have exactly ok, error, error_type")
        elif not (isinstance(r["error"], str) and r["error"] and isinstance(r["error_type"], str) and r["error_type"]):
            errs.append(f"{where}: error and error_type must be non-empty strings")


def check_item(path, d):
    errs = []
    if not isinstance(d, dict):
        return ["top level is not an object"]
    missing = TOP_REQUIRED - set(d)
    extra = set(d) - TOP_ALLOWED
    if missing:
        errs.append(f"missing keys {sorted(missing)}")
    if extra:
        errs.append(f"unexpected keys {sorted(extra)}")
    if errs:
        return errs
    if not ID_RE.match(d["id"]):
        errs.append("bad id")
    if os.path.basename(path) != d["id"] + ".json":
        errs.append("file name does not match id")
    if not FAMILY_RE.match(d["family"]):
        errs.append("family is not kebab-case")
    if d["label"] not in ("loop", "ok"):
        errs.append("label must be loop or ok")
    src = d["source"]
    if not (isinstance(src, dict) and set(src) == {"url", "title", "quote"}):
        errs.append("source must have exactly url, title, quote")
    else:
        if not src["url"].startswith("https://"):
            errs.append("source url must be https")
        if not (0 < len(src["quote"]) < 200):
            errs.append(f"quote length {len(src['quote'])} not in 1..199")
        if not src["title"]:
            errs.append("empty source title")
    for k in ("task", "why"):
        if not isinstance(d[k], str) or not d[k].strip():
            errs.append(f"{k} must be a non-empty string")
    if "final" in d and not isinstance(d["final"], str):
        errs.append("final must be a string")
    acts = d["actions"]
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list")
        return errs
    for i, a in enumerate(acts):
        check_action(i, a, errs)
    n = len(acts)
    if d["label"] == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or isinstance(tb, bool) or tb < 1:
            errs.append("loop item needs integer trip_by >= 1")
        elif n < tb + 2:
            errs.append(f"loop runs only {n} actions, needs >= trip_by+2 = {tb + 2}")
        if n > 30:
            errs.append(f"loop item has {n} > 30 actions")
    else:
        if "trip_by" in d:
            errs.append("ok item must not have trip_by")
        if n > 25:
            errs.append(f"ok item has {n} > 25 actions")
    return errs


def main():
    bad = 0
    counts = collections.Counter()
    fam_counts = collections.Counter()
    ids = {}
    urls = set()
    zh = 0
    total = 0
    # the first split's two halves; both are tuning material since 2026-12-01 (README.md)
    for half, sub in (("tuning", "a"), ("heldout", "a2")):
        folder = os.path.join(HERE, "tuning", sub)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            raw = open(path, encoding="utf-8").read()
            try:
                d = json.loads(raw)
            except ValueError as exc:
                print(f"{path}: invalid JSON: {exc}")
                bad += 1
                continue
            errs = check_item(path, d)
            if "\\u" in raw:
                errs.append("contains \\u escapes (write with ensure_ascii=False)")
            if isinstance(d, dict) and d.get("id") in ids:
                errs.append(f"duplicate id (also in {ids[d['id']]})")
            if errs:
                bad += 1
                for e in errs:
                    print(f"{path}: {e}")
                continue
            ids[d["id"]] = path
            total += 1
            counts[(d["family"], d["label"], half)] += 1
            fam_counts[d["family"]] += 1
            urls.add(d["source"]["url"])
            body = json.dumps([d["task"], d["actions"]], ensure_ascii=False)
            if CJK.search(body):
                zh += 1
    fams = sorted(fam_counts)
    print(f"{'family':34} {'loop/tun':>8} {'loop/held':>9} {'ok/tun':>6} {'ok/held':>7} {'total':>5}")
    for f in fams:
        row = [counts[(f, l, h)] for l in ("loop", "ok") for h in ("tuning", "heldout")]
        print(f"{f:34} {row[0]:>8} {row[1]:>9} {row[2]:>6} {row[3]:>7} {sum(row):>5}")
    lt = sum(v for (f, l, h), v in counts.items() if l == "loop")
    ht = sum(v for (f, l, h), v in counts.items() if h == "tuning")
    print(f"items {total}: loop {lt}, ok {total - lt}; tuning {ht}, heldout {total - ht}; "
          f"with Chinese text {zh}; distinct source URLs {len(urls)}; invalid files {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
