"""Sweeps on a Ray cluster (`--executor ray`): the local executor's rows, nothing lost when a worker is
killed mid-sweep, and a one-line error without Ray. One cluster serves the module: a head on 127.0.0.1
with two CPU "devices", its own processes (so a killed worker is a real one), stopped at the end."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from diagnose.bench import ray_executor, store
from diagnose.bench.suite import Entry
from diagnose.bench.sweep import SweepOptions, check_executor, longest_first, run_entries, sweep
from diagnose.errors import UsageError
from tests.conftest import FIXTURES, run_cli


@pytest.fixture(scope="module")
def cluster():
    """The cluster's address; its head runs in the foreground (`--block`), so stopping it stops them all.
    Its token (Ray >= 2.5x authenticates clients) is in the environment the tests' drivers inherit."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", "token")
        env.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
        pytest.importorskip("ray")  # after the variables: Ray reads them once
        yield from head_node()


def head_node():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Ray's socket paths live under its temp dir and must stay short (AF_UNIX allows ~107 bytes).
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    log = temp / "head.log"
    with open(log, "w") as out:
        head = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("ray")),
                "start",
                "--head",
                "--block",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--num-cpus=2",
                '--resources={"cpu_device": 2}',
                f"--temp-dir={temp}",
                "--include-dashboard=false",
                "--disable-usage-stats",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while "Ray runtime started" not in log.read_text():
            assert head.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()  # drains and stops the node's processes
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def small_suite(tmp_path):
    suite = tmp_path / "mini"
    (suite / "level1").mkdir(parents=True)
    for name in ("honest", "torch_only", "caches_output"):
        shutil.copy(FIXTURES / "cheats" / f"{name}.py", suite / "level1" / f"{name}.py")
    return suite


def verdicts(db: Path) -> list[tuple]:
    """What a sweep decided for each row: its status, correctness and failed checks (not the timings, nor the
    reasons' counts: a cheat's elements outside tolerance vary from run to run on either executor)."""
    return [
        (r.entry, r.group, r.status, r.version, r.data.get("correct"), r.data.get("failed_checks"))
        for r in store.rows(store.connect(db))
    ]


@pytest.mark.slow
def test_a_ray_sweep_from_the_command_line_writes_the_local_executors_rows(cluster, small_suite, tmp_path):
    ray_db, local_db = tmp_path / "ray.sqlite", tmp_path / "local.sqlite"
    result = run_cli(
        "bench", str(small_suite), "--seeds", "2", "--store", str(ray_db), "--executor", "ray", "--address", cluster
    )
    assert result.returncode == 1, result.stderr  # two cheats fail
    assert "3 run, 0 already done, 2 failed" in result.stderr
    sweep(small_suite, local_db, SweepOptions(seeds=2))
    assert verdicts(ray_db) == verdicts(local_db) and len(verdicts(ray_db)) == 3
    # progress says where each entry ran: both CPU devices took one
    where = re.findall(r"^level1/\w+: \w+ on \S+ (cpu:\d)", result.stderr, re.M)
    assert len(where) == 3 and set(where) == {"cpu:0", "cpu:1"}, result.stderr


@dataclass(frozen=True)
class StallsOnce:
    """A job whose entry `stall` waits on its first run, its pid in `marker`, to be killed there."""

    marker: Path

    def __call__(self, entry: Entry) -> list[tuple[str, str, dict]]:
        if entry.id == "stall" and not self.marker.exists():
            self.marker.with_suffix(".tmp").write_text(str(os.getpid()))
            self.marker.with_suffix(".tmp").rename(self.marker)
            time.sleep(120)
        return [("*", "passed", {"ran": entry.id})]


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_loses_no_entry(cluster, tmp_path):
    entries = [Entry(name, Path(f"{name}.py"), None, "", "", name) for name in ("stall", "a", "b", "c")]
    marker = tmp_path / "stalled.pid"

    def kill_the_stalled_worker():
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(marker.read_text()), signal.SIGKILL)

    killer = threading.Thread(target=kill_the_stalled_worker)
    killer.start()
    seen = {}
    db = tmp_path / "r.sqlite"
    summary = run_entries(
        "s",
        entries,
        StallsOnce(marker),
        db,
        SweepOptions(executor="ray", ray_address=cluster),
        lambda entry, outcome: seen.setdefault(entry.id, outcome),
    )
    killer.join()
    assert (summary.ran, summary.failed) == (4, 0), seen
    assert {r.entry: (r.status, r.data) for r in store.rows(store.connect(db))} == {
        name: ("passed", {"ran": name}) for name in ("stall", "a", "b", "c")
    }
    assert f"(pid {marker.read_text()})" not in seen["stall"], "the killed worker's entry ran again elsewhere"


class ReportsThreads:
    """A job that reports the `OMP_NUM_THREADS` a worker process it starts sees."""

    def __call__(self, entry: Entry) -> list[tuple[str, str, dict]]:
        seen = subprocess.run(
            [sys.executable, "-c", "import os; print(os.environ.get('OMP_NUM_THREADS'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return [("*", "passed", {"threads": seen})]


@pytest.mark.slow
@pytest.mark.parametrize("driver", [None, "3"])
def test_workers_on_ray_get_the_drivers_threads_not_rays_one(cluster, tmp_path, monkeypatch, driver):
    """Ray sets OMP_NUM_THREADS=1 in an actor that reserves no CPU; the job's workers must not inherit it."""
    if driver is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", driver)
    db = tmp_path / "r.sqlite"
    run_entries(
        "s",
        [Entry("a", Path("a.py"), None, "", "", "a")],
        ReportsThreads(),
        db,
        SweepOptions(executor="ray", ray_address=cluster),
        lambda entry, outcome: None,
    )
    assert [r.data for r in store.rows(store.connect(db))] == [{"threads": str(driver)}]


def test_ray_not_installed_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(UsageError, match=r"^--executor ray needs Ray: pip install 'diagnose\[ray\]'$"):
        check_executor(SweepOptions(executor="ray"))
    check_executor(SweepOptions())  # the local executor needs nothing


def test_executor_options_are_checked():
    with pytest.raises(UsageError, match="unknown executor 'dask'"):
        check_executor(SweepOptions(executor="dask"))
    with pytest.raises(UsageError, match="--address is for --executor ray"):
        check_executor(SweepOptions(ray_address="10.0.0.1:6379"))
    with pytest.raises(UsageError, match="--jobs is for one machine"):
        check_executor(SweepOptions(executor="ray", ray_address="10.0.0.1:6379", jobs=2))


def test_a_cluster_that_does_not_answer_is_one_line_at_once():
    with pytest.raises(UsageError, match=r"^--address 127.0.0.1:1: nothing answers there"):
        ray_executor.reachable("127.0.0.1:1")  # what check_executor asks once Ray is there


def test_entries_go_longest_first_those_never_run_first(tmp_path):
    def entry(name: str, size: int) -> Entry:
        (tmp_path / f"{name}.py").write_text("#" * size)
        return Entry(name, tmp_path / f"{name}.py", None, "", "", name)

    entries = [entry("short", 10), entry("long", 10), entry("new_small", 5), entry("new_big", 50)]
    order = longest_first(entries, {"short": 1.0, "long": 30.0})
    assert [e.id for e in order] == ["new_big", "new_small", "long", "short"]


def test_wall_times_come_from_the_newest_rows(tmp_path):
    connection = store.connect(tmp_path / "r.sqlite")
    store.write_entry(connection, "s", "a", "score", "old", [("g", "passed", {"phases": [["total", 9.0]]})])
    time.sleep(0.01)
    store.write_entry(
        connection,
        "s",
        "a",
        "score",
        "new",
        [("g", "passed", {"phases": [["ref", 1.0], ["total", 2.5]]}), ("h", "passed", {"phases": [["total", 2.5]]})],
    )
    store.write_entry(connection, "s", "b", "score", "v", [("*", "failed", {"failure": {}})])
    assert store.wall_times(connection, "s", "score") == {"a": 2.5}


@pytest.mark.slow
def test_a_cluster_without_the_sweeps_devices_says_how_to_add_them(cluster):
    entries = [Entry("a", Path("a.py"), None, "", "", "a")]
    with pytest.raises(UsageError, match=r"no NPU resource for --device npu: .*--resources='\{\"NPU\": 1\}'"):
        run_entries(
            "s",
            entries,
            StallsOnce(Path("unused")),
            Path("unused.sqlite"),
            SweepOptions(executor="ray", ray_address=cluster, device="npu"),
            None,
        )


class StandIn:
    """What `Devices` uses of Ray, with calls answered at once: a device's `run` of an entry in `fatal`
    loses the actor, and its next `hello` (Ray restarted it) gives the toolchain its `toolchains` list next."""

    class exceptions:
        class RayActorError(Exception):
            pass

        class RayTaskError(Exception):
            cause = None

    @dataclass(frozen=True, eq=False)  # hashed by identity, as Ray's ObjectRefs are told apart
    class Ref:
        value: object

    class Actor:
        def __init__(self, name: str, toolchains: list[str], fatal: set[str]):
            ref, died = StandIn.Ref, StandIn.exceptions.RayActorError()
            hello = lambda _: ref((name, toolchains.pop(0)))
            run = lambda job, entry: ref(died if entry.id in fatal else job(entry))
            self.hello, self.run = StandIn.Method(hello), StandIn.Method(run)

    @dataclass(frozen=True)
    class Method:
        remote: Callable

    put = staticmethod(lambda value: value)

    @staticmethod
    def wait(refs, num_returns, timeout=None):
        return refs[:num_returns], refs[num_returns:]

    @staticmethod
    def get(ref):
        if isinstance(ref.value, Exception):
            raise ref.value
        return ref.value


def test_an_entry_that_keeps_losing_its_device_waits_for_the_next_sweep():
    """`x` kills whichever actor runs it: it is retried on the next idle device until `LOSSES` losses, then
    left unwritten; the device restarted unlike the others (a new toolchain) stays out; the rest pass."""
    entries = [Entry(name, Path(f"{name}.py"), None, "", "", name) for name in ("x", "a", "b")]
    actors = [StandIn.Actor("A", ["fp", "other"], {"x"}), StandIn.Actor("B", ["fp", "fp", "fp"], {"x"})]
    cluster = ray_executor.Devices(StandIn, actors, lambda: "fp")
    recorded = []
    outcomes = list(
        cluster.run(
            lambda entry: [("*", "passed", {})], entries, lambda entry, rows: recorded.append(entry.id) or "passed"
        )
    )
    assert [(e.id, outcome, where) for e, outcome, where in outcomes] == [
        ("a", "passed", "B"),
        ("x", ray_executor.LOST.format(3), "B"),
        ("b", "passed", "B"),
    ]
    assert recorded == ["a", "b"], "a lost entry is not written: the next sweep runs it"
