"""Offline compile of one concrete launch, as the JIT would compile it, cached per Triton hash.

`compile_launch(launch, target)` builds the JIT's specialization (`specialize.py`), then runs
`triton.compile` for the target's `GPUTarget` with:

- Triton's cache directory pointed at `<cache>/ir/kernels` (a knob scope, restored afterwards), so
  the artefacts land in Triton's own group folder, keyed by Triton's hash (source, options,
  target, cache-relevant environment, Triton version);
- `record_passes()` (`passes.py`): the pipeline of every stage, each pass's remarks and, when
  `snapshots=True`, the IR after every pass;
- `knobs.nvidia.dump_ptxas_log`, which makes `make_cubin` print the `ptxas -v` log (the same
  ptxas, flags and PTX as the real compile) to stdout, where we catch it; the knob is not part of
  the cache key.

What Triton does not keep goes to `diagnose.json` (pass steps, remarks, ptxas log, specialization)
and `diagnose.passes.json.gz` (the IR after shared-memory allocation, or after every pass) in the
same group folder. On a later call Triton's cache hit returns the kernel and our files complete
it; if ours are missing, the kernel is compiled again with `always_compile` to regain them.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from diagnose.cache import read_json, write_bytes_atomic, write_json_atomic
from diagnose.ir.cache import ir_cache_dir
from diagnose.ir.passes import PassStep, PassTrace, record_passes
from diagnose.ir.remarks import Diagnostic, parse_diagnostics
from diagnose.ir.specialize import ConcreteLaunch, build_source, describe_specialization
from diagnose.targets import Target

RECORD_VERSION = 1
# The IR after shared-memory allocation is kept on every compile: it shows which ops own scratch.
ALLOCATION_PASSES = ("allocate-shared-memory-nv", "allocate-amdgpu-shared-memory", "allocate-shared-memory")
RECORD_FILE = "diagnose.json"
SNAPSHOT_FILE = "diagnose.passes.json.gz"
SASS_FILE = "diagnose.sass"
TEXT_STAGES = ("source", "ttir", "ttgir", "llir", "ptx", "amdgcn")


class CompileFailed(Exception):
    """The user's kernel did not compile for this target; `message` says where and why."""

    def __init__(self, message: str, stage: str = "", log: str = ""):
        super().__init__(message)
        self.message, self.stage, self.log = message, stage, log


@dataclass(frozen=True)
class CompileRecord:
    """Everything one compile produced: artefacts, metadata, pass steps, ptxas log.

    `asm` maps a stage extension (`ttgir`, `ptx`, `amdgcn`, ...) to its text; `source_path` is the
    kernel's file as the IR locations name it.
    """

    kernel: str
    title: str
    target: str
    hash: str
    name: str
    group_dir: str
    metadata: dict
    specialization: dict
    steps: tuple[PassStep, ...]
    ptxas_log: str
    source_path: str
    seconds: float
    cache_hit: bool
    asm: dict = field(default_factory=dict, repr=False)

    def diagnostics(self) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        for step in self.steps:
            if step.diagnostics:
                out += [d for d in parse_diagnostics(step.diagnostics, step.name, step.stage) if d not in out]
        return out

    def snapshots(self) -> tuple[dict[str, int], list[str]] | None:
        """(stage -> index of its input IR, kept IR texts); `PassStep.snapshot` indexes the list.
        Every pass has one after a compile with `snapshots=True`, only the allocation pass otherwise."""
        path = Path(self.group_dir) / SNAPSHOT_FILE
        if not path.exists():
            return None
        data = json.loads(gzip.decompress(path.read_bytes()))
        return data["stage_inputs"], data["snapshots"]

    def allocated_ir(self) -> str:
        """The module right after shared-memory allocation (ops carry `allocation.offset`)."""
        kept = self.snapshots()
        step = next((s for s in self.steps if s.name in ALLOCATION_PASSES and s.snapshot >= 0), None)
        return kept[1][step.snapshot] if kept and step else ""

    def sass(self) -> str | None:
        """SASS of the cubin with line info (the bundled `nvdisasm -g -c`), made on first request
        and kept beside it; None for AMD or when nvdisasm is missing."""
        path = Path(self.group_dir) / SASS_FILE
        if path.exists():
            return path.read_text()
        cubin = Path(self.group_dir) / f"{self.name}.cubin"
        if not cubin.exists():
            return None

        from triton import knobs  # deferred: triton is heavy

        try:
            text = subprocess.run(
                [knobs.nvidia.nvdisasm.path, "-g", "-c", str(cubin)],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        write_bytes_atomic(path, text.encode())
        return text


def compile_launch(
    launch: ConcreteLaunch, target: Target, *, snapshots: bool = False, options: dict | None = None
) -> CompileRecord:
    """Compile `launch` for `target` offline (extra `options` such as `num_stages` override the
    launch's), reusing the cache when the same compile was done before."""
    import triton  # deferred: triton is heavy
    from triton import knobs  # deferred: triton is heavy

    gpu_target = target.gpu_target()
    source, backend_options = build_source(launch.jit, launch.args, {**launch.kwargs, **(options or {})}, gpu_target)
    start = time.perf_counter()
    with knobs.cache.scope(), knobs.compilation.scope(), knobs.nvidia.scope():
        knobs.cache.dir = str(ir_cache_dir("kernels"))
        knobs.nvidia.dump_ptxas_log = True
        kernel, trace, stdout = _compile(triton, source, gpu_target, backend_options, snapshots)
        group = _group_dir(kernel)
        if not trace.steps:  # Triton's cache hit: complete it with ours, or compile again
            record = _load_record(group, kernel, launch, target, snapshots, time.perf_counter() - start)
            if record is not None:
                return record
            knobs.compilation.always_compile = True
            kernel, trace, stdout = _compile(triton, source, gpu_target, backend_options, snapshots)
    seconds = time.perf_counter() - start
    data = {
        "version": RECORD_VERSION,
        "kernel": launch.kernel,
        "title": launch.title,
        "target": target.name,
        "hash": kernel.hash,
        "name": kernel.name,
        "specialization": describe_specialization(source),
        "steps": [asdict(s) for s in trace.steps],
        "ptxas_log": _ptxas_part(stdout),
        "source_path": launch.jit.fn.__code__.co_filename,
        "seconds": seconds,
        "snapshots": "all" if snapshots else "allocation",
    }
    blob = json.dumps({"stage_inputs": trace.stage_inputs, "snapshots": trace.snapshots}).encode()
    write_bytes_atomic(group / SNAPSHOT_FILE, gzip.compress(blob, compresslevel=1))
    write_json_atomic(group / RECORD_FILE, data)
    return _record(data, kernel, group, cache_hit=False)


def _compile(triton: Any, source: Any, gpu_target: Any, options: Any, snapshots: bool) -> tuple[Any, PassTrace, str]:
    out = io.StringIO()
    trace = PassTrace()
    try:
        with record_passes(snapshots, ALLOCATION_PASSES) as trace, contextlib.redirect_stdout(out):
            kernel = triton.compile(source, target=gpu_target, options=options.__dict__)
    except Exception as e:
        failed = trace.steps[-1] if trace.steps else None
        text = [line for line in str(e).strip().splitlines() if line.strip()] or [type(e).__name__]
        # An error inside a called `@triton.jit` function is the cause of one at the call ("at 14:8: ^"):
        # the innermost cause says what failed.
        inner = e
        while inner.__cause__ is not None and inner.__cause__ is not inner:
            inner = inner.__cause__
        inner_text = [line for line in str(inner).strip().splitlines() if line.strip()] if inner is not e else []
        log = (failed.diagnostics if failed else "") + out.getvalue() + "\n".join(text + inner_text)
        where = f" in {failed.stage}/{failed.name}" if failed else ""
        # Triton's errors put the place first and the cause last (CompilationError: "at 3:27:" ... NameError).
        last = (inner_text or text)[-1].strip()
        summary = text[0] if len(text) == 1 and not inner_text else f"{text[0]} {last}"
        raise CompileFailed(f"{type(e).__name__}{where}: {summary}", failed.stage if failed else "", log) from e
    return kernel, trace, out.getvalue()


def _group_dir(kernel: Any) -> Path:
    return Path(next(iter(kernel.metadata_group.values()))).parent


def _ptxas_part(stdout: str) -> str:
    """The `ptxas info` lines make_cubin printed (dump_ptxas_log), without anything else."""
    return "\n".join(line for line in stdout.splitlines() if line.startswith("ptxas") or "bytes stack frame" in line)


def _load_record(
    group: Path, kernel: Any, launch: ConcreteLaunch, target: Target, snapshots: bool, seconds: float
) -> CompileRecord | None:
    data = read_json(group / RECORD_FILE)
    if not data or data.get("version") != RECORD_VERSION or data.get("hash") != kernel.hash:
        return None
    if snapshots and data.get("snapshots") != "all":
        return None
    # The same kernel may be reached from another launch or file (the hash ignores both).
    data = {**data, "kernel": launch.kernel, "title": launch.title, "target": target.name, "seconds": seconds}
    return _record(data, kernel, group, cache_hit=True)


def _record(data: dict, kernel: Any, group: Path, cache_hit: bool) -> CompileRecord:
    metadata = json.loads((group / f"{kernel.name}.json").read_text())
    asm = {ext: text for ext, text in kernel.asm.items() if ext in TEXT_STAGES and isinstance(text, str)}
    return CompileRecord(
        kernel=data["kernel"],
        title=data["title"],
        target=data["target"],
        hash=data["hash"],
        name=data["name"],
        group_dir=str(group),
        metadata=metadata,
        specialization=data["specialization"],
        steps=tuple(PassStep(**s) for s in data["steps"]),
        ptxas_log=data["ptxas_log"],
        source_path=data["source_path"],
        seconds=data["seconds"],
        cache_hit=cache_hit,
        asm=asm,
    )
