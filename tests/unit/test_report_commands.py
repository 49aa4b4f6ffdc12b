"""The commands a redacted report gives under "To run it" run as they are copied: the profile folder is
%USERPROFILE% (never the redacted C:\\Users\\<user>), which the app takes as the diagnosed computer's own."""

from __future__ import annotations

import shlex

import pytest

from app.main import main


def _commands(text: str) -> list[list[str]]:
    lines = text.splitlines()
    found = []
    for at, line in enumerate(lines):
        if line.strip() in ("To run it:", "运行方法："):
            for command in lines[at + 1:]:
                if not command.startswith("      "):
                    break
                words = [w.strip('"') for w in shlex.split(command.strip(), posix=False)]
                found.append(words[words.index("repair"):])
    return found


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_each_command_copied_out_of_a_redacted_report_runs(data_dir, capsys, lang):
    main(["diagnose", "--demo", "--lang", lang])
    report = capsys.readouterr().out
    commands = _commands(report)
    assert commands and "<user>" in report, report
    for command in commands:
        assert "<user>" not in " ".join(command) and any(w.startswith("%USERPROFILE%\\") for w in command)
        code = main([*command, "--plan"])
        said = capsys.readouterr()
        assert code != 2 and "does not exist" not in said.err + said.out, (command, said)  # the environment is found
        assert code == 0 or "stand-in" in said.err + said.out  # the demo cannot run pip: said as such


@pytest.mark.parametrize("profile", ["%USERPROFILE%", "$env:USERPROFILE", "C:\\Users\\<user>"])
def test_the_profile_as_any_shell_leaves_it_is_the_computers_own(data_dir, capsys, profile):
    env = profile + "\\ComfyUI\\venv\\Scripts\\python.exe"
    assert main(["repair", "--demo", "--env", env, "--action", "place-libomp140", "--plan"]) == 0
    assert main(["repair", "--demo", "--env", profile + "\\NoSuchApp\\venv", "--action", "place-libomp140",
                 "--plan"]) == 2
