"""Validate writer G's round-5 loop corpus items (stdlib only).

Usage: python check_g.py [--used /work/used_urls.txt]
Checks every g/*.json against the item format and prints counts per family and label.
"""
import collections
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "g")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}


def check_action(i, a, errs, iid):
    if "ask" in a or "answer" in a:
        if set(a) != {"ask", "answer"} or not all(isinstance(a[k], str) and a[k] for k in a):
            errs.append(f"{iid}: action {i} ask/answer malformed")
        return
    if set(a) != {"tool", "args", "result"}:
        errs.append(f"{iid}: action {i} keys {sorted(a)}")
        return
    if not isinstance(a["tool"], str) or not a["tool"]:
        errs.append(f"{iid}: action {i} tool name")
    if not isinstance(a["args"], dict):
        errs.append(f"{iid}: action {i} args not an object")
    r = a["result"]
    if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
        errs.append(f"{iid}: action {i} result.ok missing")
        return
    if r["ok"]:
        if set(r) != {"ok", "data"}:
            errs.append(f"{iid}: action {i} ok result keys {sorted(r)}")
    else:
        if set(r) != {"ok", "error", "error_type"} or not r.get("error") or not r.get("error_type"):
            errs.append(f"{iid}: action {i} error result keys {sorted(r)}")


def main():
    used = set()
    used_path = "/work/used_urls.txt"
    if "--used" in sys.argv:
        used_path = sys.argv[sys.argv.index("--used") + 1]
    if os.path.exists(used_path):
        used = {l.strip().rstrip("/") for l in open(used_path, encoding="utf-8") if l.strip()}
    errs = []
    counts = collections.Counter()
    ids = set()
    urls = set()
    zh = 0
    files = sorted(glob.glob(os.path.join(DIR, "*.json")))
    for path in files:
        try:
            d = json.load(open(path, encoding="utf-8"))
        except Exception as e:  # noqa: BLE001
            errs.append(f"{path}: invalid JSON: {e}")
            continue
        iid = d.get("id", path)
        need = KEYS | ({"trip_by"} if d.get("label") == "loop" else set())
        if set(d) != need:
            errs.append(f"{iid}: keys {sorted(set(d) ^ need)}")
        if not re.fullmatch(r"g-[a-z0-9]+(-[a-z0-9]+)*", str(iid)):
            errs.append(f"{iid}: id not kebab-case with g- prefix")
        if os.path.basename(path) != f"{iid}.json":
            errs.append(f"{iid}: file name mismatch")
        if iid in ids:
            errs.append(f"{iid}: duplicate id")
        ids.add(iid)
        if d.get("label") not in ("loop", "ok"):
            errs.append(f"{iid}: bad label")
        src = d.get("source", {})
        if set(src) != {"url", "title", "quote"} or not all(isinstance(src.get(k), str) and src.get(k) for k in ("url", "title", "quote")):
            errs.append(f"{iid}: source malformed")
        else:
            if len(src["quote"]) >= 200:
                errs.append(f"{iid}: quote too long")
            if not src["url"].startswith("https://"):
                errs.append(f"{iid}: url not https")
            if src["url"].rstrip("/") in used:
                errs.append(f"{iid}: url already used by an earlier writer")
            urls.add(src["url"])
        if not isinstance(d.get("task"), str) or not d["task"]:
            errs.append(f"{iid}: task")
        elif re.search(r"[\u4e00-\u9fff]", d["task"]):
            zh += 1
        acts = d.get("actions")
        if not isinstance(acts, list) or not acts:
            errs.append(f"{iid}: actions")
            acts = []
        if len(acts) >= 30:
            errs.append(f"{iid}: {len(acts)} actions (must be under 30)")
        for i, a in enumerate(acts, 1):
            if not isinstance(a, dict):
                errs.append(f"{iid}: action {i} not an object")
            else:
                check_action(i, a, errs, iid)
        if d.get("label") == "loop":
            t = d.get("trip_by")
            if not isinstance(t, int) or t < 1 or t + 2 > len(acts):
                errs.append(f"{iid}: trip_by {t} with {len(acts)} actions (needs >= 2 actions after)")
        if d.get("final") is not None and not isinstance(d.get("final"), str):
            errs.append(f"{iid}: final must be string or null")
        if not isinstance(d.get("why"), str) or not d["why"]:
            errs.append(f"{iid}: why")
        counts[(d.get("family"), d.get("label"))] += 1
    fams = sorted({f for f, _ in counts})
    print(f"{'family':28s} loop  ok")
    for f in fams:
        print(f"{f:28s} {counts[(f, 'loop')]:4d} {counts[(f, 'ok')]:3d}")
    nl = sum(v for (f, l), v in counts.items() if l == "loop")
    no = sum(v for (f, l), v in counts.items() if l == "ok")
    print(f"total {len(files)} items: loop {nl}, ok {no}; Chinese tasks {zh} ({100*zh/max(1,len(files)):.0f}%); distinct URLs {len(urls)}")
    if errs:
        print(f"{len(errs)} problem(s):")
        for e in errs:
            print("  " + e)
        return 1
    print("all items valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
