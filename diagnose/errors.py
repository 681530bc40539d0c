"""Errors a user can cause, each with the exit code the command line returns for it.

Exit codes (documented in README.md):
  0  success (the candidate passed, nothing at or above the chosen severity)
  1  the candidate failed verification, or findings were reported
  2  bad usage or bad input (a bad option value, a file that is missing, does not parse, lacks what the
     task format needs, or whose own code raises or hangs)
  3  internal error or a missing toolchain
  130  interrupted (Ctrl-C); `diagnose optimize` says how to resume the run
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class DiagnoseError(Exception):
    """An error with a one-line message meant for the user and the exit code that goes with it."""

    exit_code = EXIT_INTERNAL


class UsageError(DiagnoseError):
    """Bad command-line usage or bad input file."""

    exit_code = EXIT_USAGE


class ToolchainError(DiagnoseError):
    """A compiler, device or library that the request needs is not available here."""

    exit_code = EXIT_INTERNAL
