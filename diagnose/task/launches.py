"""Captured launches on disk: `.diagnose/launches/<module>.json`, one small readable file per module.

`diagnose capture -- COMMAND` records what the command launched (`diagnose/capture/tracer.py`) and
merges it here, under the folder it ran in. A file lists, for one kernel module, each distinct launch:

    {"schema": "diagnose.launches/1", "module": "liger_kernel.ops.rms_norm",
     "path": "src/liger_kernel/ops/rms_norm.py",
     "launches": [{"kernel": "_rms_norm_forward_kernel", "line": 470, "host": "rms_norm_forward",
                   "call": "LigerRMSNormFunction.apply(X=bf16[2,128,512], W=bf16[512], eps=1e-06, ...)",
                   "launch": "_rms_norm_forward_kernel[(256,)](Y_ptr=bf16[256,512], ...)",
                   "by": "test/transformers/test_rms_norm.py:160 test_correctness", "count": 12}, ...]}

Paths (`path`, each launch's `kernel_file`) are relative to the project folder, the one that holds
`.diagnose/`, so the files stay valid in another checkout of the project; a file outside the project
keeps its absolute path. `call` is the host call that made the launch and can be made again (null when there is none: a launch
from a backward pass or a method); `launch` the kernel launch itself. No tensor data is kept: specs only
(`diagnose/task/specs.py`). A kernel module's task replays `call`, or `launch` where there is no call.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.task.callspec import parse_call
from diagnose.task.module import identity

SCHEMA = "diagnose.launches/1"
FOLDER = Path(".diagnose") / "launches"


@dataclass(frozen=True)
class LaunchRecord:
    """One distinct launch seen by a capture, and the call that made it."""

    module_file: str
    kernel: str
    line: int
    launch: str
    call: str | None = None
    host: str = ""
    by: str | None = None
    count: int = 1
    kernel_file: str | None = None

    @property
    def replay(self) -> str:
        """What a task replays: the host call where there is one, else the launch."""
        return self.call or self.launch

    def to_json(self, project: Path) -> dict:
        data = asdict(self)
        data.pop("module_file")
        if self.kernel_file:
            data["kernel_file"] = _relative(Path(self.kernel_file), project)
        return data


def _relative(path: Path, project: Path) -> str:
    """`path` relative to the project (posix), or absolute where it lies outside it."""
    try:
        return path.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(path)


def _absolute(path: str, project: Path) -> str:
    return path if Path(path).is_absolute() else str((project / path).resolve())


def store_for(project: Path) -> Path:
    return project / FOLDER


def merge(project: Path, records: list[LaunchRecord]) -> list[Path]:
    """Add `records` to the project's launch files (counts add up); return the files written."""
    by_module: dict[str, list[LaunchRecord]] = {}
    for record in records:
        by_module.setdefault(record.module_file, []).append(record)
    folder = store_for(project)
    folder.mkdir(parents=True, exist_ok=True)
    # Captures run side by side (one per script) merge into the same files: one at a time.
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _merge_locked(project, folder, by_module)


def _merge_locked(project: Path, folder: Path, by_module: dict[str, list[LaunchRecord]]) -> list[Path]:
    written = []
    for module_file, new in sorted(by_module.items()):
        module = identity(Path(module_file))
        path = folder / f"{module.name}.json"
        old = read_file(path) if path.exists() else []
        merged: dict[tuple, LaunchRecord] = {}
        for record in [*old, *new]:
            key = (record.kernel, record.line, record.launch, record.call)
            if key in merged:
                record = LaunchRecord(**{**asdict(record), "count": merged[key].count + record.count})
            merged[key] = record
        data = {
            "schema": SCHEMA,
            "module": module.name,
            "path": _relative(module.path, project),
            "launches": [r.to_json(project) for r in merged.values()],
        }
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


def read_file(path: Path) -> list[LaunchRecord]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a launch file ({exc})") from None
    if data.get("schema") != SCHEMA:
        raise UsageError(f"{path}: not a launch file of schema {SCHEMA}")
    project = path.resolve().parents[2]  # <project>/.diagnose/launches/<module>.json
    module_file = _absolute(data["path"], project)
    out = []
    for entry in data.get("launches", []):
        if entry.get("kernel_file"):
            entry = {**entry, "kernel_file": _absolute(entry["kernel_file"], project)}
        out.append(LaunchRecord(module_file=module_file, **entry))
    return out


def folders_for(path: Path, launches: str | None = None) -> list[Path]:
    """Where to look for a module's launch files: the given folder, else `.diagnose/launches` in the
    module's folder and every folder above it, and in the current folder."""
    if launches:
        return [Path(launches)]
    found = []
    for folder in [path.resolve().parent, *path.resolve().parents, Path.cwd()]:
        candidate = store_for(folder)
        if candidate.is_dir() and candidate not in found:
            found.append(candidate)
    return found


def records_for(path: Path, launches: str | None = None) -> list[LaunchRecord]:
    """The captured launches made from the module at `path` (by its file, wherever it was captured)."""
    module = identity(path)
    target = str(module.path)
    out: list[LaunchRecord] = []
    seen = set()
    for folder in folders_for(path, launches):
        if launches and not folder.is_dir():
            raise UsageError(f"--launches {launches}: no such folder")
        for file in sorted(folder.glob("*.json")):
            if file.stem != module.name:
                continue
            for record in read_file(file):
                key = (record.kernel, record.line, record.launch, record.call)
                if record.module_file == target and key not in seen:
                    seen.add(key)
                    out.append(record)
    return out


def launches_of_kernels_in(path: Path, launches: str | None = None) -> list[LaunchRecord]:
    """Launches made from other modules of the kernels that `path` defines (`fused_moe.py` launching
    the kernels of `fused_moe_kernels.py`), as launches replayable in `path` itself: at the kernel, under
    the name `path` gives it (the host call lives in the other module, so none is kept)."""
    target = str(identity(path).path)
    out: list[LaunchRecord] = []
    seen = set()
    for folder in folders_for(path, launches):
        for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            for record in read_file(file):
                if record.kernel_file != target or record.module_file == target:
                    continue
                launch = parse_call(record.launch)
                retargeted = dataclasses.replace(launch, target=record.kernel).text()
                if retargeted not in seen:
                    seen.add(retargeted)
                    out.append(dataclasses.replace(record, launch=retargeted, call=None))
    return out


def launches_to_replay(path: Path, launches: str | None = None) -> list[LaunchRecord]:
    """What a kernel module's task replays: its own captured launches, else, for a file of kernels that
    other modules launch (attorch's `softmax_kernels.py`, launched from `softmax_layers.py`), theirs of
    its kernels, replayed at the kernel (`launches_of_kernels_in`)."""
    return records_for(path, launches) or launches_of_kernels_in(path, launches)


def listing(records: list[LaunchRecord]) -> list[LaunchRecord]:
    """The records in the order `--launch N` counts them: calls of a host function before bare kernel
    launches, each largest first.

    A bare launch is what is left when the host code that made it cannot be called again (an autograd
    `backward`, which only the engine calls): replayed at the kernel, it has no host code for a rewrite
    to edit and its launch options are fixed. A module whose largest launch is such a backward (the
    tutorial's layer norm: `_layer_norm_bwd_dx_fused` moves more bytes than the forward) would then be
    optimized where nothing can change, while its forward, through `LayerNorm.apply`, can."""
    return sorted(
        records, key=lambda r: (parse_call(r.replay).is_launch, -parse_call(r.replay).nbytes, r.kernel, r.replay)
    )
