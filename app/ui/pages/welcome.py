"""Welcome: what the app does, the language, a box for the error the user saw, and a repair a crash left
unfinished (offered for rollback)."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QPlainTextEdit, QVBoxLayout

from app.probes.error_text import classify_error, printable
from app.repair.run import undo
from app.ui.pages.base import Page, button, card, icon_label, named, wrapped

LANGUAGE_NAMES = (("en", "English"), ("zh_CN", "简体中文"))  # each in its own language, never translated


class WelcomePage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.intro = wrapped()
        self.promise = wrapped()
        self.language = QComboBox()
        for code, name in LANGUAGE_NAMES:
            self.language.addItem(name, code)
        self.language.currentIndexChanged.connect(self._language_chosen)
        self.language_label = wrapped()
        self.language_label.setBuddy(self.language)
        self.paste_label = wrapped()
        self.paste = QPlainTextEdit()
        self.paste.setTabChangesFocus(True)
        self.paste.setMaximumHeight(90)
        self.paste_label.setBuddy(self.paste)
        self.paste.textChanged.connect(lambda: self._debounce.start())
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(self._explain)
        self.explanation = wrapped(selectable=True, name="explanation")
        self.explanation.hide()
        self._cause = None

        self.unfinished = card()
        self.unfinished_text = wrapped()
        self.rollback = button("rollback")
        self.rollback.clicked.connect(self._roll_back)
        row = QHBoxLayout(self.unfinished)
        row.addWidget(icon_label("warning"))
        row.addWidget(self.unfinished_text, 1)
        row.addWidget(self.rollback)
        self.unfinished.hide()
        self._unfinished = []
        self._rollback_result = None

        form = QFormLayout()
        form.addRow(self.language_label, self.language)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.promise)
        layout.addLayout(form)
        layout.addWidget(self.unfinished)
        layout.addWidget(self.paste_label)
        layout.addWidget(self.paste)
        layout.addWidget(self.explanation)
        layout.addStretch(1)
        self.set_ready(True)

    def initializePage(self) -> None:
        self._unfinished = self.session.journal.unfinished()
        self.unfinished.setVisible(bool(self._unfinished))
        self.retranslate()

    def retranslate(self) -> None:
        self.language.blockSignals(True)  # the language may have been switched elsewhere
        self.language.setCurrentIndex([c for c, _ in LANGUAGE_NAMES].index(self.session.lang))
        self.language.blockSignals(False)
        self.setTitle(self.tr("Welcome to Torch DLL Doctor"))
        self.setSubTitle(self.tr("Find out why PyTorch does not start on this computer, and fix it."))
        self.intro.setText(self.tr(
            "When PyTorch stops with an error such as “WinError 126 … fbgemm.dll”, a file it needs is missing or "
            "wrong. This assistant finds your Python installations, checks each file PyTorch loads, and tells "
            "you in plain words what is wrong."))
        self.promise.setText(self.tr(
            "Nothing on your computer changes unless you agree. Every change is recorded and can be undone."))
        self.language_label.setText(self.tr("&Language:"))
        self.language.setAccessibleName(self.tr("Language"))
        self.paste_label.setText(self.tr("&Optional: paste the error message you saw, and we explain it at once:"))
        self.paste.setPlaceholderText(self.tr("For example: OSError: [WinError 126] … Error loading "
                                              "“…\\torch\\lib\\fbgemm.dll” or one of its dependencies."))
        self.paste.setAccessibleName(self.tr("The error message you saw"))
        named(self.rollback, self.tr("&Roll back now"), self.tr("Roll back the unfinished repair"))
        self._show_unfinished()
        self._show_cause()

    # -- language ---------------------------------------------------------------------------------------
    def _language_chosen(self) -> None:
        self.doctor.set_language(self.language.currentData())

    # -- the pasted error ---------------------------------------------------------------------------------
    def _explain(self) -> None:
        text = self.paste.toPlainText()
        self.session.pasted_error = text
        if not printable(text).strip():
            self._cause = None
            self._show_cause()
            return
        self.doctor.pool.start(lambda worker: classify_error(text), returned=self._explained)

    def _explained(self, cause) -> None:
        if self.paste.toPlainText() == self.session.pasted_error:  # the newest text only
            self._cause = cause
            self._show_cause()

    def _show_cause(self) -> None:
        if self._cause is None:
            self.explanation.hide()
            return
        text = self._cause.text(self.session.lang)
        self.explanation.setText(self.tr("<b>{title}</b><br>This usually means: {explanation}<br>What helps: "
                                         "{action}").format(title=_html(text["title"]),
                                                            explanation=_html(text["explanation"]),
                                                            action=_html(text["action"])))
        self.explanation.show()

    # -- a repair a crash left unfinished -----------------------------------------------------------------
    def _show_unfinished(self) -> None:
        if self._rollback_result is not None:
            self.unfinished_text.setText(
                self.tr("The unfinished repair was rolled back: every file and setting is as it was before.")
                if self._rollback_result is True else
                self.tr("The unfinished repair could not be rolled back: {error}").format(error=self._rollback_result))
            return
        if self._unfinished:
            begin = self._unfinished[0].begin
            self.unfinished_text.setText(self.tr(
                "A repair ({action}, started {created}) did not finish: the app or the computer stopped in the "
                "middle. Roll it back to put everything as it was.").format(
                    action=begin.get("action"), created=begin.get("created")))

    def _roll_back(self) -> None:
        self.rollback.setEnabled(False)
        transactions = list(self._unfinished)

        def work(worker):
            for transaction in transactions:
                undo(transaction)
            return True

        self.doctor.pool.start(work, returned=self._rolled_back, errored=self._rolled_back)

    def _rolled_back(self, result) -> None:
        self._rollback_result = True if result is True else str(result)
        self._unfinished = self.session.journal.unfinished()
        self.rollback.setVisible(bool(self._unfinished))
        self.rollback.setEnabled(True)
        self._show_unfinished()


def _html(text: str) -> str:
    import html

    return html.escape(printable(text)).replace("\n", "<br>")
