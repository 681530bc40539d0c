"""Building `Report` records, and validating their JSON against the versioned schema."""

from __future__ import annotations

import json
import platform
from pathlib import Path

from diagnose import __version__
from diagnose.records import Candidate, Report, Verdict
from diagnose.task import Task

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")


def environment() -> tuple[tuple[str, str], ...]:
    return (("diagnose", __version__), ("host_python", platform.python_version()), ("host", platform.node()))


def check_report(task: Task, verdict: Verdict, target: str = "-") -> Report:
    """The report of `diagnose check`: one candidate, the `ModelNew` as given."""
    given = Candidate(id="given", source=task.candidate_path.read_text(), diff="", made_by=("given",))
    return Report(
        task=str(task.reference_path),
        target=target,
        device=verdict.device,
        candidates=((given, verdict),),
        best="given" if verdict.passed else None,
        environment=environment(),
    )


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def validate(data: dict) -> None:
    """Raise `jsonschema.ValidationError` when `data` does not follow the report schema."""
    import jsonschema  # optional: jsonschema (the test extra)

    jsonschema.validate(data, schema())
