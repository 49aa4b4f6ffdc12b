"""The words name the command as the program was started: installed with pip or pipx, its help and its advice say
`torch-dll-doctor-cli`, not `python -m app` (which fails outside the project's environment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(sys.executable).parent


def installed(name: str) -> Path:
    script = SCRIPTS / (name + (".exe" if os.name == "nt" else ""))
    if not script.exists():
        pytest.skip(f"{name} is not installed here (pip install -e . installs it)")
    return script


def test_the_installed_command_names_itself_in_its_help_and_its_advice(tmp_path):
    script = installed("torch-dll-doctor-cli")
    env = {**os.environ, "TDD_DATA_DIR": str(tmp_path)}
    shown = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: torch-dll-doctor-cli"), shown.stdout[:200]
    if os.name != "nt":  # off Windows, diagnose without --root advises the demo, in the command's own name
        said = subprocess.run([str(script), "diagnose"], capture_output=True, text=True, env=env, timeout=120)
        assert "torch-dll-doctor-cli diagnose --demo" in said.stderr and "python -m app" not in said.stderr


def test_the_window_that_cannot_open_advises_the_command_it_was_started_as(tmp_path):
    script = installed("torch-dll-doctor")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["TDD_DATA_DIR"] = str(tmp_path)
    said = subprocess.run([str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert said.returncode != 0 and "torch-dll-doctor diagnose --demo" in said.stderr, said.stderr[-500:]


def test_run_as_a_module_it_says_python_m_app():
    shown = subprocess.run([sys.executable, "-m", "app", "--help"], capture_output=True, text=True, timeout=120,
                           cwd=Path(__file__).resolve().parents[2])
    assert shown.stdout.startswith("usage: python -m app")


def test_the_installed_commands_are_the_ones_pyproject_installs():
    import tomllib

    from app.i18n import INSTALLED_COMMANDS

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert set(INSTALLED_COMMANDS) == {*project["scripts"], *project["gui-scripts"]}
