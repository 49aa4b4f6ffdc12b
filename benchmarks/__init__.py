def save_results(path: str, report: object) -> None:
    """Write a benchmark's figures as JSON (benchmarks/results/*.json by default)."""
    import json
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
