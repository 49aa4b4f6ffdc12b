"""LiveWindows.verify_signature for real: WinVerifyTrust through ctypes, run by Windows CPython under Wine.

What Wine 8 can prove here: that our ctypes call is right (structures, GUID, state open/close), that a changed
byte gives TRUST_E_BAD_DIGEST and an unsigned file TRUST_E_NOSIGNATURE, and that the signer's name comes out
of WinVerifyTrust's state. What it cannot: Windows' chain policy. Wine's "trusted" (0) is not proof that
Windows would trust the root, so the untrusted case is only recorded, not asserted as Windows' answer.
"""

from __future__ import annotations

import contextlib
import json
import shutil

import pytest

from tests.helpers.signed_files import SIGNERS, genuine_files, self_signed_copy, tampered_copy
from tests.winelab import REPO_ROOT, to_windows_path

pytestmark = [pytest.mark.wine, pytest.mark.wheels, pytest.mark.slow]

SCRIPT = r"""
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from app.system.live import LiveWindows
system = LiveWindows()
out = {{}}
for name, path in json.loads(sys.stdin.read()).items():
    check = system.verify_signature(Path(path))
    out[name] = [check.status, check.signer, check.detail]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def lab_results(lab, tmp_path_factory):
    """Every case checked by one Windows Python run: {case: [status, signer, detail]}."""
    folder = tmp_path_factory.mktemp("signatures")
    files = genuine_files()
    cases = {}
    for key, source in files.items():
        genuine = folder / "genuine" / key
        genuine.parent.mkdir(exist_ok=True)
        shutil.copyfile(source, genuine)
        cases["genuine:" + key] = genuine
        if key in SIGNERS:
            (folder / "tampered").mkdir(exist_ok=True)
            cases["tampered:" + key] = tampered_copy(source, folder / "tampered" / key)
    with contextlib.suppress(pytest.skip.Exception):  # no osslsigncode: that one case is skipped below
        cases["self-signed"] = self_signed_copy(files["fbgemm.dll"].parent / "shm.dll", folder)
    argument = json.dumps(  # through stdin: quotes in a Wine command line do not survive
        {name: to_windows_path(path) for name, path in cases.items()})
    result = lab.run_python(["-c", SCRIPT.format(repo=to_windows_path(REPO_ROOT))], input=argument, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("key", sorted(SIGNERS))
def test_windows_trusts_the_genuine_file_and_names_its_signer(lab_results, key):
    status, signer, detail = lab_results["genuine:" + key]
    assert (status, signer) == ("trusted", SIGNERS[key]), detail
    assert detail.startswith("WinVerifyTrust: 0x00000000")


@pytest.mark.parametrize("key", sorted(SIGNERS))
def test_windows_reports_one_changed_byte_as_a_bad_digest(lab_results, key):
    status, _signer, detail = lab_results["tampered:" + key]
    assert status == "bad-digest", detail
    assert "0x80096010" in detail


def test_windows_reports_torch_fbgemm_as_not_signed(lab_results):
    status, signer, detail = lab_results["genuine:fbgemm.dll"]
    assert (status, signer) == ("not-signed", None)
    assert "0x800B0100" in detail


def test_wine_does_not_check_the_root_of_a_self_signed_file(lab_results):
    """Measured: Wine 8's WinVerifyTrust returns 0 for a file signed by a certificate made a moment ago (Windows
    answers CERT_E_UNTRUSTEDROOT, 0x800B0109). So the lab proves our call and the digest check, never the root
    policy. If this starts failing, Wine has learned to check roots: expect "untrusted" here instead."""
    if "self-signed" not in lab_results:
        pytest.skip("osslsigncode / openssl are not installed")
    status, signer, detail = lab_results["self-signed"]
    assert signer == "Microsoft Corporation"  # a name anyone can put in a certificate: trust decides, not names
    assert status == "trusted", detail
