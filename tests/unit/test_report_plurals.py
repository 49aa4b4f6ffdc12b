"""The report's words never write a count as "1 problem(s)": each count stands after its noun ("Problems that stop
PyTorch: 1"), which reads right at any number in English and in Chinese."""

from __future__ import annotations

from app.i18n import _texts
from app.report.sections import _summary


def test_no_report_text_writes_a_plural_in_brackets():
    plural = {key: entry["en"] for key, entry in _texts().items() if key.startswith("report.") and "(s)" in entry["en"]}
    assert plural == {}


def test_the_summary_says_its_counts_after_their_nouns():
    document = {"summary": {"blockers": 1, "warnings": 0, "infos": 2}, "complete": False, "nothing_checked": None,
                "findings": [{"code": "check-failed"}], "environments": []}
    said = [block.text for block in _summary(document, "en").blocks]
    assert said[0].startswith("Incomplete: checks that could not finish, or could not see everything they check: 1.")
    assert said[1] == "Problems that stop PyTorch: 1. Warnings: 0. Notes: 2."
    nothing = {**document, "complete": True, "nothing_checked": "no-torch", "environments": [{}]}
    assert "(Python environments without PyTorch: 1)" in _summary(nothing, "en").blocks[0].text
