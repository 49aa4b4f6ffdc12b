"""Verify: diagnosis and the live import again, then "PyTorch 2.4.1 loads now" with a green mark, or what still
fails and what to try next."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout

from app.repair.run import unfinished_checks
from app.ui.pages.base import Page, icon_label, wrapped
from app.ui.pages.diagnose import ChecklistPanel, CheckState


class VerifyPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.checklist = ChecklistPanel(self)
        self.checklist.on_done = self._done
        self.mark = icon_label("running", 32)
        self.headline = wrapped(bold=True, name="verdict")
        self.next_steps = wrapped(selectable=True)
        row = QHBoxLayout()
        row.addWidget(self.mark)
        row.addWidget(self.headline, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.next_steps)
        layout.addWidget(self.checklist, 10)
        layout.addStretch(1)  # the words stay at the top when the list is hidden (after an undo)
        self._redrawing = False

    def initializePage(self) -> None:
        self.session.set_verified(None)
        self.set_ready(False)
        self.checklist.start(self.session.env)
        self.retranslate()

    def cleanupPage(self) -> None:
        self.checklist.leave()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """Shown again (Back from Finish, after an undo there): the session's latest truth, not what was drawn."""
        super().showEvent(event)
        if self.checklist.state != CheckState.RUNNING and not self._redrawing:
            self._redrawing = True  # what it redraws may show the page again: once
            try:
                self.retranslate()
            finally:
                self._redrawing = False

    def _after_undo(self) -> bool:
        """The repairs of this session were all undone since this page checked them."""
        return bool(self.session.undone) and not self.session.transactions

    def retranslate(self) -> None:
        self.setTitle(self.tr("Checking PyTorch again"))
        self.setSubTitle(self.tr("The same checks as before, now that the repairs are done."))
        self.checklist.retranslate()
        after = self.session.after
        env = self.session.env
        version = env.torch.version if env is not None and env.torch else "?"
        if after is None:
            self.mark.show_icon("running", 32)
            self.headline.setText(self.tr("Checking…") if self.checklist.state == CheckState.RUNNING else
                                  self.tr("The check did not finish."))
            self.next_steps.setText("")
            return
        left = self.session.blockers(after)
        undone = self._after_undo()
        self.checklist.setVisible(not undone)  # its rows are the check before the undo
        if undone:
            self.setSubTitle(self.tr("The same checks again, after the undo."))
            self.mark.show_icon("problem" if left else "info", 32)
            self.headline.setText(
                self.tr("The repairs were undone. As before them, PyTorch {version} does not load.")
                .format(version=version) if left else
                self.tr("The repairs were undone: everything is back as it was.").format(version=version))
            self.next_steps.setText(self.tr("To repair it again, start the assistant again and choose a repair."))
            return
        if not left and not after.complete:  # nothing seen, but not every check could see: never "loads now"
            self.mark.show_icon("warning", 32)
            self.headline.setText(self.tr("Some checks could not finish, so it is not known yet whether PyTorch "
                                          "{version} loads now.").format(version=version))
            self.next_steps.setText(self.tr(
                "<p>Not finished: {checks}.</p><p>The checks that did finish found nothing still wrong. Check "
                "again in a minute by starting the assistant again: security software scanning the new files can "
                "slow PyTorch's first start. If a check keeps failing, save the report on the next page and share "
                "it.</p>")
                .format(checks=html.escape(unfinished_checks(after, self.session.lang) or "-")))
            return
        if not left:
            self.mark.show_icon("ok", 32)
            live = any(f.code == "import-ok" for f in after.findings)
            self.headline.setText(self.tr("PyTorch {version} loads now.").format(version=version) if live else
                                  self.tr("PyTorch {version} should load now: every file it needs is in place.")
                                  .format(version=version))
            self.next_steps.setText(self.tr("Start your AI app again. If it still fails, save the report on the "
                                            "next page and share it."))
            return
        self.mark.show_icon("problem", 32)
        self.headline.setText(self.tr("PyTorch {version} still does not load.").format(version=version))
        lang = self.session.lang
        titles = "".join(f"<li>{html.escape(p.lead.text(lang).title)}</li>" for p in left)
        self.next_steps.setText(self.tr(
            "<p>Still wrong:</p><ul>{titles}</ul><p>What to try next: start the assistant again and choose "
            "another repair; or make a fresh environment for your AI app (a new venv with "
            "<code>pip install torch</code>); or run PyTorch inside WSL, where these Windows DLLs are not "
            "used.</p>").format(titles=titles))

    def _done(self, diagnosis) -> None:
        self.session.set_verified(diagnosis)
        self.set_ready(True)
        self.retranslate()
