"""Proton (`triton.profiler`), the lighter profiler: kernel times per scope, with the scope's FLOPs and bytes.

Where Nsight Compute replays every kernel to read counters (seconds per launch), Proton records each
launch's duration through CUPTI as it runs, so it can watch many forwards at almost no cost. The
worker (`jobs.proton_job`) runs, per input group and variant (candidate, eager), `repeats` forwards
inside `proton.scope("<variant>@<group>", {"bytes": ..., "flops": ...})` — the work counted on the
reference, so the scope carries what the roofline needs — with `hook="triton"` so launches are named
by their Triton kernel. `proton.finalize()` writes a hatchet tree (JSON):

    [ {"frame": {"name": "ROOT"}, "metrics": {...}, "children": [
          {"frame": {"name": "candidate@rows4096"}, "metrics": {"bytes": 1.3e8, "flops": 0},
           "children": [{"frame": {"name": "softmax_kernel"},
                         "metrics": {"count": 10, "time (ns)": 2.1e6, "device_id": "0", ...}}]}]},
      {"CUDA": {"0": {"arch": "90", "num_sms": 132, ...}}} ]

`parse_hatchet` reads it back into `ProtonKernel` rows (frames named `__proton_launch_metadata` are
Proton's own bookkeeping and are dropped, as its viewer does); `scope_times` sums them per scope and
`evidence` turns them into `Evidence` (stage `profile`, source `proton`): per scope, its kernels'
time per forward, the achieved bytes/s and FLOP/s; per kernel, its share of the scope's time.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.records import Evidence, Location

METADATA_FRAME = "__proton_launch_metadata"
ROOT_FRAME = "ROOT"


@dataclass(frozen=True)
class ProtonKernel:
    """One kernel's launches inside one scope: how many, their total time, the scope's counted work."""

    scope: str
    kernel: str
    count: int
    time_ns: float
    scope_bytes: float | None = None
    scope_flops: float | None = None


@dataclass(frozen=True)
class ScopeTime:
    """All kernels of one scope, per forward (the scope ran `repeats` forwards)."""

    scope: str
    kernels: tuple[ProtonKernel, ...]
    repeats: int

    @property
    def seconds_per_forward(self) -> float:
        return sum(k.time_ns for k in self.kernels) * 1e-9 / max(self.repeats, 1)

    @property
    def bytes(self) -> float | None:
        return self.kernels[0].scope_bytes if self.kernels else None

    @property
    def flops(self) -> float | None:
        return self.kernels[0].scope_flops if self.kernels else None


def parse_hatchet(data: list) -> tuple[ProtonKernel, ...]:
    """Kernel rows from a Proton hatchet tree (the list `proton.finalize()` writes, or its first item)."""
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "frame" not in data[0]:
        raise ValueError("not a Proton hatchet tree: expected a list whose first item has a 'frame'")
    out: list[ProtonKernel] = []

    def walk(node: dict, scope: list[str], work: tuple[float | None, float | None]) -> None:
        name = node.get("frame", {}).get("name", "")
        if name == METADATA_FRAME:
            return
        metrics = node.get("metrics", {})
        children = node.get("children", [])
        if "time (ns)" in metrics and "device_id" in metrics and not children:
            out.append(
                ProtonKernel(" / ".join(scope), name, int(metrics.get("count", 0)), float(metrics["time (ns)"]), *work)
            )
            return
        here = scope if name == ROOT_FRAME else [*scope, name]
        if name != ROOT_FRAME and ("bytes" in metrics or "flops" in metrics):
            work = (_number(metrics.get("bytes")), _number(metrics.get("flops")))
        for child in children:
            walk(child, here, work)

    walk(data[0], [], (None, None))
    return tuple(out)


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def scope_times(kernels: tuple[ProtonKernel, ...], repeats: int) -> tuple[ScopeTime, ...]:
    scopes = dict.fromkeys(k.scope for k in kernels)
    return tuple(ScopeTime(s, tuple(k for k in kernels if k.scope == s), repeats) for s in scopes)


def evidence(scopes: tuple[ScopeTime, ...], locations: dict[str, Location] | None = None) -> list[Evidence]:
    """Per scope: time per forward and achieved throughput; per kernel: its share of the scope."""
    locations = locations or {}
    out = []
    for scope in scopes:
        seconds = scope.seconds_per_forward
        args = {
            "scope": scope.scope,
            "ms_per_forward": round(seconds * 1e3, 6),
            "repeats": scope.repeats,
            "kernels": len(scope.kernels),
        }
        if scope.bytes and seconds:
            args["achieved_bytes_per_s"] = round(scope.bytes / seconds, 1)
        if scope.flops and seconds:
            args["achieved_flops_per_s"] = round(scope.flops / seconds, 1)
        out.append(Evidence("profile", "proton", "ScopeTime", "metric", None, tuple(args.items())))
        total = sum(k.time_ns for k in scope.kernels) or 1.0
        for kernel in sorted(scope.kernels, key=lambda k: -k.time_ns):
            launches = kernel.count / max(scope.repeats, 1)
            out.append(
                Evidence(
                    "profile",
                    "proton",
                    "KernelTime",
                    "metric",
                    locations.get(kernel.kernel),
                    (
                        ("scope", scope.scope),
                        ("kernel", kernel.kernel),
                        ("us_per_launch", round(kernel.time_ns / max(kernel.count, 1) / 1e3, 3)),
                        ("launches_per_forward", round(launches, 3)),
                        ("share", round(kernel.time_ns / total, 4)),
                    ),
                )
            )
    return out
