"""Counting the work of a task: minimal bytes and FLOPs per input group (worker side: runs user code).

- **Bytes**: every tensor input, every parameter and buffer of the reference `Model`, and every
  output, each counted once (`numel * element_size`): the least a kernel can move.
- **FLOPs**: `torch.utils.flop_counter.FlopCounterMode` around the reference's forward. It counts
  matrix products, convolutions and attention (2 per multiply-add) and nothing elementwise, which is
  what a roofline against the matmul rate wants; a reduction or an elementwise task counts 0 FLOPs
  and is memory-bound by construction.
- **Hints** win: a task's `ROOFLINE = {"bytes": ..., "flops": ...}` (numbers, or functions of the
  input list) replaces either count, for work a counter cannot see (gathers, custom attention).
- **dtype**: the floating dtype holding the most input bytes picks the matmul rate (`bf16`, `fp16`,
  `fp32`, ...).

On the `meta` device nothing is computed and nothing allocated (shapes flow through), which is how a
machine with no GPU counts the work of device-sized groups. A task that hints both bytes and FLOPs is
not run at all; groups whose reference cannot run on `meta` (one that reads tensor values, such as
`offsets.tolist()`) fall back to CPU tensors, which for device-sized groups can take minutes.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from diagnose.profiling.roofline import Work
from diagnose.verify.inputs import draw, group_table
from diagnose.verify.jobs import build_model

HINT = "ROOFLINE hint"
DTYPE_LABELS = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}


def tensor_bytes(values: Any) -> int:
    import torch  # deferred: torch is heavy

    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(tensor_bytes(v) for v in values)
    if isinstance(values, dict):
        return sum(tensor_bytes(v) for v in values.values())
    return 0


def dominant_dtype(inputs: list) -> str:
    import torch  # deferred: torch is heavy

    by_dtype: dict[str, int] = {}
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.dtype.is_floating_point:
            label = DTYPE_LABELS.get(str(value.dtype).removeprefix("torch."), str(value.dtype))
            by_dtype[label] = by_dtype.get(label, 0) + tensor_bytes(value)
    return max(by_dtype, key=by_dtype.get) if by_dtype else "fp32"


def hinted(module: ModuleType, key: str, inputs: list) -> float | None:
    hints = getattr(module, "ROOFLINE", None) or {}
    value = hints.get(key)
    if value is None:
        return None
    return float(value(inputs) if callable(value) else value)


def count_work(module: ModuleType, model: Any, inputs: list, group: str) -> Work:
    """The work of one group: runs `model` once on `inputs` (any device, `meta` included), unless the
    task hints both bytes and FLOPs, which leave nothing to count."""
    import torch  # deferred: torch is heavy
    from torch.utils.flop_counter import FlopCounterMode  # deferred: torch is heavy

    hint_bytes, hint_flops = hinted(module, "bytes", inputs), hinted(module, "flops", inputs)
    dtype = dominant_dtype(list(inputs))
    if hint_bytes is not None and hint_flops is not None:
        return Work(group=group, bytes=hint_bytes, flops=hint_flops, dtype=dtype, bytes_source=HINT, flops_source=HINT)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        outputs = model(*inputs)
    state = list(model.parameters()) + list(model.buffers())
    counted_bytes = tensor_bytes(list(inputs)) + tensor_bytes(state) + tensor_bytes(outputs)
    flops = float(counter.get_total_flops())
    return Work(
        group=group,
        bytes=hint_bytes if hint_bytes is not None else float(counted_bytes),
        flops=hint_flops if hint_flops is not None else flops,
        dtype=dtype,
        bytes_source=HINT if hint_bytes is not None else "inputs+outputs",
        flops_source=HINT if hint_flops is not None else ("FlopCounterMode" if flops else "none"),
    )


def draw_on_meta(module: ModuleType, group: str) -> list:
    """A group's inputs as meta tensors: the task's own factories run under `torch.device("meta")`."""
    import torch  # deferred: torch is heavy

    torch.manual_seed(0)
    value = group_table(module)[group]
    with torch.device("meta"):
        inputs = list(value() if callable(value) else value)
    return [v.to("meta") if isinstance(v, torch.Tensor) else v for v in inputs]


def count_work_offline(module: ModuleType, group: str) -> tuple[Work, str]:
    """(work, how): from the hints alone, counted on `meta` tensors, or on CPU tensors when the reference
    refuses `meta`."""
    import torch  # deferred: torch is heavy

    init_inputs = list(module.get_init_inputs())
    try:
        model = build_model(module.Model, init_inputs, "cpu").to("meta")
        work, how = count_work(module, model, draw_on_meta(module, group), group), "meta"
    except Exception:  # noqa: BLE001 - user code that cannot run on meta is counted the slow way
        inputs, _ = draw(module, group, 0)
        model = build_model(module.Model, init_inputs, "cpu")
        with torch.no_grad():
            work, how = count_work(module, model, inputs, group), "cpu"
    return work, "hints" if work.bytes_source == work.flops_source == HINT else how
