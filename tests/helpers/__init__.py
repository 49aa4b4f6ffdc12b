"""Plain helpers and constants that several test modules use; their shared fixtures are in the conftest.py files."""
