"""Date phrases: find them in text, resolve them against "today"."""

from __future__ import annotations

import re
from datetime import date, timedelta

from ._lexicon import WEEKDAYS, cn_number

DEFAULT_TODAY = date(2026, 4, 7)  # a Tuesday: the C4 scenario clock

_DATE_PATTERNS = [
    r"\d{4}-\d{1,2}-\d{1,2}",
    r"\d{4}年\d{1,2}月\d{1,2}[日号]",
    r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})月(?:\d{1,2}|[一二三四五六七八九十]{1,3})[日号]",
    r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})月(?:上旬|中旬|下旬|初|底|末)",
    r"(?:下下|下|这|本|上)?(?:周|星期|礼拜)[一二三四五六日天末]",
    r"大后天|后天|明天|今天|明日|今日|今晚|明晚",
    r"(?:\d+|[一二三四五六七八九十]+)天(?:后|以后|之后)",
    r"下周|下个月|本周|这周|周末",
]
DATE_RE = re.compile("|".join(f"(?:{p})" for p in _DATE_PATTERNS))


def date_phrase(text: str) -> str | None:
    m = DATE_RE.search(text.replace("一下", "  "))
    return m.group(0) if m else None


def resolve_date(phrase: str | None, today: date = DEFAULT_TODAY) -> str | None:
    """A date phrase -> ISO YYYY-MM-DD (None when it names no single day)."""
    if not phrase:
        return None
    p = phrase.strip()
    if m := re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", p):
        return date(int(m[1]), int(m[2]), int(m[3])).isoformat()
    if m := re.fullmatch(r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]", p):
        return date(int(m[1]), int(m[2]), int(m[3])).isoformat()
    if m := re.fullmatch(r"(\S{1,3})月(\S{1,3})[日号]", p):
        mo, d = cn_number(m[1]), cn_number(m[2])
        if mo and d:
            day = date(today.year, int(mo), int(d))
            return (day if day >= today else date(today.year + 1, int(mo), int(d))).isoformat()
    offsets = {"今天": 0, "今日": 0, "今晚": 0, "明天": 1, "明日": 1, "明晚": 1, "后天": 2, "大后天": 3}
    if p in offsets:
        return (today + timedelta(days=offsets[p])).isoformat()
    if m := re.fullmatch(r"(\S+)天(?:后|以后|之后)", p):
        n = cn_number(m[1])
        return (today + timedelta(days=int(n))).isoformat() if n is not None else None
    if m := re.fullmatch(r"(下下|下|这|本|上)?(?:周|星期|礼拜)([一二三四五六日天末])", p):
        weeks = {"下下": 2, "下": 1, "上": -1}.get(m[1] or "", 0)
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=weeks)
        day = monday + timedelta(days=WEEKDAYS[m[2]])
        if not m[1] and day < today:
            day += timedelta(weeks=1)
        return day.isoformat()
    return None
