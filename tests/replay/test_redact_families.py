"""Issue 19 finding 7: the personal-data and secret families that survived
redaction, each with a value that must go and a near miss that must stay."""

from __future__ import annotations

import pytest

from tether.replay.redact import REDACTED, Redactor, scan_for_secrets

# (family, text holding the value, the value, the pseudonym kind or REDACTED)
GONE = [
    ("card number (Luhn)", "card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111", "card-001"),
    ("card number, dashes", "pay with 5500-0000-0000-0004 now", "5500-0000-0000-0004", "card-001"),
    ("card number, bare", "card=4012888888881881.", "4012888888881881", "card-001"),
    ("IBAN", "IBAN GB82 WEST 1234 5698 7654 32 please", "GB82 WEST 1234 5698 7654 32", "iban-001"),
    ("IBAN, bare", "to DE89370400440532013000 today", "DE89370400440532013000", "iban-001"),
    ("US SSN", "SSN 123-45-6789 on file", "123-45-6789", "ssn-001"),
    ("AWS secret key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", REDACTED),
    ("AWS secret key, alone", "creds: AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", REDACTED),
    ("UK phone, national format", "ring 020 7946 0958 after 6", "020 7946 0958", "phone-001"),
    ("UK mobile, national format", "mobile 07700 900123.", "07700 900123", "phone-001"),
    ("China mobile with dots", "手机 138.1234.5678 联系", "138.1234.5678", "phone-001"),
    ("China landline", "座机 010-62345678 转 8", "010-62345678", "phone-001"),
    ("China landline, 4-digit area", "电话 (0755) 8765 4321", "(0755) 8765 4321", "phone-001"),
    ("non-ASCII e-mail", "mail josé.müller@exämple.de now", "josé.müller@exämple.de", "email-001@example.invalid"),
    ("Chinese e-mail", "邮箱 用户@例子.中国 ", "用户@例子.中国", "email-001@example.invalid"),
    ("password: x", "password: x", "x", REDACTED),
    ("password: with spaces around", "the password : hunter2 is old", "hunter2", REDACTED),
    ("Cookie header mid-line", "sent GET / Cookie: sid=abc123; theme=dark and more", "sid=abc123", REDACTED),
]

STAY = [
    ("not a card (Luhn fails)", "order 4111 1111 1111 1112 shipped"),
    ("a git sha", "commit 3f786850e387550fdab836ed7e6dc881de23001b"),
    ("a date range", "2026-04-07 to 2026-04-09"),
    ("not an IBAN (checksum)", "ref GB00 WEST 1234 5698 7654 32"),
    ("an order number", "order 1234567890"),
    ("a password field name", "reset your password by mail"),
]


@pytest.mark.parametrize("family,text,value,replacement", GONE, ids=[g[0] for g in GONE])
def test_family_is_redacted(family, text, value, replacement):
    out = Redactor().text(text)
    assert value not in out, (family, out)
    assert replacement in out, (family, out)


@pytest.mark.parametrize("family,text", STAY, ids=[s[0] for s in STAY])
def test_near_miss_stays(family, text):
    assert Redactor().text(text) == text


def test_one_card_one_pseudonym_across_spellings():
    out = Redactor().text("4111111111111111 and 4111-1111-1111-1111")
    assert out == "card-001 and card-001"


def test_redacted_families_leave_nothing_the_scanner_finds():
    text = " · ".join(t for _, t, _, _ in GONE)
    out = Redactor().text(text)
    assert not [f for f in scan_for_secrets(out, include_pii=True)], scan_for_secrets(out, include_pii=True)


def test_every_family_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text(encoding="utf-8")
    for word in ("Luhn", "IBAN", "SSN", "AWS secret", "UK", "landline", "non-ASCII", "password:", "Cookie:"):
        assert word in doc, word
