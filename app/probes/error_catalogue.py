"""resources/error_causes.json, read once: the words `explain` says (app/probes/error_text.py) and those that say
whose each DLL is (app/probes/dll_facts.py), with the placeholders a template asks for."""

from __future__ import annotations

import json
import string
from functools import cache

from app.i18n import supported
from app.resources import resources_folder


@cache
def resource() -> dict:
    return json.loads((resources_folder() / "error_causes.json").read_text(encoding="utf-8"))


def facts_catalogue(lang: str) -> dict[str, str]:
    """The "facts" in `lang`: the words that say whose each DLL is."""
    return resource()["facts"][supported(lang)]


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}
