"""The layers as the agent's nodes see them: one method per kind of evidence or action, JSON in and out.

Each method calls the layer that owns the work (triage, the IR layer through a worker, profiling,
rewrites, the harness); none of them knows about LangGraph. Values are plain dicts so that they travel
through the checkpointer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tools:
    """The real layers; `run_dir` is where this run writes candidate files."""

    run_dir: str

    def verify_task(self, task: str, device: str, target: str) -> dict:
        from diagnose.task import load_task
        from diagnose.verify.harness import CheckOptions, verify

        return verify(load_task(task), CheckOptions(device=device)).to_dict()

    def triage(self, path: str, target: str) -> list[dict]:
        from diagnose.triage.cli import triage_source

        return [f.to_dict() for f in triage_source(Path(path).read_text(), path, target=target)]

    def inspect(self, path: str, target: str, deep: bool) -> list[dict]:
        """IR facts of every kernel launch; `deep` adds controlled recompiles and the pass timeline."""
        if target.startswith("ascend"):
            return self.inspect_ascend(path, target)
        from diagnose.ir.cli import run_worker
        from diagnose.ir.cache import cache_root

        payload = {"path": str(Path(path).resolve()), "target": target, "passes": deep, "diff_pass": None,
                   "stage": None, "kernel": None, "experiments": deep, "cache_root": str(cache_root().resolve())}
        result = run_worker(payload)
        return [e for kernel in result["kernels"] for e in kernel.get("evidence", [])]

    def inspect_ascend(self, path: str, target: str) -> list[dict]:
        from diagnose.ascend.inspect import inspect_ascend

        code, text = inspect_ascend(path, target=target, fmt="json")
        data = json.loads(text)
        return [e for kernel in data.get("kernels", []) for e in kernel.get("evidence", [])]

    def profile(self, path: str, device: str, target: str) -> tuple[list[dict], list[dict], dict, str]:
        """Findings, evidence, the roofline bound (when known) and a one-line note."""
        from diagnose.profiling.profile import ProfileOptions, profile_task

        if target.startswith("ascend"):
            return [], [], {}, "no NPU here: Ascend profiling needs torch_npu and a device"
        result = profile_task(path, ProfileOptions(device=device, target=target))
        findings = [f.to_dict() for _, group_findings in result.findings for f in group_findings]
        evidence = [e.to_dict() for e in result.evidence]
        roofline, note = {}, "not timed: static estimate only" if not result.timed else ""
        candidate = [p for p in result.positions if p.variant == "candidate"]
        if candidate:
            first = candidate[0]
            roofline = {"bound_ms": first.bound_s * 1e3, "group": first.group}
            note = f"{first.fraction:.0%} of the roofline bound on {first.group} ({first.regime})"
        codes = sorted({f["code"] for f in findings})
        return findings, evidence, roofline, f"{note}; findings: {', '.join(codes) or 'none'}"

    def propose(self, task: str, base: str, findings: list[dict], evidence: list[dict], target: str,
                tried: list[str]) -> list[dict]:
        from diagnose import rewrite

        if not hasattr(rewrite, "propose"):
            return []
        candidates = rewrite.propose(base, findings, evidence, target)
        out = []
        folder = Path(self.run_dir, "candidates")
        folder.mkdir(parents=True, exist_ok=True)
        for candidate in candidates:
            path = folder / f"{candidate.id}.py"
            path.write_text(candidate.source)
            out.append({**candidate.to_dict(), "path": str(path)})
        return out

    def evaluate(self, task: str, candidates: list[dict], device: str, target: str) -> list[dict]:
        from diagnose.task import load_task
        from diagnose.verify.harness import CheckOptions, verify

        results = []
        for candidate in candidates:
            verdict = verify(load_task(task, candidate["path"]),
                             CheckOptions(device=device, initial=Path(task), baselines=("eager",)))
            results.append({"candidate": {k: v for k, v in candidate.items() if k != "path"},
                            "verdict": verdict.to_dict(), "path": candidate["path"]})
        return results
