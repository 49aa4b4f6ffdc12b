"""Which running programs have a file loaded: a DLL in torch\\lib that a running ComfyUI holds cannot be replaced
(Windows refuses), and must not be changed under it. Named so the user can close them: "python.exe, process 4120"."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional


def _key(path: Path) -> str:
    return os.path.normcase(os.path.abspath(path))


def processes_using(paths: Iterable[Path]) -> Optional[list[dict]]:
    """[{"pid", "name", "exe", "files"}] of every process that has one of `paths`, or a DLL in their folders,
    loaded or mapped. Processes we may not look into are skipped (they are not the user's own). None when the
    processes cannot be listed at all (Wine): then Windows' own refusal to replace a loaded DLL is the guard,
    and the journal rolls the repair back."""
    import psutil

    try:
        processes = list(psutil.process_iter(["pid", "name", "exe"]))
    except (psutil.Error, OSError):
        return None

    wanted = {_key(p) for p in paths}
    folders = {os.path.dirname(k) for k in wanted}
    holders = []
    for process in processes:
        if process.info["pid"] == os.getpid():
            continue
        try:
            maps = process.memory_maps(grouped=True)
        except (psutil.Error, OSError, NotImplementedError):
            continue
        files = sorted({m.path for m in maps if m.path and (_key(Path(m.path)) in wanted or (
            os.path.dirname(_key(Path(m.path))) in folders and m.path.lower().endswith((".dll", ".pyd"))))})
        if files:
            holders.append({"pid": process.info["pid"], "name": process.info["name"], "exe": process.info["exe"],
                            "files": files})
    return holders
