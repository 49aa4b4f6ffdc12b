"""The release's notes and checksums, for .github/workflows/windows.yml (and by hand).

Usage:
    python tools/release_files.py notes CHANGELOG.md OUT.md  the changelog's "## Unreleased" section, no heading
    python tools/release_files.py sums DIR                 DIR/SHA256SUMS of every file in DIR (`sha256sum -c` reads it)
    python tools/release_files.py unpacked EXE DIR         the programs (.exe, .dll, .pyd) a one-file build unpacks into
                                                           %TEMP% at every start, extracted into DIR for `signtool
                                                           verify` (needs PyInstaller, whose archive reader it uses)

Exit 0 done, 1 when the changelog has no "Unreleased" section or it is empty, DIR holds no file, or EXE carries no
program.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HEADING = "## Unreleased"
SUMS = "SHA256SUMS"


def what_changed(changelog: str) -> str:
    """The text under the changelog's "## Unreleased" heading, up to the next heading of that level ("" if none)."""
    lines = changelog.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADING) + 1
    except StopIteration:
        return ""
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]).strip()


def write_sums(folder: Path) -> list[str]:
    """Write folder/SHA256SUMS ("<hex>  <name>", one line per file, by name) and return its lines."""
    lines = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != SUMS):
        digest = hashlib.sha256()
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {path.name}")
    if lines:
        (folder / SUMS).write_bytes(("\n".join(lines) + "\n").encode("ascii"))
    return lines


PROGRAMS = (".exe", ".dll", ".pyd")


def unpacked_programs(exe: Path, folder: Path) -> list[Path]:
    """Extract the program files of one-file build `exe` (its CArchive, as its bootloader reads it) into `folder`,
    each at its path in the bundle; return them. Smart App Control judges each of these as it loads."""
    from PyInstaller.archive.readers import CArchiveReader

    archive = CArchiveReader(str(exe))
    written = []
    for name in sorted(archive.toc):
        if not name.lower().endswith(PROGRAMS):
            continue
        parts = name.replace("\\", "/").split("/")
        if not all(parts) or ".." in parts or ":" in name:  # an archive's name never leaves `folder`
            raise ValueError(f"{exe}: {name!r} is not a path inside the bundle")
        target = folder.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(archive.extract(name))
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "notes":
        notes = what_changed(Path(argv[1]).read_text(encoding="utf-8"))
        if not notes:
            print(f"{argv[1]} has no '{HEADING}' section (or it is empty): write what this release changes",
                  file=sys.stderr)
            return 1
        Path(argv[2]).write_text(notes + "\n", encoding="utf-8")
        return 0
    if len(argv) == 2 and argv[0] == "sums":
        lines = write_sums(Path(argv[1]))
        if not lines:
            print(f"{argv[1]}: no files to sum", file=sys.stderr)
            return 1
        print("\n".join(lines))
        return 0
    if len(argv) == 3 and argv[0] == "unpacked":
        programs = unpacked_programs(Path(argv[1]), Path(argv[2]))
        if not programs:
            print(f"{argv[1]}: no program files in its archive (is it a one-file build?)", file=sys.stderr)
            return 1
        print(f"{len(programs)} program files unpacked into {argv[2]}")
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
