#!/usr/bin/env python3
"""Validator for writer C's round-3 loop corpus (stdlib only).

Checks every c/*.json file against the item format and prints counts per
family and label. Exit code 1 if any file is invalid.
"""
import json
import os
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "c3")
USED = "/work/used_urls.txt"
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
ID_RE = re.compile(r"^c-[a-z0-9]+(-[a-z0-9]+)*$")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")


def check_action(i, a, errs):
    where = f"action {i}"
    if not isinstance(a, dict):
        errs.append(f"{where}: not an object"); return
    if "ask" in a:
        if set(a) != {"ask", "answer"}:
            errs.append(f"{where}: ask action must have exactly ask+answer")
        if not isinstance(a.get("ask"), str) or not a["ask"].strip():
            errs.append(f"{where}: ask must be a non-empty string")
        if not isinstance(a.get("answer"), str):
            errs.append(f"{where}: answer must be a string")
        return
    if set(a) != {"tool", "args", "result"}:
        errs.append(f"{where}: tool action must have exactly tool, args, result (got {sorted(a)})"); return
    if not isinstance(a["tool"], str) or not a["tool"]:
        errs.append(f"{where}: tool must be a non-empty string")
    if not isinstance(a["args"], dict):
        errs.append(f"{where}: args must be an object")
    r = a["result"]
    if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
        errs.append(f"{where}: result must be an object with boolean ok"); return
    if r["ok"]:
        if set(r) != {"ok", "data"}:
            errs.append(f"{where}: ok result must have exactly ok+data")
    else:
        if set(r) != {"ok", "error", "error_type"}:
            errs.append(f"{where}: failed result must have exactly ok, error, error_type")
        elif not (isinstance(r["error"], str) and r["error"] and isinstance(r["error_type"], str) and r["error_type"]):
            errs.append(f"{where}: error and error_type must be non-empty strings")


def check_item(path, d, used):
    errs = []
    if not isinstance(d, dict):
        return ["top level is not an object"]
    label = d.get("label")
    need = set(KEYS) | ({"trip_by"} if label == "loop" else set())
    missing = need - set(d)
    extra = set(d) - need
    if missing: errs.append(f"missing keys {sorted(missing)}")
    if extra: errs.append(f"unexpected keys {sorted(extra)}")
    iid = d.get("id", "")
    if not isinstance(iid, str) or not ID_RE.match(iid):
        errs.append(f"bad id {iid!r}")
    if os.path.basename(path) != f"{iid}.json":
        errs.append("file name does not match id")
    if not isinstance(d.get("family"), str) or not d.get("family"):
        errs.append("family must be a non-empty string")
    if label not in ("loop", "ok"):
        errs.append(f"label must be loop|ok, got {label!r}")
    src = d.get("source")
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append("source must have exactly url, title, quote")
    else:
        if not str(src["url"]).startswith("https://"):
            errs.append("source.url must be https")
        if src["url"] in used:
            errs.append(f"source.url already used by an earlier writer: {src['url']}")
        if not src["title"] or not src["quote"]:
            errs.append("source title/quote empty")
        if len(src["quote"]) >= 200:
            errs.append(f"quote too long ({len(src['quote'])} chars)")
    if not isinstance(d.get("task"), str) or not d.get("task", "").strip():
        errs.append("task must be a non-empty string")
    acts = d.get("actions")
    if not isinstance(acts, list) or not acts:
        errs.append("actions must be a non-empty list"); acts = []
    if len(acts) >= 30:
        errs.append(f"too many actions ({len(acts)}), must be under 30")
    for i, a in enumerate(acts, 1):
        check_action(i, a, errs)
    if d.get("final") is not None and not isinstance(d.get("final"), str):
        errs.append("final must be a string or null")
    if not isinstance(d.get("why"), str) or not d.get("why"):
        errs.append("why must be a non-empty string")
    if label == "loop":
        t = d.get("trip_by")
        if not isinstance(t, int) or isinstance(t, bool) or t < 1 or t > len(acts):
            errs.append(f"trip_by must be a 1-based index into actions, got {t!r}")
        elif len(acts) < t + 2:
            errs.append(f"loop must run at least two actions past trip_by ({t}); has {len(acts)} actions")
    return errs


def main():
    used = set()
    if os.path.exists(USED):
        with open(USED, encoding="utf-8") as f:
            used = {l.strip() for l in f if l.strip()}
    files = sorted(f for f in os.listdir(DIR) if f.endswith(".json"))
    bad = 0
    fam = defaultdict(Counter)
    labels = Counter()
    urls = set()
    zh = 0
    lengths = []
    for fn in files:
        p = os.path.join(DIR, fn)
        try:
            with open(p, encoding="utf-8") as f:
                d = json.load(f)
        except Exception as e:  # noqa: BLE001
            print(f"INVALID {fn}: cannot parse JSON: {e}"); bad += 1; continue
        errs = check_item(p, d, used)
        if errs:
            bad += 1
            for e in errs:
                print(f"INVALID {fn}: {e}")
            continue
        fam[d["family"]][d["label"]] += 1
        labels[d["label"]] += 1
        urls.add(d["source"]["url"])
        lengths.append(len(d["actions"]))
        if CJK_RE.search(d["task"]):
            zh += 1
    print(f"files: {len(files)}  valid: {len(files) - bad}  invalid: {bad}")
    print(f"{'family':<22}{'loop':>6}{'ok':>6}")
    for k in sorted(fam):
        print(f"{k:<22}{fam[k]['loop']:>6}{fam[k]['ok']:>6}")
    print(f"{'TOTAL':<22}{labels['loop']:>6}{labels['ok']:>6}")
    if lengths:
        print(f"actions per item: min {min(lengths)}, max {max(lengths)}")
    print(f"Chinese tasks: {zh}  distinct source URLs: {len(urls)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
