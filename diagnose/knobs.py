"""Settings read from the environment, typed, read at the moment of use (nothing is kept in the module).

| variable | what |
|---|---|
| `DIAGNOSE_CACHE_DIR` | root of every cache (runs, IR compiles, toolchains) instead of the defaults below |
| `DIAGNOSE_TIMEOUT_S` | seconds each worker that runs user code may run, in place of each step's own limit |
| `DIAGNOSE_IR_TIMEOUT_S` | seconds an `inspect` compile worker may run when `DIAGNOSE_TIMEOUT_S` is unset (600) |
| `DIAGNOSE_WORKER_FORK` | `0`: start every worker from scratch instead of forking it from a warm zygote (`runtime/zygote.py`) |
| `DIAGNOSE_INTERPRET_MAX_ELEMENTS` | a launch in Triton's interpreter whose tensor arguments hold more elements than this is not run (a capture still records it): a module's own tests at a GPU's sizes would run for hours there; set by the own-tests capture on the CPU (`diagnose/capture/own_tests.py`), unset elsewhere |
| `DIAGNOSE_JOB_LOG` | a file every worker job appends one JSON line to as it ends (`entry`, the payload's `mode`, `start` in epoch seconds, `seconds`, `ok`): where a command's time went, job by job (`benchmarks/phase_times.py --jobs`); a file that cannot be written is skipped, never the job |
| `DIAGNOSE_DATAKERNEL_DIR` | where DataKernelBench's TPC-H data sets go (`sf<N>/`), instead of `datakernel/` under the user cache (`diagnose/bench/suites/datakernel_data.py`) |

Where caches live when `DIAGNOSE_CACHE_DIR` is unset:

- the runs of `diagnose optimize` go to the user cache (`platformdirs.user_cache_dir("diagnose")/runs`,
  `~/.cache/diagnose/runs` on Linux), so that `diagnose report RUN_ID` and `--resume` find a run made
  from any folder; runs made by older versions lie in `./.diagnose_cache/runs`, which `run_roots()`
  lists second;
- everything else under `cache_root()` (the IR compile cache, toolchains, rewrite scratch folders)
  stays in `.diagnose_cache/` of the current folder, beside the project it describes.

The command line's global `--cache-dir` and each command's `--timeout` reach the layers that read these
settings, and every worker subprocess (which inherits the environment), through `scope(...)`: it sets
the variables for one command and restores them after, as Triton's `knobs.scope()` does for tests.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from diagnose.errors import UsageError

CACHE_DIR = "DIAGNOSE_CACHE_DIR"
TIMEOUT = "DIAGNOSE_TIMEOUT_S"
IR_TIMEOUT = "DIAGNOSE_IR_TIMEOUT_S"
WORKER_FORK = "DIAGNOSE_WORKER_FORK"
INTERPRET_MAX_ELEMENTS = "DIAGNOSE_INTERPRET_MAX_ELEMENTS"
JOB_LOG = "DIAGNOSE_JOB_LOG"
LEGACY_CACHE = ".diagnose_cache"


def seconds(name: str, text: str) -> float:
    """A positive number of seconds from an environment variable; a one-line `UsageError` otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{name}={text!r}: not a number of seconds") from None
    if not value > 0:
        raise UsageError(f"{name}={text!r}: must be more than 0 seconds")
    return value


def elements(name: str, text: str) -> int:
    """A positive count of tensor elements from an environment variable; a one-line `UsageError` otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name}={text!r}: not a whole number of elements") from None
    if value <= 0:
        raise UsageError(f"{name}={text!r}: must be more than 0")
    return value


@dataclass(frozen=True)
class Knobs:
    """The settings as the environment holds them now (`Knobs.read()`); None where unset."""

    cache_dir: Path | None = None
    timeout_s: float | None = None
    ir_timeout_s: float = 600.0
    fork_workers: bool = True
    interpret_max_elements: int | None = None
    job_log: Path | None = None

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Knobs:
        env = os.environ if environ is None else environ
        cache = env.get(CACHE_DIR)
        timeout = env.get(TIMEOUT)
        ir_timeout = env.get(IR_TIMEOUT)
        return cls(
            cache_dir=Path(cache).expanduser() if cache else None,
            timeout_s=seconds(TIMEOUT, timeout) if timeout else None,
            ir_timeout_s=seconds(IR_TIMEOUT, ir_timeout) if ir_timeout else cls.ir_timeout_s,
            fork_workers=env.get(WORKER_FORK, "1") != "0",
            interpret_max_elements=elements(INTERPRET_MAX_ELEMENTS, env[INTERPRET_MAX_ELEMENTS])
            if env.get(INTERPRET_MAX_ELEMENTS)
            else None,
            job_log=Path(env[JOB_LOG]) if env.get(JOB_LOG) else None,
        )


# The environment variable behind each field, for `scope`.
VARIABLES = {"cache_dir": CACHE_DIR, "timeout_s": TIMEOUT, "ir_timeout_s": IR_TIMEOUT}


def cache_root(knobs: Knobs | None = None) -> Path:
    """The project cache: `DIAGNOSE_CACHE_DIR`, else `.diagnose_cache/` in the current folder (not created)."""
    knobs = knobs or Knobs.read()
    return knobs.cache_dir or Path.cwd() / LEGACY_CACHE


def user_cache_root(knobs: Knobs | None = None) -> Path:
    """The user cache: `DIAGNOSE_CACHE_DIR`, else the platform's user cache folder for diagnose."""
    import platformdirs  # deferred: platformdirs adds ~10 ms to every command; only the user cache needs it

    knobs = knobs or Knobs.read()
    return knobs.cache_dir or Path(platformdirs.user_cache_dir("diagnose", appauthor=False))


def runs_root(knobs: Knobs | None = None) -> Path:
    """Where new runs of `diagnose optimize` go."""
    return user_cache_root(knobs) / "runs"


def run_roots(knobs: Knobs | None = None) -> tuple[Path, ...]:
    """Where to look for a run, in order: `runs_root()`, then `./.diagnose_cache/runs` (older versions')."""
    roots = (runs_root(knobs), Path.cwd() / LEGACY_CACHE / "runs")
    return tuple(dict.fromkeys(root.absolute() for root in roots))


@contextmanager
def scope(**values: object) -> Iterator[None]:
    """Set the variables of the given `Knobs` fields (None: leave that one as it is) for the duration of
    the block, then restore them: how one command's options reach every layer and worker it starts."""
    unknown = set(values) - set(VARIABLES)
    if unknown:
        raise TypeError(f"no knob {', '.join(sorted(unknown))}")
    settings = {
        VARIABLES[name]: str(Path(value).absolute()) if isinstance(value, Path) else str(value)
        for name, value in values.items()
        if value is not None
    }
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
