"""The command line. `python -m app deps PATH [--root DIR] [--env PATH] [--json FILE|-]` (DESIGN.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from app import __version__
from app.core.cancel import Cancelled
from app.core.context import loader_for
from app.core.environment import PythonEnvironment, inspect_environment
from app.core.graph import BLOCKING, DependencyGraph
from app.core.tree_text import render_tree
from app.system.base import System
from app.system.offline import OfflineImage

DEPS_SCHEMA = "torch-dll-doctor.deps/1"


class UsageError(Exception):
    """A problem with what the user typed; shown as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app", description="Torch DLL Doctor: find out why PyTorch cannot load its DLLs on Windows.")
    parser.add_argument("--version", action="version", version=f"Torch DLL Doctor {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    deps = commands.add_parser("deps", help="show the dependency tree of a DLL, or of every DLL in a folder")
    deps.add_argument("path", help="a DLL, or a folder of DLLs such as torch\\lib")
    deps.add_argument("--root", metavar="DIR", help="analyse a copied Windows drive (an offline image) at DIR")
    deps.add_argument("--env", metavar="PATH", help="the Python environment (folder or python.exe) that loads it")
    deps.add_argument("--json", metavar="FILE", help="write JSON to FILE, or to standard output with -")
    return parser


def open_system(root: Optional[str]) -> System:
    if root:
        if not Path(root).is_dir():
            raise UsageError(f"the image folder does not exist: {root}")
        return OfflineImage(Path(root))
    if os.name == "nt":
        raise UsageError("reading the live Windows machine is not available yet; give --root DIR")
    raise UsageError("this is not Windows: give --root DIR, a copied Windows drive (or try --demo)")


def _host(system: System, text: str) -> Path:
    """A path as typed: a file on this machine, or a Windows path inside the image."""
    path = Path(text)
    if not path.exists():
        inside = system.host_path(text)
        if inside is not None and inside.exists():
            return inside
    if not path.exists():
        raise UsageError(f"no such file or folder: {text}")
    return path


def _environment_around(system: System, path: Path) -> Optional[PythonEnvironment]:
    """The environment that owns a torch\\lib folder or DLL: walk up until one is found (six levels at most)."""
    folder = path if path.is_dir() else path.parent
    for candidate in [folder, *list(folder.parents)[:6]]:
        env = inspect_environment(system, candidate)
        if env is not None:
            return env
    return None


def run_deps(args: argparse.Namespace) -> int:
    system = open_system(args.root)
    target = _host(system, args.path)
    if args.env:
        env = inspect_environment(system, _host(system, args.env))
        if env is None:
            raise UsageError(f"no python.exe found in {args.env}")
    else:
        env = _environment_around(system, target)
    graph = DependencyGraph(loader_for(system, env))
    dlls = sorted(p for p in target.iterdir() if p.suffix.lower() in (".dll", ".pyd")) if target.is_dir() else [target]
    if not dlls:
        raise UsageError(f"no DLL files in {args.path}")
    for dll in dlls:
        graph.add_root(dll)
    graph.expand_all()
    if args.json:
        document = {"schema": DEPS_SCHEMA, **graph.to_dict(system.windows_path)}
        _write(args.json, json.dumps(document, indent=2, ensure_ascii=False))
    else:
        _write("-", render_tree(graph, system.windows_path))
    return 1 if any(graph.status(root) in BLOCKING for root in graph.roots) else 0


def _write(destination: str, text: str) -> None:
    if destination == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(destination).write_text(text + "\n", encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if sys.stdout and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        if args.command == "deps":
            return run_deps(args)
        parser.print_help()
        return 2
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Cancelled:
        print("stopped: cancelled", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the contract: one line, exit 2, never a traceback
        print(f"internal error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return 2
