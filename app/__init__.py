"""Torch DLL Doctor: finds out why PyTorch cannot load its DLLs on Windows, and repairs it."""

__version__ = "0.1.0"
