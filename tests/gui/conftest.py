"""The wizard's fixtures: a data folder of the test's own, and windows opened as a user opens them."""

from __future__ import annotations

import pytest

from app.ui.application import new_wizard


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """The journal and the logs in a folder of the test's own (TDD_DATA_DIR); no CA bundle or proxy of the machine.
    Each wizard module uses it for every test (`pytestmark`)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TDD_DATA_DIR", str(folder))
    for name in ("REQUESTS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def open_wizard(qtbot):
    made = []

    def make(**kwargs):
        wizard = new_wizard(lang=kwargs.pop("lang", "en"), **kwargs)
        qtbot.addWidget(wizard)
        wizard.show()
        made.append(wizard)
        return wizard

    yield make
    for wizard in made:  # as Vorta does: every worker is stopped and waited for in teardown
        assert wizard.shutdown(30_000)
        wizard.translations.use("en")  # its translators leave the application with it
