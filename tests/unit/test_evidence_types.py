"""The typed evidence of app/probes/evidence.py: the one way another layer reads what a finding found."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path

import pytest

from app.probes.evidence import BY_CODE, TYPES, CompanionMismatch, SettingVariable, TorchShadowed, VcRuntimeCopy
from app.probes.finding import INFO, WARNING, Finding

APP = Path(__file__).resolve().parents[2] / "app"


def evidence_reads(tree: ast.AST) -> list[int]:
    """Lines where a finding's evidence is read by key: `x.evidence[...]` or `x.evidence.get(...)`."""
    def by_key(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            return isinstance(node.value, ast.Attribute) and node.value.attr == "evidence"
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "evidence")

    return sorted(node.lineno for node in ast.walk(tree) if by_key(node))


def test_outside_the_probes_no_module_reads_evidence_by_key():
    found = {str(p.relative_to(APP.parent)): evidence_reads(ast.parse(p.read_text(encoding="utf-8")))
             for p in APP.rglob("*.py") if "probes" not in p.relative_to(APP).parts}
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_the_check_finds_a_read_by_key():
    assert evidence_reads(ast.parse('a = f.evidence.get("dll")\nb = f.evidence["path"]\n')) == [1, 2]


def test_each_code_has_one_type_and_words_in_the_catalogue():
    catalogue = json.loads((APP.parent / "resources" / "findings.json").read_text(encoding="utf-8"))
    codes = [code for kind in TYPES for code in kind.CODES]
    assert len(codes) == len(set(codes)) == len(BY_CODE)
    assert [c for c in codes if not any(k == c or k.startswith(c + "@") for k in catalogue)] == []


def test_every_field_is_a_key_some_probe_writes():
    """A reader never waits for a key no probe writes (it would always get the default)."""
    probes = "".join(p.read_text(encoding="utf-8") for p in (APP / "probes").rglob("*.py") if p.name != "evidence.py")
    unwritten = [f"{kind.__name__}.{f.name}" for kind in TYPES for f in fields(kind) if f'"{f.name}"' not in probes]
    assert unwritten == []
    assert all(set(kind.REQUIRED) <= {f.name for f in fields(kind)} for kind in TYPES)


def test_of_reads_the_fields_and_gives_the_default_for_what_is_absent_or_none():
    finding = Finding("companion-mismatch", WARNING, {"package": "torchvision", "version": "0.19.0", "fits": None,
                                                      "extensions": ["_C.pyd"], "other": 1})
    companion = CompanionMismatch.of(finding)
    assert (companion.package, companion.version, companion.fits, companion.extensions) == (
        "torchvision", "0.19.0", None, ["_C.pyd"])
    assert TorchShadowed.of(Finding("torch-shadowed", WARNING, {})).program_list is None


def test_of_refuses_a_finding_of_another_code():
    with pytest.raises(TypeError, match="a python-home-set finding has no VcRuntimeCopy evidence"):
        VcRuntimeCopy.of(Finding("python-home-set", WARNING, {"variable": "PYTHONHOME"}))
    assert SettingVariable.of(Finding("python-home-set", WARNING, {"variable": "PYTHONHOME"})).variable == "PYTHONHOME"


def test_a_finding_without_what_its_readers_rely_on_is_not_made():
    with pytest.raises(ValueError, match="lacks found"):
        Finding("vc-runtime-too-old", "blocker", {"needed": "14.40"})
    with pytest.raises(ValueError, match="lacks entry"):
        Finding("path-dead-entry", INFO, {"entry": None})
    Finding("path-dead-entry", INFO, {"entry": r"C:\gone"})
