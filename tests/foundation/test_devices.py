"""The device abstraction on constructed inputs: which torch module times each device, where each
device's jobs run (toolchain records made here), the timing protocol on a stand-in backend, and the
one-line error for `--device npu` where no NPU is usable."""

from __future__ import annotations

import statistics
import sys

import pytest

from diagnose.errors import UsageError
from diagnose.runtime import devices
from diagnose.toolchain import npu, placement
from diagnose.runtime.devices import Placement
from diagnose.task import load_task
from diagnose.toolchain.config import ToolchainRecord, save_record
from diagnose.verify import timing
from diagnose.verify.harness import CheckOptions, verify
from tests.conftest import EXAMPLES

NO_TORCH_NPU = "torch_npu is not installed"


def record(python: str = "/envs/ascend/bin/python", **capabilities) -> ToolchainRecord:
    return ToolchainRecord(
        name="ascend",
        python=python,
        venv="/envs/ascend",
        requirements=(),
        versions=(),
        created="2026-12-02T00:00:00+00:00",
        setup_seconds=0.0,
        capabilities=capabilities,
    )


def test_each_device_names_its_timer_and_its_extension():
    assert devices.kind("cuda").events == "cuda" and devices.kind("npu").events == "npu"
    assert devices.kind("npu").extension == "torch_npu" and devices.kind("cuda").extension is None
    assert devices.timed("cuda") and devices.timed("npu") and not devices.timed("cpu")
    assert devices.interpreted("cpu") and not devices.interpreted("npu") and not devices.interpreted("tpu")
    with pytest.raises(UsageError, match="nothing is timed"):
        devices.events("cpu")
    with pytest.raises(UsageError, match="unknown device"):
        devices.kind("tpu")


def test_cpu_runs_in_this_interpreter_with_triton_interpreted():
    where = placement.require("cpu")
    assert where == Placement("cpu", interpret=True)
    assert where.runner_options() == {"python": None, "env": None, "interpret": True}


def test_npu_jobs_go_to_the_toolchain_whose_probe_saw_an_npu():
    where, why = npu.decide(record(npu=None, npu_devices=8), here=NO_TORCH_NPU)
    assert why == "" and where.device == "npu" and where.python == "/envs/ascend/bin/python"
    assert not where.interpret
    # compile workers keep torch from auto-loading torch_npu; NPU jobs need it
    assert npu.AUTOLOAD not in dict(where.env)


def test_npu_jobs_stay_in_this_interpreter_when_only_it_has_an_npu():
    blocked = record(npu="torch_npu is not installed in the Ascend toolchain", npu_devices=0)
    assert npu.decide(blocked, here=None) == (Placement("npu"), "")
    assert npu.decide(None, here=None) == (Placement("npu"), "")


@pytest.mark.parametrize(
    "rec, here, words",
    [
        (None, NO_TORCH_NPU, ["the Ascend toolchain is not set up", "diagnose toolchain setup ascend", NO_TORCH_NPU]),
        (
            record(npu="torch_npu is not installed in the Ascend toolchain", npu_devices=0),
            NO_TORCH_NPU,
            ["torch_npu is not installed in the Ascend toolchain", f"this Python: {NO_TORCH_NPU}"],
        ),
        (
            record(npu="torch_npu needs the CANN runtime (ASCEND_HOME_PATH not set)"),
            "torch_npu sees no NPU device",
            ["Ascend toolchain: torch_npu needs the CANN runtime", "this Python: torch_npu sees no NPU device"],
        ),
        (record(npu=None, npu_devices=0), NO_TORCH_NPU, ["Ascend toolchain: torch_npu sees no NPU device"]),
    ],
)
def test_no_usable_npu_is_one_line_naming_what_each_interpreter_lacks(rec, here, words):
    where, why = npu.decide(rec, here)
    assert where is None and "\n" not in why and why.startswith("device npu is not available here: ")
    for w in words:
        assert w in why


def test_the_toolchain_record_is_read_from_the_cache(tmp_path):
    save_record(record(python=sys.executable, npu=None, npu_devices=1), tmp_path)
    where, why = npu.npu_placement(tmp_path)
    assert why == "" and where.python == sys.executable


def test_a_placement_for_another_device_is_refused():
    with pytest.raises(UsageError, match="placement is for device npu"):
        verify(load_task(EXAMPLES / "vector_add.py"), CheckOptions(device="cpu", placement=Placement("npu")))


class Clock:
    """Stand-in for `torch.cuda` / `torch.npu`: events read a clock that each timed call advances by 1 ms."""

    def __init__(self):
        self.now_ms = 0.0
        self.syncs = 0
        clock = self

        class Event:
            def __init__(self, enable_timing: bool):
                assert enable_timing
                self.at = None

            def record(self):
                self.at = clock.now_ms

            def elapsed_time(self, end) -> float:
                return end.at - self.at

        self.Event = Event

    def synchronize(self):
        self.syncs += 1


def test_the_timing_protocol_flushes_and_times_on_the_backend_it_is_given():
    backend = Clock()
    timer = timing.EventTimer("cpu", backend=backend, flush_bytes=4096)
    flushed_before_each_call = []

    def fn():
        flushed_before_each_call.append(int(timer.flush_buffer.sum()) == 0)
        timer.flush_buffer.fill_(1)
        backend.now_ms += 1.0

    (t,) = timing.measure(timer, {"candidate": fn}, "g")
    assert t.median_ms == 1.0 and t.reps >= timing.MIN_REPS and t.stable
    assert backend.syncs > 0
    # warm-up calls are not flushed; every timed call is
    assert all(flushed_before_each_call[-t.reps :])
    assert timing.side_stream_ratio(timer, fn) == 1.0


class QueuedDevice:
    """Stand-in for a device that runs what the host queued, in order, on its own clock, and a host
    that spends `launch_ms` of its own clock launching each kernel and `wake_ms` waking from a sync.

    A kernel on the timed stream starts when it is launched or when that stream is free, whichever is
    later; an event reads the device clock when the timed stream reaches it. A side stream runs its own
    kernels in order beside it, each from its launch; only a sync, or the timed stream told to wait
    (`wait_side`), waits for them.
    """

    def __init__(self, launch_ms: float, wake_ms: float):
        self.launch_ms, self.wake_ms = launch_ms, wake_ms
        self.host_ms = self.device_ms = self.side_done_ms = 0.0
        self.timed, self.side = Stream(self, "timed"), Stream(self, "side")
        self.launched_on: list = []  # what `instrument.streams_noted` fills from Triton's launches
        device = self

        class Event:
            def __init__(self, enable_timing: bool = False):
                self.at = None

            def record(self):
                self.at = device.device_ms = max(device.host_ms, device.device_ms)

            def synchronize(self):
                device.host_ms = max(device.host_ms, self.at) + device.wake_ms

            def elapsed_time(self, end) -> float:
                return end.at - self.at

        self.Event = Event

    def current_stream(self):
        return self.timed

    def kernel(self, ms: float, side_stream: bool = False):
        self.host_ms += self.launch_ms
        self.launched_on.append(self.side if side_stream else self.timed)
        if side_stream:
            self.side_done_ms = max(self.side_done_ms, self.host_ms) + ms
        else:
            self.device_ms = max(self.host_ms, self.device_ms) + ms

    def wait_side(self):
        self.device_ms = max(self.device_ms, self.side_done_ms)

    def synchronize(self):
        self.host_ms = max(self.host_ms, self.device_ms, self.side_done_ms) + self.wake_ms


class Stream:
    def __init__(self, device: QueuedDevice, name: str):
        self.device, self.name = device, name

    def query(self) -> bool:
        done = self.device.side_done_ms if self is self.device.side else self.device.device_ms
        return done <= self.device.host_ms


def side_stream_cheat(device: QueuedDevice):
    """tests/fixtures/cheats/side_stream.py: 20 launches on a side stream, each kernel (0.05 ms) running
    while the host launches the next."""
    for _ in range(20):
        device.kernel(0.05, side_stream=True)


def test_a_loaded_host_is_not_work_on_a_side_stream():
    # a host that takes 0.6 ms to launch a 1 ms kernel and 0.3 ms to wake from a sync: the timed batch
    # hides both behind the device's queue, a call from an empty queue shows the launch
    device = QueuedDevice(launch_ms=0.6, wake_ms=0.3)
    timer = timing.EventTimer("cpu", backend=device, flush_bytes=4096)
    honest = lambda: device.kernel(1.0)  # noqa: E731
    assert statistics.median(timer.batch(honest, 20)) == pytest.approx(1.0)
    assert timing.side_stream_ratio(timer, honest) == pytest.approx(1.0)
    # a host slower than its kernel: the launch is the time either way
    assert timing.side_stream_ratio(timer, lambda: device.kernel(0.2)) == pytest.approx(1.0)

    escapes = lambda: device.kernel(2.0, side_stream=True)  # noqa: E731 - its work on another stream
    # the events without the sync see only the host's launch (0.6 ms); with it, the 2 ms behind it
    assert timing.side_stream_ratio(timer, escapes) == pytest.approx(2.6 / 0.6)


def test_side_stream_work_that_runs_while_the_host_launches_still_counts():
    # the cheat's host launches each kernel in 0.03 ms. Subtracting the host's time inside the call from
    # the synced sample read it no slower here (0.72 before the floor at 1) and let the cheat pass on the H200.
    device = QueuedDevice(launch_ms=0.03, wake_ms=0.3)
    timer = timing.EventTimer("cpu", backend=device, flush_bytes=4096)
    assert timing.side_stream_ratio(timer, lambda: side_stream_cheat(device)) > 1.5


def test_escaped_calls_are_side_stream_launches_still_running_once_the_timed_stream_is_done():
    device = QueuedDevice(launch_ms=0.03, wake_ms=0.3)
    timer = timing.EventTimer("cpu", backend=device, flush_bytes=4096)

    def overlapped():  # honest: work on both streams, the timed one waits for the side one
        device.kernel(0.5, side_stream=True)
        device.kernel(0.5)
        device.wait_side()

    assert timing.escaped_calls(timer, lambda: side_stream_cheat(device), device.launched_on, reps=5) == 5
    assert timing.escaped_calls(timer, overlapped, device.launched_on, reps=5) == 0
    assert timing.escaped_calls(timer, lambda: device.kernel(1.0), device.launched_on, reps=5) == 0


def test_streams_noted_wraps_each_launch_and_gives_the_kernel_back():
    from diagnose.verify import instrument

    class Kernel:
        def run(self, *args, **kwargs):
            return ("ran", args)

    kernel, current = Kernel(), ["s0"]
    with instrument.streams_noted([kernel], lambda: current[0]) as streams:
        assert kernel.run(1) == ("ran", (1,))
        current[0] = "s1"
        kernel.run(2)
    assert streams == ["s0", "s1"]
    assert "run" not in kernel.__dict__ and kernel.run(3) == ("ran", (3,)) and streams == ["s0", "s1"]


def test_npu_events_need_torch_npu():
    if placement.available("npu")[0]:
        pytest.skip("an NPU is usable here")
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            devices.events("npu")
    else:
        pytest.skip("torch_npu imports here")


@pytest.mark.parametrize("command", ["check", "optimize"])
def test_device_npu_without_an_npu_is_one_line_and_exit_2(cli, command, tmp_path):
    if placement.available("npu")[0]:
        pytest.skip("an NPU is usable here")
    result = cli(command, str(EXAMPLES / "vector_add.py"), "--device", "npu", env={"DIAGNOSE_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("diagnose: error: device npu is not available here"), result.stderr
    assert "the Ascend toolchain is not set up" in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "no run is left behind"


def test_the_timer_reads_the_events_pinned_before_the_candidate_ran():
    backend = Clock()
    pinned = timing.PinnedEvents.of(backend)
    timer = timing.EventTimer("cpu", backend=pinned, flush_bytes=4096)

    def fn():
        backend.now_ms += 1.0

    class Shorter(backend.Event):  # a candidate's module-level code replacing the module's names
        def elapsed_time(self, end) -> float:
            return 0.001

    backend.Event, backend.synchronize = Shorter, lambda: None
    (t,) = timing.measure(timer, {"candidate": fn}, "g")
    assert t.median_ms == 1.0 and pinned.replaced() == []


def test_a_method_patched_on_the_pinned_event_class_fails_the_timing():
    backend = Clock()
    pinned = timing.PinnedEvents.of(backend)
    real = backend.Event.elapsed_time
    backend.Event.elapsed_time = lambda self, end: 0.1 * real(self, end)
    assert pinned.replaced() == ["Event.elapsed_time"]
    with pytest.raises(RuntimeError, match="replaced Event.elapsed_time of the device's events"):
        timing.check_pinned(pinned)
