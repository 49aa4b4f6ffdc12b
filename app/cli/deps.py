"""`deps PATH`: the dependency tree the loader model builds for a DLL, or for every DLL in a folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Optional

from app.cli.base import ExitCode, UsageError, language_for, open_system, typed_environment, typed_path
from app.cli.output import Output
from app.engine.graph import BLOCKING, DependencyGraph
from app.inventory.environment import PythonEnvironment, inspect_environment
from app.inventory.search_context import loader_for
from app.report.tree_text import render_tree
from app.system.base import System

SCHEMA = "torch-dll-doctor.deps/1"
LEVELS_UP = 6  # torch\lib\x.dll -> the venv: four levels; a little more for nested layouts


def environment_around(system: System, path: Path) -> Optional[PythonEnvironment]:
    """The environment that owns a torch\\lib folder or DLL: walk up until one is found."""
    folder = path if path.is_dir() else path.parent
    for candidate in [folder, *list(folder.parents)[:LEVELS_UP]]:
        env = inspect_environment(system, candidate)
        if env is not None:
            return env
    return None


def run(args: argparse.Namespace, output: Output) -> ExitCode:
    system = open_system(args.root)
    target = typed_path(system, args.path)
    env = typed_environment(system, args.env) if args.env else environment_around(system, target)
    graph = DependencyGraph(loader_for(system, env))
    dlls = sorted(p for p in target.iterdir() if p.suffix.lower() in (".dll", ".pyd")) if target.is_dir() else [target]
    if not dlls:
        raise UsageError("error.no_dlls", path=args.path)
    for dll in dlls:
        graph.add_root(dll)
    graph.expand_all()
    if args.json:
        document = {"schema": SCHEMA, **graph.to_dict(system.windows_path)}
        output.document(args.json, json.dumps(document, indent=2, ensure_ascii=False))
    else:
        output.line(render_tree(graph, system.windows_path, language_for(args.lang, *system.display_language())))
    return ExitCode.PROBLEM if any(graph.status(root) in BLOCKING for root in graph.roots) else ExitCode.OK
