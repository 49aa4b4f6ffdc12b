"""Where files come from, and nothing else: the one downloader (HTTPS only, resumed, verified), members of a
remote wheel by HTTP ranges, the user's own pip settings (index, mirror, certificate), Intel's OpenMP runtime from
that index, Microsoft's Visual C++ installer and its check, and the sources of an installed wheel's originals.
A reader of app/repair (plans, the journal, rollbacks) never scrolls past HTTP ranges; a reader here never meets a
rollback."""
