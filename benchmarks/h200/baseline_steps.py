"""Where the baselines' worker spends its time: each step of `baseline_timing_job`'s loop timed alone, for
one task file on a CUDA device (the groups whose names do not start with `test_`).

    python3 benchmarks/h200/baseline_steps.py examples/softmax.py none     # torch.compile as it was: once
    python3 benchmarks/h200/baseline_steps.py examples/softmax.py false    # dynamic=False

Prints seconds per step (import, CUDA start, each group's draw, compile and first call, timing) and each
group's eager and compiled medians (ms). The second argument is `torch.compile`'s `dynamic` (none or false).
Session 37 (H100): `import torch` 3-4 s on the image without bytecode, the first compile 6-9 s; the fp16 softmax
group 0.1919 ms compiled once for every group (none), 0.1530 ms with dynamic=False (each group its own compile).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 1) // 4)))  # as the job
STARTED = time.perf_counter()
import torch  # noqa: E402 - timed: its import is the first step

from diagnose.verify import timing  # noqa: E402


class Laps:
    """Seconds since the last lap, printed with what they were spent on."""

    def __init__(self, start: float) -> None:
        self.last = start

    def __call__(self, what: str) -> None:
        now = time.perf_counter()
        print(f"{what:48s} {now - self.last:7.2f} s", flush=True)
        self.last = now


def main() -> None:
    lap = Laps(STARTED)
    lap("import torch and diagnose's timing")
    spec = importlib.util.spec_from_file_location("task", sys.argv[1])
    task = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(task)
    lap("import the task file")
    dynamic = {"none": None, "false": False}[sys.argv[2]] if len(sys.argv) > 2 else None
    model = task.Model(*task.get_init_inputs()).cuda()
    torch.cuda.synchronize()
    lap("the model on the device (CUDA's start)")
    timer = timing.EventTimer("cuda")
    for group, draw in task.get_input_groups().items():
        if group.startswith("test_"):
            continue
        torch.manual_seed(0)
        x = [t.cuda() if hasattr(t, "cuda") else t for t in draw()]
        torch.cuda.synchronize()
        lap(f"{group}: draw on the host, move")
        compiled = torch.compile(model, dynamic=dynamic)
        with torch.no_grad():
            compiled(*x)
        torch.cuda.synchronize()
        lap(f"{group}: compile and first call")
        with torch.no_grad():
            found = timing.measure(timer, {"eager": lambda: model(*x), "compile": lambda: compiled(*x)}, group)
        lap(f"{group}: time " + " ".join(f"{t.variant}={t.median_ms:.4f}" for t in found))


if __name__ == "__main__":
    main()
