"""Validate every blind_b item against the corpus item format and print counts.

Stdlib only. Run: python _check.py   (from anywhere)
Exit status 1 if any file is invalid.
"""
import collections
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,60}$")
FAMILY_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
TOP_KEYS = {"id", "family", "label", "trip_by", "source", "task", "actions", "final", "why"}


def check_action(a, where):
    errs = []
    if not isinstance(a, dict):
        return [f"{where}: action is not an object"]
    if "ask" in a:
        if set(a) != {"ask", "answer"}:
            errs.append(f"{where}: ask action must have exactly ask and answer")
        if not isinstance(a.get("ask"), str) or not a.get("ask"):
            errs.append(f"{where}: ask must be a non-empty string")
        if a.get("answer") is not None and not isinstance(a.get("answer"), str):
            errs.append(f"{where}: answer must be a string or null")
        return errs
    if set(a) != {"tool", "args", "result"}:
        errs.append(f"{where}: tool action keys must be tool, args, result (got {sorted(a)})")
    if not isinstance(a.get("tool"), str) or not a.get("tool"):
        errs.append(f"{where}: tool must be a non-empty string")
    if not isinstance(a.get("args"), dict):
        errs.append(f"{where}: args must be an object")
    r = a.get("result")
    if not isinstance(r, dict) or not isinstance(r.get("ok"), bool):
        errs.append(f"{where}: result must be an object with boolean ok")
    elif r["ok"]:
        if set(r) != {"ok", "data"}:
            errs.append(f"{where}: ok result keys must be ok, data")
    else:
        if set(r) != {"ok", "error", "error_type"}:
            errs.append(f"{where}: error result keys must be ok, error, error_type")
        if not isinstance(r.get("error"), str) or not r.get("error"):
            errs.append(f"{where}: error must be a non-empty string")
        if not isinstance(r.get("error_type"), str) or not r.get("error_type"):
            errs.append(f"{where}: error_type must be a non-empty string")
    return errs


def check_file(path, half):
    errs = []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{path.name}: not UTF-8"], None
    if re.search(r"\\u[0-9a-fA-F]{4}", text):
        errs.append(f"{path.name}: contains \\uXXXX escapes (write with ensure_ascii=False)")
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        return [f"{path.name}: invalid JSON: {e}"], None
    if not isinstance(d, dict):
        return [f"{path.name}: top level is not an object"], None
    if json.dumps(d, ensure_ascii=False, indent=2) + "\n" != text:
        errs.append(f"{path.name}: not 2-space indented json.dumps output")
    extra = set(d) - TOP_KEYS
    if extra:
        errs.append(f"{path.name}: unknown keys {sorted(extra)}")
    for k in ("id", "family", "label", "source", "task", "actions", "why"):
        if k not in d:
            errs.append(f"{path.name}: missing {k}")
    if errs:
        return errs, d
    if not ID_RE.match(d["id"]) or not d["id"].startswith("b-"):
        errs.append(f"{path.name}: bad id {d['id']!r}")
    if path.name != d["id"] + ".json":
        errs.append(f"{path.name}: file name does not match id")
    if not FAMILY_RE.match(d["family"]):
        errs.append(f"{path.name}: family is not short kebab-case")
    src = d["source"]
    if not isinstance(src, dict) or set(src) != {"url", "title", "quote"}:
        errs.append(f"{path.name}: source must have url, title, quote")
    else:
        if not str(src["url"]).startswith("http"):
            errs.append(f"{path.name}: source url is not http(s)")
        if not src["quote"] or len(src["quote"]) >= 200:
            errs.append(f"{path.name}: quote must be 1..199 chars")
    for k in ("task", "why"):
        if not isinstance(d[k], str) or not d[k].strip():
            errs.append(f"{path.name}: {k} must be a non-empty string")
    if "final" in d and not isinstance(d["final"], str):
        errs.append(f"{path.name}: final must be a string")
    acts = d["actions"]
    if not isinstance(acts, list) or not acts:
        errs.append(f"{path.name}: actions must be a non-empty list")
        return errs, d
    for i, a in enumerate(acts, 1):
        errs += check_action(a, f"{path.name} action {i}")
    n = len(acts)
    if d["label"] == "loop":
        tb = d.get("trip_by")
        if not isinstance(tb, int) or isinstance(tb, bool) or tb < 1:
            errs.append(f"{path.name}: loop needs integer trip_by >= 1")
        else:
            if tb + 2 > n:
                errs.append(f"{path.name}: loop must run at least 2 actions past trip_by ({tb} + 2 > {n})")
        if n > 30:
            errs.append(f"{path.name}: loop has {n} > 30 actions")
    elif d["label"] == "ok":
        if "trip_by" in d:
            errs.append(f"{path.name}: ok items carry no trip_by")
        if n > 25:
            errs.append(f"{path.name}: ok has {n} > 25 actions")
    else:
        errs.append(f"{path.name}: label must be loop or ok")
    return errs, d


def main():
    errs = []
    items = []
    ids = collections.Counter()
    # the first split's two halves; both are tuning material since 2026-12-01 (README.md)
    for half, sub in (("tuning", "b"), ("heldout", "b2")):
        for p in sorted((ROOT / "tuning" / sub).glob("*.json")):
            e, d = check_file(p, half)
            errs += e
            if d is not None and "id" in d:
                ids[d["id"]] += 1
                items.append((half, d))
    for i, c in ids.items():
        if c > 1:
            errs.append(f"duplicate id {i}")
    stray = [p for p in (ROOT / "tuning").glob("*.json")] + [p for p in (ROOT / "heldout").glob("*.json")]
    if stray:
        errs.append(f"json files outside tuning/heldout: {[p.name for p in stray]}")
    table = collections.Counter((d.get("family"), d.get("label"), h) for h, d in items)
    fams = sorted({f for f, _, _ in table})
    print(f"{'family':34} {'loop/tun':>8} {'loop/held':>9} {'ok/tun':>6} {'ok/held':>7}")
    for f in fams:
        print(f"{f:34} {table[(f,'loop','tuning')]:>8} {table[(f,'loop','heldout')]:>9} {table[(f,'ok','tuning')]:>6} {table[(f,'ok','heldout')]:>7}")
    lab = collections.Counter(d.get("label") for _, d in items)
    half = collections.Counter(h for h, _ in items)
    urls = {d["source"]["url"] for _, d in items if isinstance(d.get("source"), dict)}
    zh = sum(1 for _, d in items if re.search(r"[\u4e00-\u9fff]", d.get("task", "")))
    print(f"total {len(items)}: loop {lab['loop']}, ok {lab['ok']}; tuning {half['tuning']}, heldout {half['heldout']}; "
          f"families {len(fams)}; distinct source urls {len(urls)}; Chinese tasks {zh}")
    for f in fams:
        if not any(table[(f, l, 'tuning')] for l in ('loop', 'ok')) or not any(table[(f, l, 'heldout')] for l in ('loop', 'ok')):
            errs.append(f"family {f} is not present in both halves")
    if errs:
        print("\nERRORS:")
        for e in errs:
            print(" ", e)
        return 1
    print("all files valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
