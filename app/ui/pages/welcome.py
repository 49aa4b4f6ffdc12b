"""Welcome: what the app does, the language, a box for the error the user saw, and a repair a crash left
unfinished (offered for rollback)."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout

from app.failures import failure_text
from app.probes.error_text import classify_error, printable
from app.repair.journal import Transaction
from app.repair.names import repair_name
from app.ui.history import earlier_repairs
from app.ui.pages.base import Page, button, card, icon_label, local_when, named, sentences, wrapped
from app.ui.repair_run import UndoResult, undo_transactions
from app.ui.workers import LatestRun

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
        self.language_label = QLabel()  # one line: a form's label that wraps is cut (语言(L): on a Chinese desktop)
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
        self.keep = button("keep")
        self.keep.clicked.connect(self._keep)
        row = QHBoxLayout(self.unfinished)
        row.addWidget(icon_label("warning"))
        row.addWidget(self.unfinished_text, 1)
        row.addWidget(self.rollback)
        row.addWidget(self.keep)
        self.unfinished.hide()
        self._make_earlier()
        self._unfinished: list[Transaction] = []
        self._running: list[Transaction] = []
        self._rollback_result: UndoResult | None = None
        self._left: list[Transaction] = []
        self.reading = LatestRun()  # the journal, read again after a rollback: only the newest answer is shown

        form = QFormLayout()
        form.addRow(self.language_label, self.language)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.promise)
        layout.addLayout(form)
        layout.addWidget(self.unfinished)
        layout.addWidget(self.earlier)
        layout.addWidget(self.paste_label)
        layout.addWidget(self.paste)
        layout.addWidget(self.explanation)
        layout.addStretch(1)
        self.set_ready(True)

    def _make_earlier(self) -> None:
        """The repairs recorded on this computer: each can be seen, and undone, on the Earlier repairs page."""
        self.earlier = card()
        self.earlier_text = wrapped(name="earlier-repairs")
        self.see_earlier = button("see-earlier")
        self.see_earlier.clicked.connect(lambda: self.doctor.open_history())
        row = QHBoxLayout(self.earlier)
        row.addWidget(self.earlier_text, 1)
        row.addWidget(self.see_earlier)
        self.earlier.hide()
        self._earlier: list = []

    def initializePage(self) -> None:
        self._look_at_journal()
        self.retranslate()

    def _look_at_journal(self, keep: tuple[Transaction, ...] = ()) -> None:
        """Read the journal in a worker (it is files, and another window may hold them); with `keep`, first
        record those transactions as kept."""
        journal, system = self.session.journal, self.session.system

        def read(worker) -> tuple[list[Transaction], list[Transaction], list]:
            for transaction in keep:
                transaction.keep()
            return journal.unfinished(), journal.running(), earlier_repairs(journal, system)

        doing = (self.tr("The choice to keep it could not be recorded. Try again, or go on: nothing was changed.")
                 if keep else
                 self.tr("The record of earlier repairs could not be read. Go on: the checks work all the same."))
        self.reading.start(self.doctor.pool, read, returned=self._journal_read,
                           errored=lambda error: self._journal_failed(error, doing))

    def _journal_read(self, found: tuple[list[Transaction], list[Transaction], list]) -> None:
        self._unfinished, self._running, self._earlier = found
        self.earlier.setVisible(bool(self._earlier))
        self._show_earlier()
        self.keep.setEnabled(True)
        self.unfinished.setVisible(bool(self._unfinished or self._running or self._rollback_result))
        self._show_unfinished()

    def _journal_failed(self, error: BaseException, doing: str) -> None:
        self.keep.setEnabled(True)
        self._show_unfinished()
        self.doctor.show_failure(error, doing)

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
        named(self.keep, self.tr("&Keep it as it is"), self.tr("Leave the unfinished repair as it is and stop "
                                                             "offering to roll it back"))
        named(self.see_earlier, self.tr("See &earlier repairs"), self.tr("See the earlier repairs, and undo one"))
        self._show_unfinished()
        self._show_earlier()
        self._show_cause()

    def _show_earlier(self) -> None:
        in_place = sum(1 for repair in self._earlier if repair.in_place)
        self.earlier_text.setText(
            sentences(self.tr("%n repair(s) were made here before.", "", len(self._earlier)),
                      self.tr("%n of them still in place: each can be undone.", "", in_place)))

    # -- language ---------------------------------------------------------------------------------------
    def _language_chosen(self) -> None:
        self.doctor.set_language(self.language.currentData())

    # -- the pasted error ---------------------------------------------------------------------------------
    def _explain(self) -> None:
        text = self.paste.toPlainText()
        self.session.set_pasted_error(text)
        if not printable(text).strip():
            self._cause = None
            self._show_cause()
            return
        self.doctor.pool.start(lambda worker: classify_error(text), returned=self._explained, doing=self.tr(
            "The error message could not be explained here. Go on: the checks find the cause all the same."))

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
        first = self._unfinished[0] if self._unfinished else None
        stop = first.stopped if first is not None else None
        final = first is not None and first.stop_is_final
        self.rollback.setVisible(first is not None and not final)
        self.keep.setVisible(first is not None and final)
        self.rollback.setEnabled(not self._running)
        texts = []
        result = self._rollback_result
        if result is not None and result.complete and self._left:  # words for each one, as the journal says
            names = "; ".join(f"“{repair_name(t.begin.get('action', ''), self.session.lang)}” "
                              f"({local_when(t.begin.get('created'))})" for t in self._left)
            texts.append(self.tr("The interrupted repair was rolled back: the files and settings it changed are as "
                                 "they were before. Not put back: {names}, whose undo stopped earlier and stays as "
                                 "it left things.").format(names=names))
        elif result is not None and result.complete and result.left_installed:
            texts.append(self.tr("The unfinished repair was rolled back: the files and settings it changed are as "
                                 "they were before, except Microsoft's Visual C++ runtime, now installed "
                                 "({runtimes}): it stays because other programs share it.").format(
                                     runtimes=", ".join(result.left_installed)))
        elif result is not None and result.complete:
            texts.append(self.tr("The unfinished repair was rolled back: every file and setting is as it was "
                                 "before."))
        elif result is not None:
            texts.append(self.tr("The unfinished repair could not be rolled back completely: {reason}").format(
                reason=failure_text(result.error, self.session.lang, "cli.undo.failed")))
        if self._running:
            texts.append(self.tr("A repair is running in another window right now. Wait until it has finished "
                                 "before you repair anything here."))
        if first is not None and result is None:
            name = repair_name(first.begin.get("action", ""), self.session.lang)
            when = local_when(first.begin.get("created"))
            if stop is None:
                texts.append(self.tr("A repair did not finish: “{name}”, started {when}. The assistant or the "
                                     "computer stopped before it was done. Roll it back to put every file and "
                                     "setting as it was.").format(name=name, when=when))
            elif final:
                texts.append(self.tr("Undoing “{name}” (started {when}) could not put everything back: {reason} "
                                     "Nothing more can be put back by the assistant; keep it as it is, or put it "
                                     "right by hand.").format(
                                         name=name, when=when, reason=self._stop_words(first)))
            else:
                texts.append(self.tr("Undoing “{name}” (started {when}) could not finish: {reason} Close the "
                                     "programs that use PyTorch, then roll it back again.").format(
                                         name=name, when=when, reason=self._stop_words(first)))
        self.unfinished_text.setText("\n\n".join(texts))

    def _stop_words(self, transaction: Transaction) -> str:
        from app.repair.journal import RollbackStopped

        stop = dict(transaction.stopped or {})
        code = stop.pop("code", "refused")
        for key in ("kind", "at", "step"):
            stop.pop(key, None)
        return failure_text(RollbackStopped(code, **stop), self.session.lang)

    def _roll_back(self) -> None:
        self.rollback.setEnabled(False)
        transactions = [t for t in self._unfinished if not t.stop_is_final]
        owner = self.session.owner_window  # the wizard's window, for an undo's permission prompt
        self._left = [t for t in self._unfinished if t.stop_is_final]  # not rolled back: said after, never hidden
        self.doctor.pool.start(lambda worker: undo_transactions(transactions, owner), returned=self._rolled_back,
                               errored=lambda error: self._rolled_back(UndoResult(error=error)))

    def _rolled_back(self, result: UndoResult) -> None:
        self._rollback_result = result
        self.session.changed_the_computer()  # what was found and checked before the rollback is not taken
        self.doctor.head_start()  # the environments are found again, and checked, while Welcome is read
        self._unfinished = []  # what was just undone is not offered again while the journal is read anew
        self._show_unfinished()
        self._look_at_journal()  # Roll back is enabled again once it has been read

    def _keep(self) -> None:
        self.keep.setEnabled(False)
        self._look_at_journal(keep=tuple(t for t in self._unfinished if t.stop_is_final))


def _html(text: str) -> str:
    import html

    return html.escape(printable(text)).replace("\n", "<br>")
