"""Redaction at write time: secrets removed, personal data pseudonymized.

Seed 004 section 7.2. Two different treatments:

* **Secrets** (API keys such as ``sk-…``, ``AKIA…``, ``ghp_…``, ``xox…``;
  bearer tokens; JWTs; ``Authorization`` / ``Cookie`` / ``Set-Cookie`` /
  ``X-Api-Key`` values; ``token=`` / ``key=`` / ``secret=`` / ``password=`` in
  query strings and bodies) become ``"[REDACTED]"``. Nothing links them.
* **Personal data** (e-mail addresses, phone numbers, Chinese ID numbers, and
  ids you declare per kind, e.g. ``{"user": r"U\\d+", "order": r"A\\d+"}``) get a
  *stable pseudonym*: the same real value becomes the same pseudonym everywhere
  in one cassette (``A100 -> order-001`` in the request, the tool arguments,
  the tool result and the final reply), so references stay linked and the
  cassette still replays. The mapping itself is never written.

:func:`scan_for_secrets` looks for key-like strings in a file or text; the
cassette writer runs it on its own output and refuses to write a leak.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

REDACTED = "[REDACTED]"
RULESET_NAME = "tether.default"
RULESET_VERSION = 2          # 2: cards, IBANs, SSNs, AWS secret keys, more phones, any-script e-mail (issue 19)

# Keys whose whole value is a secret (compared lower-cased, "_" read as "-").
SECRET_KEYS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
    "x-auth-token", "auth-token", "access-token", "refresh-token", "id-token", "client-secret", "secret",
    "password", "passwd", "token", "private-key", "secret-key", "session-id",
})

_KV_KEYS = (r"authorization|proxy-authorization|cookie|set-cookie|x-api-key|api[-_]?key|apikey|key|token|"
            r"access[-_]token|refresh[-_]token|id[-_]token|auth[-_]token|client[-_]secret|secret|password|passwd")

# (kind, pattern, replacement) applied in order; group 1, when present, is kept.
_SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----")),
    ("header", re.compile(r"(?im)^(\s*(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key)"
                          r"\s*:\s*)(?!\[REDACTED\])(\S.*)$")),
    ("query_value", re.compile(r"(?i)((?<![A-Za-z0-9_-])(?:" + _KV_KEYS + r")=)(?!\[REDACTED\])([^\s\"'&,;}\]]{3,})")),
    ("json_value", re.compile(r"(?i)([\"'](?:" + _KV_KEYS + r")[\"']\s*:\s*[\"'])(?!\[REDACTED\])([^\"']{3,})")),
    ("bearer", re.compile(r"((?i:\bbearer)\s+)(?!\[REDACTED\])([A-Za-z0-9._~+/\-]{8,}=*)")),
    ("basic_auth", re.compile(r"(\bBasic\s+)(?=[A-Za-z0-9+/]*[0-9+/=])([A-Za-z0-9+/]{8,}=*)")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    ("openai_key", re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{16,}")),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("aws_key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google_key", re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{35}")),
    # an AWS secret access key: 40 characters of base64, upper and lower case and a digit (a hex hash has no
    # upper case); anywhere, with or without its key name
    ("aws_secret_key", re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                                  r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
    # prose and YAML-ish "password: x", "secret = y" (any length, one word)
    ("named_secret", re.compile(r"(?i)((?<![A-Za-z0-9_-])(?:password|passwd|pwd|passphrase|secret|api[-_ ]?key|"
                                r"access[-_ ]?key|secret[-_ ]?key|token)\s*[:=]\s*)(?!\[REDACTED\])([^\s,;\"'}\]]+)")),
    # a Cookie / Set-Cookie header in the middle of a line: its name=value pairs
    ("cookie_inline", re.compile(r"(?i)((?<![A-Za-z0-9-])(?:set-)?cookie\s*:\s*)(?!\[REDACTED\])"
                                 r"([^\s=;,\"]+=[^\s;,\"]*(?:;\s*[^\s=;,\"]+=[^\s;,\"]*)*)")),
]

# Phone numbers pseudonymized (``phone-001``): the formats covered, each with an
# example (tests/replay/test_redact_phones.py checks every one). A number in no
# listed format (a bare 10-digit run without separators or a "+": an order
# number looks the same) is left as it is: declare it under ``ids`` if you need it.
PHONE_FORMATS: list[tuple[str, str, str]] = [
    ("China mobile: optional +86 / 86, optional spaces, dashes or dots",
     r"(?<![0-9A-Za-z+.])(?:\+?86[- ]?)?1[3-9]\d[- .]?\d{4}[- .]?\d{4}(?![0-9A-Za-z]|\.\d)", "+86 138-1234-5678"),
    ("China landline: area code 0 + 2-3 digits (in parentheses, or then a dash or space), 7-8 digits, "
     "an extension allowed: 010-62345678, (0755) 8765 4321, 0755-87654321",
     r"(?<![0-9A-Za-z+.-])(?:\(0\d{2,3}\) ?|0\d{2,3}[- ])\d{3,4}[- ]?\d{4}(?:-\d{1,5})?(?![0-9A-Za-z]|[.-]\d)",
     "010-62345678"),
    ("UK national format, with its spaces: 020 7946 0958, 0161 496 0000, 01632 960001, 07700 900123",
     r"(?<![0-9A-Za-z+.-])0(?:\d{2} \d{4} \d{4}|\d{3} \d{3} \d{4}|\d{4} \d{5,6})(?![0-9A-Za-z]|[.-]\d)",
     "020 7946 0958"),
    ("North American with +1: +1 (555) 123-4567, +1 555 123 4567, +1-555-123-4567, +15551234567",
     r"(?<![0-9A-Za-z+])\+1[ .-]?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?![0-9A-Za-z])", "+1 (555) 123-4567"),
    ("North American with a trunk 1: 1-555-123-4567, 1 (555) 123-4567, 1.555.123.4567",
     r"(?<![0-9A-Za-z+.-])1[ .-](?:\(\d{3}\)|\d{3})[ .-]\d{3}[ .-]\d{4}(?![0-9A-Za-z])", "1-555-123-4567"),
    ("North American, separated: (555) 123-4567, (555)123-4567, 555-123-4567, 555.123.4567, 555 123 4567",
     r"(?<![0-9A-Za-z+.-])(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![0-9A-Za-z]|[.-]\d)", "(555) 123-4567"),
    ("International: +country code, 8 to 15 digits in all, in groups separated by spaces, dots or dashes, "
     "an area code in parentheses allowed: +44 20 7946 0958, +33 1 23 45 67 89, +49 (30) 901820, +81 3-1234-5678",
     r"(?<![0-9A-Za-z+])\+(?=(?:[ ().-]{0,2}\d){8,15}(?![ ().-]{0,2}\d))"
     r"[1-9]\d{0,2}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,6}(?![0-9A-Za-z])",
     "+44 20 7946 0958"),
]

# Built-in personal data, in priority order (an ID number is not read as a phone).
_BUILTIN_PII: list[tuple[str, str]] = [
    ("cnid", r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"),
    # IBAN: country, check digits, 11-30 letters and digits (groups of 4 may be spaced); mod-97 checked
    ("iban", r"(?<![0-9A-Za-z])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![0-9A-Za-z])"),
    # payment card: 13-19 digits, bare or in groups of 4 (Amex 4-6-5); Luhn checked
    ("card", r"(?<![0-9A-Za-z+.-])(?:\d{4}[ -]\d{4}[ -]\d{4}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{5}|\d{13,19})"
             r"(?![0-9A-Za-z]|[.-]\d)"),
    # US social security number: AAA-GG-SSSS, never 000 / 666 / 9xx, 00, 0000
    ("ssn", r"(?<![0-9A-Za-z-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![0-9A-Za-z]|-\d)"),
    # e-mail, any script: josé@exämple.de, 用户@例子.中国
    ("email", r"(?<![\w.%+-])[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}(?!\w)"),
    ("phone", "|".join(f"(?:{pattern})" for _, pattern, _ in PHONE_FORMATS)),
]


def _luhn(value: str) -> bool:
    digits = [int(c) for c in value if c.isdigit()]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return 13 <= len(digits) <= 19 and total % 10 == 0


def _iban(value: str) -> bool:
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# A match of these kinds is personal data only when its checksum holds (else it is left as it is).
CHECKED: dict[str, Any] = {"card": _luhn, "iban": _iban}
_BUILTIN_KINDS = ("cnid", "iban", "card", "ssn", "email", "phone")


class RedactionRules(BaseModel):
    """Which rules a cassette was written with (stored in it, without the mapping)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = RULESET_NAME
    version: int = RULESET_VERSION
    pii: bool = True                               # e-mails, phone numbers, Chinese ID numbers
    ids: dict[str, str] = Field(default_factory=dict)  # kind -> regex of your own ids


class RedactionRecord(RedactionRules):
    """The rules plus what they did: counts only, never values."""

    secrets_removed: int = 0
    pseudonyms: dict[str, int] = Field(default_factory=dict)   # kind -> distinct values replaced

    def rules(self) -> RedactionRules:
        return RedactionRules(name=self.name, version=self.version, pii=self.pii, ids=dict(self.ids))


def pseudonym(kind: str, n: int) -> str:
    return f"{kind}-{n:03d}@example.invalid" if kind == "email" else f"{kind}-{n:03d}"


class Redactor:
    """Walks JSON values; one instance keeps one mapping (use one per cassette)."""

    def __init__(self, rules: RedactionRules = RedactionRules()):
        self.rules = rules
        kinds = ([*(_BUILTIN_PII if rules.pii else [])] + list(rules.ids.items()))
        self.kinds = [k for k, _ in kinds]
        self._groups = {f"k{i}": k for i, (k, _) in enumerate(kinds)}
        alternatives = []
        for i, (kind, pat) in enumerate(kinds):
            wrapped = pat if kind in _BUILTIN_KINDS and rules.pii else \
                rf"(?<![A-Za-z0-9_])(?:{pat})(?![A-Za-z0-9_])"
            alternatives.append(f"(?P<k{i}>{wrapped})")
        self._pii = re.compile("|".join(alternatives)) if alternatives else None
        names = "|".join(re.escape(k) for k in self.kinds) or "(?!)"
        self._is_pseudonym = re.compile(rf"(?:{names})-\d{{3,}}(?:@example\.invalid)?")
        self.mapping: dict[tuple[str, str], str] = {}
        self.counters: dict[str, int] = {}
        self.secrets_removed = 0

    # -- state ------------------------------------------------------------
    def learn(self, value: Any) -> None:
        """Continue numbering after pseudonyms already present (appending to a cassette)."""
        names = "|".join(re.escape(k) for k in self.kinds) or "(?!)"
        for m in re.finditer(rf"(?<![A-Za-z0-9_])({names})-(\d{{3,}})", _all_text(value)):
            self.counters[m[1]] = max(self.counters.get(m[1], 0), int(m[2]))

    def record(self) -> RedactionRecord:
        counts: dict[str, int] = {}
        for kind, _ in self.mapping:
            counts[kind] = counts.get(kind, 0) + 1
        return RedactionRecord(**self.rules.model_dump(), secrets_removed=self.secrets_removed, pseudonyms=counts)

    # -- walking ------------------------------------------------------------
    def redact(self, value: Any, *, skip_keys: Iterable[str] = ()) -> Any:
        skip = set(skip_keys)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                key = self.text(k) if isinstance(k, str) else k
                if isinstance(k, str) and k in skip:
                    out[key] = v
                elif isinstance(k, str) and _secret_key(k) and v not in (None, "", REDACTED):
                    self.secrets_removed += 1
                    out[key] = REDACTED
                else:
                    out[key] = self.redact(v, skip_keys=skip)
            return out
        if isinstance(value, list):
            return [self.redact(v, skip_keys=skip) for v in value]
        if isinstance(value, str):
            nested = _embedded_json(value)
            if nested is not None:      # a tool result as the model saw it: JSON inside a message
                from ..messages import canonical_json

                return canonical_json(self.redact(nested, skip_keys=skip))
            return self.text(value)
        return value

    def text(self, text: str) -> str:
        for _, pattern in _SECRET_PATTERNS:
            text = pattern.sub(self._secret_sub, text)
        if self._pii is not None:
            text = self._pii.sub(self._pii_sub, text)
        return text

    def _secret_sub(self, m: re.Match[str]) -> str:
        self.secrets_removed += 1
        return (m.group(1) + REDACTED) if m.re.groups >= 1 and m.group(1) is not None else REDACTED

    def _pii_sub(self, m: re.Match[str]) -> str:
        real = m.group(0)
        kind = next(k for g, k in self._groups.items() if m.group(g) is not None)
        if self._is_pseudonym.fullmatch(real) or (kind in CHECKED and not CHECKED[kind](real)):
            return real
        key = (kind, _identity(kind, real))
        if key not in self.mapping:
            self.counters[kind] = self.counters.get(kind, 0) + 1
            self.mapping[key] = pseudonym(kind, self.counters[kind])
        return self.mapping[key]


def _identity(kind: str, real: str) -> str:
    """The same person in another spelling: phones by digits (no +86), e-mails case-folded."""
    if kind == "phone":
        digits = re.sub(r"\D", "", real)
        if len(digits) == 13 and digits.startswith("86"):
            return digits[2:]
        if len(digits) == 11 and re.match(r"\+1(?!\d{2}\d{9}$)|1[ .(-]", real):    # +1 / trunk 1: North American
            return digits[1:]
        return digits
    if kind in ("card", "ssn"):
        return re.sub(r"\D", "", real)
    if kind == "iban":
        return real.replace(" ", "").upper()
    if kind in ("email", "cnid"):
        return real.casefold()
    return real


def _secret_key(key: str) -> bool:
    return key.lower().replace("_", "-") in SECRET_KEYS


def _all_text(value: Any) -> str:
    if isinstance(value, dict):
        return "\n".join(f"{k}\n{_all_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(_all_text(v) for v in value)
    return value if isinstance(value, str) else ""


# -- scanning -----------------------------------------------------------------
@dataclass(frozen=True)
class SecretFinding:
    kind: str
    where: str          # "path:line:column" or "<text>:line:column"
    excerpt: str        # the first characters only

    def __str__(self) -> str:
        return f"{self.where}: {self.kind} {self.excerpt}"


def scan_for_secrets(source: str | os.PathLike[str], *, include_pii: bool = False) -> list[SecretFinding]:
    """Key-like strings in a text, a file, or every ``*.json`` file under a directory.

    A ``str`` is text unless it is the path of an existing file (one line, no
    newline); pass a :class:`~pathlib.Path` to be explicit. JSON is scanned
    string by string (findings name the JSON path), other text line by line.
    ``include_pii`` also reports e-mails, phone numbers and Chinese ID numbers.
    """
    if isinstance(source, os.PathLike) or ("\n" not in source and len(source) < 4096 and os.path.isfile(source)):
        path = Path(source)
        files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
        return [f for p in files for f in _scan_document(p.read_text(encoding="utf-8"), str(p), include_pii)]
    return _scan_document(source, "<text>", include_pii)


def _scan_document(text: str, label: str, include_pii: bool) -> list[SecretFinding]:
    try:
        doc = json.loads(text)
    except ValueError:
        return _scan_text(text, label, include_pii)
    found: list[SecretFinding] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                sub = f"{path}.{k}"
                if isinstance(k, str) and _secret_key(k) and isinstance(v, (str, int)) and v not in ("", REDACTED):
                    found.append(SecretFinding("secret_field", f"{label} {sub}", str(v)[:4] + "…"))
                walk(v, sub)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif isinstance(value, str):
            nested = _embedded_json(value)
            if nested is not None:
                walk(nested, path)
            else:
                found.extend(_scan_text(value, f"{label} {path}", include_pii))

    walk(doc, "$")
    return found


def _embedded_json(text: str) -> Any:
    """A JSON object or array carried inside a string (what a model is sent as a
    tool result), parsed; None for any other string."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] not in "{[" or stripped[-1] not in "}]" or len(stripped) > 1_000_000:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


def _scan_text(text: str, label: str, include_pii: bool) -> list[SecretFinding]:
    found: list[SecretFinding] = []

    def add(kind: str, start: int, value: str) -> None:
        line = text.count("\n", 0, start) + 1
        col = start - (text.rfind("\n", 0, start) + 1) + 1
        found.append(SecretFinding(kind, f"{label}:{line}:{col}", value[:4] + "…"))

    for kind, pattern in _SECRET_PATTERNS:
        for m in pattern.finditer(text):
            group = 2 if m.re.groups >= 2 else 0
            add(kind, m.start(group), m.group(group))
    if include_pii:
        for kind, pat in _BUILTIN_PII:
            for m in re.finditer(pat, text):
                if kind in CHECKED and not CHECKED[kind](m.group(0)):
                    continue
                if not re.fullmatch(r"(?:email|phone|cnid|card|iban|ssn)-\d{3,}(?:@example\.invalid)?", m.group(0)):
                    add(kind, m.start(), m.group(0))
    return sorted(set(found), key=lambda f: f.where)


def redact_with(rules: RedactionRules | Mapping[str, Any] | None) -> RedactionRules:
    """Rules from a RedactionRules, a dict such as ``{"ids": {"order": r"A\\d+"}}``, or the defaults."""
    if rules is None:
        return RedactionRules()
    if isinstance(rules, RedactionRules):
        return rules
    return RedactionRules.model_validate(dict(rules))


__all__ = [
    "REDACTED",
    "RedactionRecord",
    "RedactionRules",
    "Redactor",
    "SecretFinding",
    "pseudonym",
    "redact_with",
    "scan_for_secrets",
]
