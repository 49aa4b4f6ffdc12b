"""The documents say what the code is: the layer list of docs/design.md is the import contract of pyproject.toml,
in order; every command and option the design's CLI contract and the README name is the parser's; every file a
document or a config names exists."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import tomllib

from app.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CHANGELOG.md",
             ROOT / "pyproject.toml", ROOT / "build_installer.spec"]
NAMED_FILE = re.compile(r"(?<![\w./-])((?:app|tests|resources|tools|benchmarks|docs|packaging|\.ci)/[\w./-]+)")
# Named as something else than a file of this checkout, each with why.
NOT_FILES = {
    "app/_resources": "the package resources/ becomes inside a wheel (pyproject.toml's build step)",
    "packaging/NAME.py": "a pattern: the spec loads its helper modules by name",
    ".ci/pytorch/windows/internal/copy.bat": "a file of pytorch/pytorch, cited",
}


def _contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [name for layer in contract["layers"] for name in re.findall(r"app(?:\.\w+)?", layer)]


def _design_layers(text: str) -> list[str]:
    block = text[text.index("## Layers"):text.index("Repairs are made of")]
    return [("app." + m.group(1)).removesuffix(".py") for m in
            re.finditer(r"(?m)(?:^ {4}|, )app/(\w+(?:\.py)?)", block)]


def test_the_design_lists_the_layers_of_the_import_contract_in_its_order():
    design = _design_layers((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    assert design == _contract_layers()


def test_the_layer_check_sees_a_layer_left_out():
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8").replace("    app/sources/", "    later/")
    assert _design_layers(text) != _contract_layers()


def _commands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _named_commands(text: str) -> list[tuple[str, list[str]]]:
    """Each `python -m app COMMAND ...` line: the command and the options it names."""
    found = []
    for line in re.findall(r"(?m)^ +python -m app (.+)$", text):
        words = line.split()
        if words and not words[0].startswith(("-", "[")):
            found.append((words[0], re.findall(r"(?<![\w-])(--[\w-]+)", line.split("#")[0])))
    return found


def test_every_command_and_option_the_design_and_the_readme_name_is_the_parsers():
    commands = _commands()
    for document in (ROOT / "docs" / "design.md", ROOT / "README.md"):
        named = _named_commands(document.read_text(encoding="utf-8"))
        assert named, document
        for command, options in named:
            assert command in commands, (document.name, command)
            known = {o for a in commands[command]._actions for o in a.option_strings}
            assert set(options) <= known, (document.name, command, set(options) - known)


def test_the_design_names_every_command():
    block = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert set(_commands()) <= {command for command, _ in _named_commands(block)}


def test_every_file_a_document_or_a_config_names_exists():
    missing = {}
    for document in DOCUMENTS:
        for match in NAMED_FILE.finditer(document.read_text(encoding="utf-8")):
            path = match.group(1).rstrip(".,:;)")
            if path not in NOT_FILES and not (ROOT / path).exists() and not list(ROOT.glob(path + "*")):
                missing.setdefault(path, []).append(document.name)
    assert missing == {}
