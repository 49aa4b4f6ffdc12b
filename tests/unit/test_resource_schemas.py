"""Every data file in resources/ has a schema (resources/schemas/<name>.schema.json) and keeps to it: a wrong key,
a missing language or a download without https is caught here, not by a user."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
DATA = sorted(RESOURCES.glob("*.json"))


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((RESOURCES / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _errors(name: str, data: object) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in _validator(name).iter_errors(data)]


def test_every_data_file_has_a_schema_and_every_schema_a_data_file():
    schemas = {p.name.removesuffix(".schema.json") for p in (RESOURCES / "schemas").glob("*.schema.json")}
    assert {p.stem for p in DATA} == schemas and len(schemas) >= 9


@pytest.mark.parametrize("path", DATA, ids=lambda p: p.stem)
def test_the_data_keeps_to_its_schema(path):
    assert _errors(path.stem, json.loads(path.read_text(encoding="utf-8"))) == []


def _load(name: str) -> dict:
    return json.loads((RESOURCES / f"{name}.json").read_text(encoding="utf-8"))


def test_the_schemas_catch_what_would_reach_a_user():
    findings = copy.deepcopy(_load("findings"))
    del findings["unknown"]["zh_CN"]  # a finding with no Chinese words
    assert any("zh_CN" in e for e in _errors("findings", findings))
    catalog = copy.deepcopy(_load("catalog"))
    catalog["vc_redist"]["x64"]["url"] = "http://aka.ms/vs/17/release/vc_redist.x64.exe"  # not https
    assert _errors("catalog", catalog)
    catalog = copy.deepcopy(_load("catalog"))
    catalog["intel_openmp"]["member_sha256"] = "not a hash"
    assert _errors("catalog", catalog)
    launchers = copy.deepcopy(_load("launchers"))
    launchers["launchers"][0]["source"] = []  # a layout with no source read
    assert _errors("launchers", launchers)
    apps = copy.deepcopy(_load("ai_apps"))
    apps["apps"][0]["pythn"] = ["venv"]  # a misspelt key, which the loaders would never read
    assert _errors("ai_apps", apps)
    text = copy.deepcopy(_load("ui_text"))
    text["repair.cancelled"] = {"en": "Stopped."}
    assert _errors("ui_text", text)
