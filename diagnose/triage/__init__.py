"""Pattern triage: level 0 of the escalation. Fast source rules over the kernel file's AST, no
compiler, no device; `triage_source` is the library entry point, `cli.triage_command` the command."""

from diagnose.triage.engine import triage_source

__all__ = ["triage_source"]
