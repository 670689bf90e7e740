"""Tiny stdlib validator for writer F's round-4 items: python3 check_f.py"""
import collections, json, os, re, sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "f4")
KEYS = {"id", "family", "label", "source", "task", "actions", "final", "why"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def check(path):
    probs = []
    with open(path, encoding="utf-8") as fh:
        d = json.load(fh)
    missing = KEYS - d.keys()
    if missing:
        probs.append(f"missing keys {sorted(missing)}")
    extra = d.keys() - KEYS - {"trip_by"}
    if extra:
        probs.append(f"unexpected keys {sorted(extra)}")
    if d.get("id") != os.path.basename(path)[:-5] or not str(d.get("id", "")).startswith("f-"):
        probs.append("id must match file name and start with f-")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", d.get("id", "")):
        probs.append("id not kebab-case")
    if d.get("label") not in ("loop", "ok"):
        probs.append("bad label")
    src = d.get("source", {})
    for k in ("url", "title", "quote"):
        if not isinstance(src.get(k), str) or not src.get(k):
            probs.append(f"source.{k} missing")
    if len(src.get("quote", "")) >= 200:
        probs.append("quote too long")
    acts = d.get("actions", [])
    if not isinstance(acts, list) or not acts:
        probs.append("no actions")
    if len(acts) >= 30:
        probs.append("30+ actions")
    for i, a in enumerate(acts, 1):
        if "ask" in a:
            if set(a) != {"ask", "answer"}:
                probs.append(f"action {i}: ask needs exactly ask/answer")
            continue
        if set(a) != {"tool", "args", "result"}:
            probs.append(f"action {i}: needs tool/args/result")
            continue
        r = a["result"]
        if not isinstance(a["args"], dict):
            probs.append(f"action {i}: args not object")
        if r.get("ok") is True:
            if "data" not in r:
                probs.append(f"action {i}: ok result without data")
        elif r.get("ok") is False:
            if not r.get("error") or not r.get("error_type"):
                probs.append(f"action {i}: failed result needs error and error_type")
        else:
            probs.append(f"action {i}: result.ok must be bool")
    if d.get("label") == "loop":
        t = d.get("trip_by")
        if not isinstance(t, int) or t < 1 or t + 2 > len(acts):
            probs.append("trip_by must be 1-based and leave >=2 actions after it")
    elif "trip_by" in d:
        probs.append("ok item must not have trip_by")
    if not (d.get("final") is None or isinstance(d.get("final"), str)):
        probs.append("final must be string or null")
    return d, probs


def main():
    files = sorted(f for f in os.listdir(HERE) if f.endswith(".json"))
    counts = collections.Counter()
    labels = collections.Counter()
    urls = set()
    zh = 0
    bad = 0
    for f in files:
        d, probs = check(os.path.join(HERE, f))
        if probs:
            bad += 1
            print(f"{f}: " + "; ".join(probs))
        counts[(d.get("family"), d.get("label"))] += 1
        labels[d.get("label")] += 1
        urls.add(d.get("source", {}).get("url"))
        if CJK.search(d.get("task", "")):
            zh += 1
    fams = sorted({k[0] for k in counts})
    print(f"{'family':28} loop  ok")
    for fam in fams:
        print(f"{fam:28} {counts[(fam, 'loop')]:4} {counts[(fam, 'ok')]:3}")
    print(f"total {len(files)}: loop {labels['loop']}, ok {labels['ok']}; chinese tasks {zh} ({100*zh/max(1,len(files)):.0f}%); distinct urls {len(urls)}; files with problems {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
