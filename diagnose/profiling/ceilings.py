"""Device ceilings: what the hardware can really do, measured once per device and cached on disk.

A roofline is only as honest as its roof. Datasheet peaks are leads (an H200's 4.8 TB/s HBM is about
4.3 TB/s in a copy; its 989 dense bf16 TFLOP/s about 720-790 in cuBLAS), so on a device the roof is
*measured* with the harness's timing protocol (`diagnose/verify/timing.py`: CUDA events, L2 flushed,
interleaved batches until the median is stable):

- `copy`: a 4 GiB fp32 device-to-device copy, counting bytes read plus bytes written;
- `matmul`: an 8192^3 product through torch (cuBLAS) on random data for bf16, fp16, tf32 (fp32
  inputs with TF32 allowed) and fp32 (TF32 off), at 2*M*N*K FLOPs;
- `launch`: the time per launch of an empty Triton kernel issued back to back (host launch cost and
  the device's minimum kernel time together: what a tiny kernel cannot go below).

Measured ceilings are cached as JSON under `<cache>/profiling/ceilings/<key>.json`, where `<cache>`
is `.diagnose_cache/` or `$DIAGNOSE_CACHE_DIR` and the key hashes the device name, the driver and
the torch, CUDA and Triton versions: a new driver or library measures again.

For targets that cannot be run here (H100/H200, MI300, Ascend 910B/950) the roof comes from the
nominal datasheet peaks of `diagnose/targets.py` (`nominal(target)`), marked `measured=False`.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from diagnose.cache import cache_root, read_json, write_json_atomic
from diagnose.errors import DiagnoseError
from diagnose.records import Record
from diagnose.runtime.runner import call
from diagnose.targets import Target
from diagnose.toolchain.placement import require
from diagnose.verify.timing import EventTimer, measure as time_variants

CEILINGS_VERSION = 1
CACHE_SUBDIR = ("profiling", "ceilings")
COPY_ELEMENTS = 2**30  # 4 GiB of fp32 per buffer: far beyond any L2
MATMUL_SIZE = 8192
MATMUL_DTYPES = ("bf16", "fp16", "tf32", "fp32")
LAUNCHES_PER_SAMPLE = 200
JOB = "diagnose.profiling.ceilings:ceilings_job"


@dataclass(frozen=True)
class Ceilings(Record):
    """The roof of one device: copy bandwidth (B/s), matmul FLOP/s per dtype, launch overhead (s).

    `measured` tells a measurement from datasheet numbers; `identity` is what the cache key hashes.
    """

    device: str
    copy_bytes_per_s: float | None
    matmul_flops_per_s: tuple[tuple[str, float], ...]
    launch_overhead_s: float | None
    measured: bool
    source: str
    identity: tuple[tuple[str, str], ...] = ()

    def flops_per_s(self, dtype: str) -> float | None:
        """The matmul rate for an input dtype (`bf16`, `fp16`, `tf32`, `fp32`); fp32 falls back to tf32
        only when no fp32 number exists."""
        table = dict(self.matmul_flops_per_s)
        return table.get(dtype) or (table.get("tf32") if dtype == "fp32" else None)

    @classmethod
    def from_dict(cls, data: dict) -> Ceilings:
        return cls(
            device=data["device"],
            copy_bytes_per_s=data.get("copy_bytes_per_s"),
            matmul_flops_per_s=tuple((k, float(v)) for k, v in data.get("matmul_flops_per_s", ())),
            launch_overhead_s=data.get("launch_overhead_s"),
            measured=bool(data.get("measured")),
            source=data.get("source", ""),
            identity=tuple((k, str(v)) for k, v in data.get("identity", ())),
        )


def nominal(target: Target) -> Ceilings:
    """The datasheet roof of a target (`diagnose/targets.py`): nominal, never measured."""
    peaks = target.peaks
    rates = [
        (dtype, tflops * 1e12)
        for dtype, tflops in (
            ("bf16", peaks.bf16_tflops),
            ("fp16", peaks.fp16_tflops),
            ("tf32", peaks.tf32_tflops),
            ("fp32", peaks.fp32_tflops),
        )
        if tflops
    ]
    return Ceilings(
        device=target.device,
        copy_bytes_per_s=peaks.hbm_bytes_per_s,
        matmul_flops_per_s=tuple(rates),
        launch_overhead_s=None,
        measured=False,
        source=f"nominal: {peaks.source}",
    )


# ---------------------------------------------------------------- cache (either process)


def cache_dir(root: str | Path | None = None) -> Path:
    path = Path(root) if root else cache_root()
    path = path.joinpath(*CACHE_SUBDIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(identity: dict[str, str]) -> str:
    blob = json.dumps([CEILINGS_VERSION, sorted(identity.items())])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def load_cached(identity: dict[str, str], root: str | Path | None = None) -> Ceilings | None:
    data = read_json(cache_dir(root) / f"{cache_key(identity)}.json")
    if not data or data.get("version") != CEILINGS_VERSION:
        return None
    return Ceilings.from_dict(data["ceilings"])


def store(ceilings: Ceilings, root: str | Path | None = None) -> Path:
    path = cache_dir(root) / f"{cache_key(dict(ceilings.identity))}.json"
    write_json_atomic(path, {"version": CEILINGS_VERSION, "ceilings": ceilings.to_dict()})
    return path


# ---------------------------------------------------------------- worker side (imports torch)


def driver_version() -> str:
    """The NVIDIA driver version (`nvidia-smi`), or the CUDA driver API version torch reports."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
        if out:
            return out.splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    import torch  # deferred: torch is heavy

    try:
        return f"cuda-driver-api-{torch._C._cuda_getDriverVersion()}"
    except Exception:  # noqa: BLE001 - a missing private API only weakens the key
        return "unknown"


def identity(device: str) -> dict[str, str]:
    """What a measurement depends on: the device, its driver, the libraries that run the kernels."""
    import torch  # deferred: torch is heavy
    import triton  # deferred: triton is heavy

    if device != "cuda":
        raise ValueError(f"ceilings are measured on cuda devices only, not {device!r}")
    props = torch.cuda.get_device_properties(0)
    return {
        "device": props.name,
        "sms": str(props.multi_processor_count),
        "capability": f"{props.major}.{props.minor}",
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "triton": triton.__version__,
    }


def _empty_kernel():
    import triton  # deferred: triton is heavy
    import triton.language as tl  # deferred: triton is heavy

    @triton.jit
    def empty_kernel(x_ptr, n):
        if tl.program_id(0) >= n:  # never true: the kernel does nothing, but it has an argument
            tl.store(x_ptr, 0)

    return empty_kernel


def measure(device: str = "cuda") -> Ceilings:
    """Measure copy bandwidth, matmul throughput per dtype and launch overhead on this device."""
    import torch  # deferred: torch is heavy

    ident = identity(device)
    timer = EventTimer(device)
    src = torch.randn(COPY_ELEMENTS, device=device)
    dst = torch.empty_like(src)
    (copy,) = time_variants(timer, {"copy": lambda src=src, dst=dst: dst.copy_(src)}, "copy")
    copy_rate = 2 * src.numel() * src.element_size() / (copy.median_ms * 1e-3)
    del src, dst
    torch.cuda.empty_cache()
    rates = []
    n = MATMUL_SIZE
    for label in MATMUL_DTYPES:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(label, torch.float32)
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = label == "tf32"
        try:
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            (mm,) = time_variants(timer, {"mm": lambda a=a, b=b: a @ b}, label)
            rates.append((label, 2 * n**3 / (mm.median_ms * 1e-3)))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        del a, b
    torch.cuda.empty_cache()
    launch = launch_overhead(device)
    return Ceilings(
        device=ident["device"],
        copy_bytes_per_s=copy_rate,
        matmul_flops_per_s=tuple(rates),
        launch_overhead_s=launch,
        measured=True,
        source="measured: copy 4 GiB fp32, torch matmul 8192^3, empty Triton kernel launches",
        identity=tuple(sorted(ident.items())),
    )


def launch_overhead(device: str = "cuda") -> float:
    """Seconds per launch of an empty Triton kernel issued back to back (median of 10 samples)."""
    import torch  # deferred: torch is heavy

    kernel = _empty_kernel()
    x = torch.zeros(1, device=device)
    for _ in range(20):  # compile and warm up
        kernel[(1,)](x, 1)
    torch.cuda.synchronize()
    samples = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(LAUNCHES_PER_SAMPLE):
            kernel[(1,)](x, 1)
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3 / LAUNCHES_PER_SAMPLE)
    return statistics.median(samples)


def cached_or_measured(
    device: str = "cuda", root: str | Path | None = None, refresh: bool = False
) -> tuple[Ceilings, bool]:
    """(ceilings, from_cache): the cached measurement for this device and versions, or a new one."""
    ident = identity(device)
    if not refresh:
        cached = load_cached(ident, root)
        if cached is not None:
            return cached, True
    fresh = measure(device)
    fresh = replace(fresh, identity=tuple(sorted(ident.items())))
    store(fresh, root)
    return fresh, False


def ceilings_job(payload: dict[str, Any]) -> dict:
    """Worker entry: `{"device", "cache_root", "refresh"}` -> `{"ceilings", "from_cache"}`."""
    ceilings, hit = cached_or_measured(
        payload.get("device", "cuda"), payload.get("cache_root"), bool(payload.get("refresh"))
    )
    return {"ceilings": ceilings.to_dict(), "from_cache": hit}


# ---------------------------------------------------------------- parent side


def ceilings_for(device: str = "cuda", refresh: bool = False, timeout_s: float = 900.0) -> tuple[Ceilings, bool]:
    """The device's ceilings from the cache or a measurement, run in a worker; UsageError without a device."""
    require(device)
    result = call(
        JOB,
        {"device": device, "cache_root": str(cache_root().resolve()), "refresh": refresh},
        timeout_s=timeout_s,
        memory_limit=32 * 2**30,
        user_code=False,
    )
    if not result.ok:
        raise DiagnoseError(f"measuring the ceilings failed ({result.failure.kind}): {result.failure.message}")
    return Ceilings.from_dict(result.value["ceilings"]), bool(result.value["from_cache"])
