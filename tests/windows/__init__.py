"""What only Windows itself can show: run natively by the Windows workflow, and in the lab."""
