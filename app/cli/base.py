"""What every command shares: the exit codes, a usage error, the computer it looks at, its language, and the
paths the user typed."""

from __future__ import annotations

import os
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from app.i18n import language_for, words  # noqa: F401 - language_for: every command asks here

if TYPE_CHECKING:  # imported by the functions that use them: `explain` and `history` never wait for them
    from app.inventory.environment import PythonEnvironment
    from app.system.base import System


class ExitCode(IntEnum):
    """The process's exit status (docs/design.md, "CLI contract")."""

    OK = 0  # no blocker and every check ran; repaired; undone; shown
    PROBLEM = 1  # a blocker, a check that could not finish, or a repair or undo refused, failed or not done
    ERROR = 2  # usage or internal error, with one line on standard error
    NOTHING = 3  # nothing to check: no Windows in the folder given, no Python with PyTorch found


class UsageError(Exception):
    """A problem with what the user typed: one line on stderr, in their language (ui_text.json `key`), exit 2."""

    def __init__(self, key: str, **values: object) -> None:
        super().__init__(key)
        self.key, self.values = key, values

    def text(self, lang: str) -> str:
        return words(self.key, lang, **self.values)


class NotWritten(UsageError):
    """A file the user asked for (`--json FILE`, `--report FILE`) that could not be written: denied, a full disk, a
    locked file. Said in words, with what the command did before (it stands); exit 2. No half-written file stays:
    it is written beside and takes its name only when whole."""

    def __init__(self, path: str, error: OSError) -> None:
        super().__init__("error.output_not_written", path=path)
        self.error = error

    def text(self, lang: str) -> str:
        from app.failures import os_error_words

        return words(self.key, lang, path=self.values["path"], reason=os_error_words(self.error, lang))


def open_system(root: Optional[str]) -> System:
    """The copied Windows drive at `root`, else this Windows computer."""
    if root:
        from app.system.offline import OfflineImage

        try:
            if Path(root).exists() and not Path(root).is_dir():
                raise UsageError("error.image_is_file", path=root)
            if not Path(root).is_dir():
                raise UsageError("error.no_image", path=root)
            return OfflineImage(Path(root))
        except (OSError, UnicodeError) as exc:  # a path longer than the file system takes (errno 36)
            shown = ascii(root[:120])[1:-1] + ("..." if len(root) > 120 else "")
            raise UsageError("error.image_unopened", path=shown) from exc
    if os.name == "nt":
        from app.system.live import LiveWindows

        return LiveWindows()
    raise UsageError("error.not_windows")


def typed_path(system: System, typed: str) -> Path:
    """A path the user typed, on this machine (app/system/typed_path.py has the rule); a usage error if absent."""
    from app.system.typed_path import resolve_typed_path

    path = resolve_typed_path(system, typed)
    if path is None:
        raise UsageError("error.no_such_path", path=typed)
    return path


def typed_environment(system: System, typed: str) -> PythonEnvironment:
    """The Python environment at a typed folder or python.exe; a usage error if there is none."""
    from app.inventory.environment import inspect_environment

    env = inspect_environment(system, typed_path(system, typed))
    if env is None:
        raise UsageError("error.no_python", path=typed)
    return env


def machine_filter(root: Optional[str], demo: bool = False) -> Optional[dict]:
    """The journal's name for the copied drive at `root` (or the demo computer); None (every computer) without it."""
    from app.system.identity import machine_of

    return machine_of(open_system(str(demo_computer()) if demo else root)) if root or demo else None


def demo_computer() -> Path:
    """The demo computer of the command line: built once in the app's data folder, and kept as the repairs left
    it, so that `repair --demo`, `diagnose --demo` and `undo --demo` act on the same one, as on a real PC."""
    from app.data_folder import data_folder
    from app.demo.computer import build_demo_image

    root = data_folder() / "demo-computer"
    if not (root / "registry.json").is_file():
        build_demo_image(root)
    return root


def warn_unfinished(journal, lang: str, output) -> None:
    """A repair cut short by a crash is found at the next start, and its undo command is shown."""
    for transaction in journal.unfinished():
        begin = transaction.begin
        output.note(words("cli.repair.unfinished", lang, id=transaction.id, action=begin.get("action"),
                          created=begin.get("created")))
