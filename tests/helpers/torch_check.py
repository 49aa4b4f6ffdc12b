"""Whether torch works, asked of a Python: MATMUL, run with `-c`, imports torch and prints 3.0."""

from __future__ import annotations

MATMUL = "import torch; print(float(torch.ones(3) @ torch.ones(3)))"
