"""Phone numbers in the formats tether.replay.redact.PHONE_FORMATS lists are
pseudonymized, one person one pseudonym across spellings; other numbers stay."""

from __future__ import annotations

import pytest

from tether.replay.redact import PHONE_FORMATS, Redactor

SPELLINGS = {
    "China mobile": ["13812345678", "138 1234 5678", "138-1234-5678", "+86 138-1234-5678", "+8613812345678",
                     "86 13812345678", "138.1234.5678"],
    "China landline": ["010-62345678", "(0755) 8765 4321", "0755-87654321", "(010)62345678", "021-6234-5678"],
    "UK national format, with its spaces": ["020 7946 0958", "0161 496 0000", "01632 960001", "07700 900123"],
    "North American with +1": ["+1 (555) 123-4567", "+1 555 123 4567", "+1-555-123-4567", "+15551234567",
                               "+1.555.123.4567"],
    "North American with a trunk 1": ["1-555-123-4567", "1 (555) 123-4567", "1.555.123.4567", "1 555 123 4567"],
    "North American, separated": ["(555) 123-4567", "(555)123-4567", "555-123-4567", "555.123.4567", "555 123 4567"],
    "International": ["+44 20 7946 0958", "+33 1 23 45 67 89", "+49 (30) 901820", "+81 3-1234-5678",
                      "+4915112345678", "+61 2 9374 4000"],
}
NOT_PHONES = ["2026-04-07", "2026-04-07T10:00:00+08:00", "order 1234567890", "v1.2.3", "10:00-12:00", "+5 10",
              "192.168.1.1", "price 123-456", "A100", "UTC+8 2026"]


def test_every_documented_format_has_spellings_here():
    assert {name.split(":")[0] for name, _, _ in PHONE_FORMATS} == set(SPELLINGS)


@pytest.mark.parametrize("fmt", list(SPELLINGS))
def test_each_format_is_pseudonymized(fmt):
    for spelling in SPELLINGS[fmt]:
        out = Redactor().text(f"call me at {spelling}, thanks")
        assert out == "call me at phone-001, thanks", (spelling, out)


@pytest.mark.parametrize("name,pattern,example", PHONE_FORMATS)
def test_each_documented_example_is_pseudonymized(name, pattern, example):
    assert Redactor().text(f"tel {example}.") == "tel phone-001."


def test_one_person_one_pseudonym_across_spellings():
    r = Redactor()
    na = [r.text(s) for s in SPELLINGS["North American with +1"] + SPELLINGS["North American, separated"]
          + SPELLINGS["North American with a trunk 1"]]
    cn = [r.text(s) for s in SPELLINGS["China mobile"]]
    assert set(na) == {"phone-001"} and set(cn) == {"phone-002"}


@pytest.mark.parametrize("text", NOT_PHONES)
def test_dates_versions_and_ids_are_not_phones(text):
    assert Redactor().text(text) == text
