"""Images made from the real torch, msvc-runtime and other wheels from PyPI (cached under .cache/)."""
