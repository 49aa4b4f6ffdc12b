"""The wizard (PySide6). The only layer that imports Qt.

Pages only show (`pages/`), workers only work (`workers.py`: a QRunnable per job on the wizard's own pool,
never touching a widget), and between them sit the session (`session.py`, what the user chose and what was
found) and the item models (`models.py`)."""
