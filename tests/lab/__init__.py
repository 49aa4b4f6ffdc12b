"""The Windows lab: real Windows CPython, torch and PyInstaller under Wine (marker `wine`)."""
