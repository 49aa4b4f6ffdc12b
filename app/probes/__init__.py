"""Probes: one module per question asked of a machine or an environment; each yields Findings. The package
imports nothing itself (`explain` needs only error_text.py): every_probe.py lists them all."""
