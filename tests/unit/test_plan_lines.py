"""A plan's changes in words: each one, or, for thousands of files put back, one line that says how many, where
and how much (an install cut short by the path limit misses 8,000 of torch's files)."""

from __future__ import annotations

from app.repair.plan import Change, Plan
from app.report.plan_lines import SHOWN_ONE_BY_ONE, change_lines

SITE = r"C:\Users\alice\ComfyUI\venv\Lib\site-packages"
WHEEL = "torch-2.4.1-cp312-cp312-win_amd64.whl"


def _restore(count: int) -> Plan:
    folders = [r"torch\include\ATen\ops", r"torch\include\c10\util", r"torch\lib", r"torch\_inductor"]
    changes = [Change("restore-file", f"{SITE}\\{folders[i % 7 % 4]}\\f{i}.h", WHEEL, size=1000)
               for i in range(count)]
    return Plan("restore-torch-files", "index", SITE + r"\..\..\Scripts\python.exe", changes)


def test_a_few_files_are_named_one_by_one():
    lines = change_lines(_restore(3), "en")
    assert len(lines) == 3 and lines[0] == f"Put back {SITE}\\torch\\include\\ATen\\ops\\f0.h, the original file " \
                                           f"from {WHEEL}"


def test_thousands_of_files_are_one_line_how_many_where_and_how_much_in_both_languages():
    plan = _restore(7998)
    plan.changes.append(Change("replace-file", SITE + r"\torch\lib\libomp140.x86_64.dll", "x"))  # another kind: kept
    english, chinese = change_lines(plan, "en"), change_lines(plan, "zh_CN")
    assert len(english) == len(chinese) == 2
    assert english[0].startswith(f"Put back 7998 files of {WHEEL} in 4 folders (8.0 MB), most in {SITE}\\torch\\")
    assert english[0].count("(2285)") == 3 and "(1143)" not in english[0]  # the three folders with most files
    assert chinese[0].startswith(f"放回来自 {WHEEL} 的 7998 个文件，分布在 4 个文件夹中（共 8.0 MB）")
    assert len(change_lines(_restore(SHOWN_ONE_BY_ONE), "en")) == SHOWN_ONE_BY_ONE
    assert len(change_lines(_restore(SHOWN_ONE_BY_ONE + 1), "en")) == 1
