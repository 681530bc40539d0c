"""The layers as the agent's nodes see them: one method per kind of evidence or action, JSON in and out.

Each method calls the layer that owns the work (triage, the IR layer through a worker, profiling,
rewrites, the harness); none of them knows about LangGraph. Values are plain dicts so that they travel
through the checkpointer.
"""

from __future__ import annotations

import re

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from diagnose import optimizer
from diagnose.ascend.inspect import ascend_facts
from diagnose.cache import cache_root
from diagnose.ir.cli import run_worker
from diagnose.optimizer.pipeline import proposal
from diagnose.profiling.profile import ProfileOptions, profile_task
from diagnose.profiling.roofline import roof_for
from diagnose.records import Timing
from diagnose.runtime.devices import timed
from diagnose.task import load_task
from diagnose.toolchain.placement import available
from diagnose.triage.cli import triage_source
from diagnose.verify.harness import CheckOptions, verify
from diagnose.verify.reference import KeptReference
from diagnose.verify.rounds import PARALLEL, verify_round


@dataclass(frozen=True)
class Tools:
    """The real layers; `run_dir` is where this run writes candidate files.

    `on_candidate(id, index, total)`, when given, is called as each candidate's verification starts
    (the progress display names it); it is not part of the state and never checkpointed.
    `device_lock` names the lock file of a device shared with other runs (a sweep's `--jobs`:
    `diagnose.runtime.device_lock`). `seeds` and `compile_baseline` are the run's (`Budget`).
    `reference` keeps the reference job's result from the baseline's verification for every round of
    candidates (one reference job per run, not per round); `close()` deletes it. `on_phase(name)`, when
    given, hears of each step of every verification as it starts (`CheckOptions.on_phase`).
    """

    run_dir: str
    on_candidate: Callable[[str, int, int], None] | None = field(default=None, compare=False)
    on_phase: Callable[[str], None] | None = field(default=None, compare=False)
    device_lock: str | None = None
    seeds: int = 3
    compile_baseline: bool = True
    reference: KeptReference = field(default_factory=KeptReference, compare=False, repr=False)

    def close(self) -> None:
        self.reference.close()

    def verify_task(self, task: str, device: str, target: str) -> dict:
        baselines = ("eager", "compile") if self.compile_baseline else ("eager",)
        return verify(load_task(task), self.check_options(device, baselines=baselines), keep=self.reference).to_dict()

    def check_options(self, device: str, **options):
        """How this run verifies: its seeds and device lock, plus `options`."""
        return CheckOptions(
            device=device,
            seeds=tuple(range(self.seeds)),
            device_lock=self.device_lock,
            on_phase=self.on_phase,
            **options,
        )

    def triage(self, path: str, target: str) -> list[dict]:
        return [f.to_dict() for f in triage_source(Path(path).read_text(), path, target=target)]

    def inspect(self, path: str, target: str, deep: bool) -> list[dict]:
        """IR facts of every kernel launch; `deep` adds controlled recompiles and the pass timeline."""
        return self.inspect_with_errors(path, target, deep)[0]

    def inspect_with_errors(self, path: str, target: str, deep: bool) -> tuple[list[dict], list[str]]:
        """IR facts of every kernel launch, and one line per launch that does not compile for the target
        (`kernel: message`): a first version that runs in the interpreter may not compile at all."""
        if target.startswith("ascend"):
            return self.inspect_ascend(path, target, deep), []

        payload = {
            "path": str(Path(path).resolve()),
            "target": target,
            "passes": deep,
            "diff_pass": None,
            "stage": None,
            "kernel": None,
            "experiments": deep,
            "cache_root": str(cache_root().resolve()),
        }
        result = run_worker(payload)
        errors = [
            f"{kernel['kernel']}: {_first_line(kernel['error']['message'])}"
            for kernel in result["kernels"]
            if "error" in kernel and kernel["error"].get("stage") != "launch"
        ]
        return [e for kernel in result["kernels"] for e in kernel.get("evidence", [])], errors

    def inspect_ascend(self, path: str, target: str, deep: bool = False) -> list[dict]:
        """Ascend IR facts (ttadapter, through the toolchain's worker); `deep` adds the per-pass IR and
        the facts that name the pass that made each problem (`PassIntroduced`, stage `pass`).
        `ToolchainError` when the Ascend toolchain is not set up here (the level is then skipped)."""
        data = ascend_facts(path, target=target, passes=deep)
        return [e for kernel in data.get("kernels", []) for e in kernel.get("evidence", [])]

    def profile(
        self, path: str, device: str, target: str, timings: list[dict] = ()
    ) -> tuple[list[dict], list[dict], dict, str]:
        """Findings, evidence, the roofline bound (when known) and a one-line note. `timings`: those of
        the file's own verification (`Verdict.timings` as dicts), not taken again."""
        if target.startswith("ascend"):
            return [], [], {}, ascend_profile_note(device)
        known = tuple(Timing(**t) for t in timings)
        result = profile_task(
            path, ProfileOptions(device=device, target=target, device_lock=self.device_lock, timings=known)
        )
        findings = [f.to_dict() for _, group_findings in result.findings for f in group_findings]
        evidence = [e.to_dict() for e in result.evidence]
        roofline, note = plot_inputs(result, path), "not timed: static estimate only" if not result.timed else ""
        candidate = [p for p in result.positions if p.variant == "candidate"]
        if candidate:
            # The group farthest from its bound is the one the run must close (and the one it stops on):
            # the first group can sit at its roof while another is at two thirds of it.
            worst = min(candidate, key=lambda p: p.fraction)
            roofline = {
                **roofline,
                "bound_ms": worst.bound_s * 1e3,
                "group": worst.group,
                "bounds_ms": {p.group: p.bound_s * 1e3 for p in candidate},
            }
            note = f"{worst.fraction:.0%} of the roofline bound on {worst.group} ({worst.regime})"
            if len(candidate) > 1:
                note += f", the farthest of {len(candidate)} input groups"
        codes = sorted({f["code"] for f in findings})
        return findings, evidence, roofline, f"{note}; findings: {', '.join(codes) or 'none'}"

    def propose(
        self,
        task: str,
        base: str,
        findings: list[dict],
        evidence: list[dict],
        target: str,
        tried: list[str],
        device: str = "cpu",
    ) -> list[dict]:
        """Candidates for the findings; a tunable rewrite's launch-config search times its configurations
        on `device` where it can (sharing the device through this run's lock), else estimates them.
        A candidate dropped before verification comes as `{"made_by": [...], "dropped": why}`, a search
        that kept the source's own launch values as `{"made_by": [rewrite], "kept": its summary}`."""
        made = proposal(base, findings, evidence, target, device=device, device_lock=self.device_lock, tried=tried)
        out = []
        folder = Path(self.run_dir, "candidates")
        folder.mkdir(parents=True, exist_ok=True)
        for candidate in made.candidates:
            path = folder / f"{candidate.id}.py"
            path.write_text(candidate.source)
            out.append({**candidate.to_dict(), "path": str(path)})
        return (
            out
            + [{"made_by": list(d.made_by), "dropped": d.reason} for d in made.dropped]
            + [{"made_by": [k.rewrite], "kept": k.summary} for k in made.kept]
        )

    def declined(self, base: str, findings: list[dict], evidence: list[dict], target: str) -> list[tuple[str, str]]:
        """The rewrites that answer the findings but do not apply to `base`, each with why not."""
        return optimizer.declined(base, findings, evidence, target)

    def evaluate(
        self,
        task: str,
        candidates: list[dict],
        device: str,
        target: str,
        deadline: float | None = None,
        initial: bool = True,
    ) -> list[dict]:
        """Verify and time the candidates, at once on a device (`diagnose.verify.rounds`), against the task
        as given too where `initial`; past `deadline` (a `time.time()`), the rest are left unverified (a
        round of slow verifications must not run far over the run's wall budget)."""
        if not candidates or (deadline is not None and time.time() > deadline):
            return []
        options = self.check_options(device, initial=Path(task) if initial else None, baselines=("eager",))

        def starting(index: int) -> None:
            if self.on_candidate:
                self.on_candidate(candidates[index]["id"], index + 1, len(candidates))

        # Every candidate is judged against the cases of the run's one reference job (`reference`).
        tasks = [load_task(task, c["path"]) for c in candidates]
        parallel = PARALLEL if timed(device) else 1
        verdicts = verify_round(
            tasks, options, self.reference, self.run_dir, parallel=parallel, before=starting, deadline=deadline
        )
        return [
            {
                "candidate": {k: v for k, v in candidate.items() if k != "path"},
                "verdict": verdict.to_dict(),
                "path": candidate["path"],
            }
            for candidate, verdict in zip(candidates, verdicts)
            if verdict is not None
        ]


def plot_inputs(result, path: str) -> dict:
    """What the report's roofline plot needs from a profile: the work per group, the roof, whether it
    was timed, and the static estimate per group (ms) of the kernel profiled (`profiled`: its file's stem)."""
    if not result.work or not result.ceilings.copy_bytes_per_s:
        return {}
    estimate_ms: dict[str, float] = {}
    for kernel in result.kernels:
        estimate_ms[kernel.group] = estimate_ms.get(kernel.group, 0.0) + kernel.estimate.time_s * 1e3
    return {
        "work": [w.to_dict() for w in result.work],
        "roof": roof_for(result.ceilings, result.work[0].dtype).to_dict(),
        "timed": result.timed,
        "profiled": Path(path).stem,
        "estimate_ms": estimate_ms,
    }


def ascend_profile_note(device: str) -> str:
    """What the profile level could not do for an Ascend target here, in one line."""
    ok, why = available("npu")
    if not ok:
        return f"not profiled, nothing timed on an NPU: {why}"
    if device != "npu":
        return f"not profiled, nothing timed on an NPU: --device {device} (an NPU is usable here with --device npu)"
    return (
        "not profiled: the NPU profiler is not wired into the profile level yet; "
        "candidates are timed on the NPU (torch.npu events) when verified"
    )


def _first_line(message: str) -> str:
    """What a compile error says is wrong. `diagnose.ir.compile` words it `Type[ in stage/pass]: [at L:C:]
    cause` on one line; the type and a position counted from the kernel's `def` are dropped."""
    lines = message.strip().splitlines()
    if not lines:
        return "does not compile"
    return re.sub(r"^\w+( in \S+)?: (at \d+:\d+: ?)?", "", lines[-1].strip())[:200]
