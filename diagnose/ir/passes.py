"""Per-pass recording of a Triton compile: the pipeline, each pass's diagnostics, the IR after it.

Triton's backends build each stage as `pm = ir.pass_manager(ctx)`, a list of `passes.*.add_*(pm,
...)` calls and `pm.run(mod, stage)`. There is no hook between passes, so `record_passes()`:

1. wraps every `add_*` function of `passes`, `nvidia.passes` and `amd.passes` (the bindings'
   submodules accept `setattr`) so that, on our pass manager, it only *records* (function, args);
2. swaps `ir.pass_manager` for a subclass whose `run` replays the recorded passes one at a time,
   each in its own fresh pass manager, with `MLIR_ENABLE_DIAGNOSTICS` set and fd 2 captured for
   that run alone, so every remark is attributed to the pass that emitted it;
3. keeps `mod.str()` (with locations) after every pass and before each stage when asked, or only
   after a few named passes (the shared-memory allocation, whose offsets the facts read).

The result is byte-identical to a plain compile (same passes, same order; the diagnostics switch is
outside the cache key because it is only set inside `run`). Everything wrapped is restored in
`finally`. Nothing is stored on classes or modules: the trace lives in the context manager's frame.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from diagnose.ir.remarks import capture_fd, diagnostics_enabled


@dataclass(frozen=True)
class PassStep:
    """One pass run: its stage, pipeline name (`tritongpu-coalesce`), the Python `add_*` that added
    it, wall time, what it printed on fd 2, and an index into `PassTrace.snapshots` (or -1)."""

    index: int
    stage: str
    name: str
    add_fn: str
    args: str
    pipeline: str
    seconds: float
    diagnostics: str = ""
    snapshot: int = -1


@dataclass
class PassTrace:
    """What `record_passes` collects; `snapshots[i]` is IR text, `stage_inputs[stage]` an index."""

    steps: list[PassStep] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)
    stage_inputs: dict[str, int] = field(default_factory=dict)

    def pipelines(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for step in self.steps:
            out.setdefault(step.stage, []).append(step.name)
        return out

    def keep(self, text: str) -> int:
        """Store a snapshot, sharing the previous one when a pass changed nothing."""
        if self.snapshots and self.snapshots[-1] == text:
            return len(self.snapshots) - 1
        self.snapshots.append(text)
        return len(self.snapshots) - 1


def pipeline_name(pipeline: str) -> str:
    """`any(tritongpu-coalesce)` -> `tritongpu-coalesce`; `any(llvm.func(canonicalize-llvm-ir))` ->
    `canonicalize-llvm-ir`; options in braces are dropped."""
    inner = pipeline
    while "(" in inner and inner.endswith(")"):
        inner = inner[inner.index("(") + 1 : -1]
    return inner.split("{", 1)[0].strip() or pipeline


def _pass_modules() -> Iterator[tuple[str, object]]:
    from triton._C.libtriton import amd, nvidia, passes  # deferred: triton is heavy

    for root, prefix in ((passes, "passes"), (nvidia.passes, "nvidia.passes"), (amd.passes, "amd.passes")):
        for sub in dir(root):
            module = getattr(root, sub)
            if type(module).__name__ == "module":
                yield f"{prefix}.{sub}", module


@contextlib.contextmanager
def record_passes(
    snapshots: bool = False, keep_after: tuple[str, ...] = (), diagnostics: str = "remarks,warnings"
) -> Iterator[PassTrace]:
    """Record every MLIR pass of the compiles run inside the block (see the module docstring);
    keep the IR after every pass (`snapshots`) or only after the passes named in `keep_after`."""
    from triton._C.libtriton import ir  # deferred: triton is heavy

    trace = PassTrace()
    original_pm = ir.pass_manager

    class SteppingPassManager(original_pm):
        def __init__(self, context):
            super().__init__(context)
            self.context = context
            self.recorded: list[tuple[str, object, tuple]] = []

        def run(self, mod, stage):
            if self.get_pipeline_str() not in ("", "any()"):
                # A pass reached the real manager without going through a wrapper: replaying the
                # others would reorder it, so refuse loudly rather than compile something else.
                raise RuntimeError(f"unrecorded pass in {stage}: {self.get_pipeline_str()}")
            if snapshots:
                trace.stage_inputs[stage] = trace.keep(mod.str())
            for qualname, add, args in self.recorded:
                pm = original_pm(self.context)
                add(pm, *args)
                pipeline = pm.get_pipeline_str()
                name = pipeline_name(pipeline)
                start = time.perf_counter()
                box: dict[str, str] = {}
                try:
                    with diagnostics_enabled(diagnostics), capture_fd(2) as box:
                        pm.run(mod, stage)
                finally:
                    # Recorded even when the pass fails: its fd-2 text is the compiler's error.
                    trace.steps.append(
                        PassStep(
                            index=len(trace.steps),
                            stage=stage,
                            name=name,
                            add_fn=qualname,
                            args=", ".join(map(repr, args)),
                            pipeline=pipeline,
                            seconds=time.perf_counter() - start,
                            diagnostics=box.get("text", ""),
                            snapshot=trace.keep(mod.str()) if snapshots or name in keep_after else -1,
                        )
                    )

    saved = []
    try:
        for modname, module in _pass_modules():
            for attr in [a for a in dir(module) if a.startswith("add_")]:
                add = getattr(module, attr)

                def wrapper(pm, *args, _add=add, _qualname=f"{modname}.{attr}"):
                    if isinstance(pm, SteppingPassManager):
                        pm.recorded.append((_qualname, _add, args))
                    else:
                        _add(pm, *args)

                saved.append((module, attr, add))
                setattr(module, attr, wrapper)
        ir.pass_manager = SteppingPassManager
        yield trace
    finally:
        ir.pass_manager = original_pm
        for module, attr, add in saved:
            setattr(module, attr, add)
