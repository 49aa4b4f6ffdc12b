"""A Stop while Microsoft's installer runs, asked of a frozen build of the app in the Windows lab: a signed stand-in
vc_redist (tests/standin/) "installs" for 6 s, and the Stop must wait for it, then roll the repair back."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.helpers.lab import wine_unavailable
from tests.winelab import to_windows_path

RUNTIMES_X64 = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes\x64"


def stop_while_microsofts_installer_runs(lab, exe: Path, seed_env: Path, tmp_path: Path, code: int,
                                         by_file: bool = False) -> str:
    """`exe repair --action install-vc-runtime --source` a signed stand-in vc_redist that "installs" for 6 s, Ctrl+C
    one second in: SIGINT to every process running `exe`, or (`by_file`, for a windowed program, which gets no
    Ctrl+C) the file TDD_STOP_FILE names made (app/cli/stop.py). Checks that the Stop waited for the installer, left
    none running, kept its exit code and rolled the repair back. Returns what the program wrote to standard error."""
    from tests.standin import StandinUnavailable, build_standin, sign_standin

    try:
        signed = sign_standin(build_standin(), tmp_path / "Downloads" / "vc_redist.x64.exe")
    except StandinUnavailable as exc:
        wine_unavailable(str(exc))
    trace, data, stop = tmp_path / "standin.trace", tmp_path / "data", tmp_path / "stop"
    variables = {"TDD_DATA_DIR": to_windows_path(data), "TDD_STANDIN_EXIT": str(code), "TDD_STANDIN_SLEEP_MS": "6000",
                 "TDD_STANDIN_TRACE": to_windows_path(trace), "TDD_STOP_FILE": to_windows_path(stop)}
    with lab.started_exe(exe, ["repair", "--env", to_windows_path(seed_env), "--action", "install-vc-runtime",
                               "--source", to_windows_path(signed), "--yes", "--lang", "en"], env=variables) as process:
        deadline = time.monotonic() + 600
        while not trace.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # the installer has started once its trace line is there
        assert trace.exists(), (process.poll(), process.stderr.read()[-3000:] if process.poll() is not None else "")
        time.sleep(1.0)
        ours = lab.processes(exe.name)
        assert ours, "the program is not running"
        if by_file:
            stop.write_text("stop", encoding="utf-8")
        else:
            for pid in ours:
                os.kill(pid, signal.SIGINT)
        asked = time.monotonic()
        out, err = process.communicate(timeout=300)
        waited = time.monotonic() - asked
    assert process.returncode == 1, (process.returncode, out[-2000:], err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert "Stopping" in err and "(Ctrl+C)" in err, (out[-3000:], err[-3000:])
    assert "Microsoft's installer is running" in err, err[-3000:]
    assert "cannot be stopped half way" in err, err[-3000:]  # said while it ran
    assert "The repair was stopped" in err and "Except Microsoft's Visual C++ runtime, now installed (x64 14.44" in err
    assert 3.5 < waited < 120, waited  # it waited for the rest of the 6 s install
    assert trace.read_text(encoding="utf-8").count("run ") == 1
    assert not lab.processes("vc_redist"), "an installer was left running"
    assert not lab.processes(exe.name), "the program was left running"
    assert lab.wine_reg(["query", RUNTIMES_X64, "/v", "Installed"]) == 0, "the installer did not finish"
    (transaction,) = (data / "transactions").iterdir()
    records = [json.loads(line) for line in (transaction / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records[-1]["kind"] == "rolled-back" and not [r for r in records if r["kind"] == "finish"], records[-3:]
    (copied,) = [r["installer_copied"] for r in records if "installer_copied" in r]
    assert copied["from"] == to_windows_path(signed)
    (ran,) = [r["installer_run"] for r in records if "installer_run" in r]  # what it said is kept, stopped or not
    assert ran["tries"] == [code] and ran["stopped"] is True, ran
    restart = "Its installer said Windows must restart to finish it" in err
    assert restart == (code == 3010), err[-3000:]
    return err
