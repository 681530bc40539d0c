"""A sweep's entries on a Ray cluster (`diagnose bench ... --executor ray [--address HOST:PORT]`).

One actor per device runs the same per-entry job as the local executor (the sweep's `score_one`:
verification and timing in worker subprocesses), one entry at a time, so no two timings share a device.
An actor holds its device through Ray's resources: `num_gpus=1` for cuda (Ray sets
`CUDA_VISIBLE_DEVICES`), the custom resource `NPU` for npu (Ray sets `ASCEND_RT_VISIBLE_DEVICES`), and
`cpu_device` for cpu, which a cluster declares with `ray start --resources='{"cpu_device": N}'`.
Without an address a local Ray is started on 127.0.0.1 (its GPUs and NPUs found by Ray, or `jobs` CPU
devices) and stopped at the end. Actors see the driver's `DIAGNOSE_*` settings (`diagnose/knobs.py`).

Scheduling: the driver hands the next entry of its queue (longest first: `sweep.longest_first`) to
whichever device is idle. The store stays with the driver: an actor returns an entry's rows and the
driver writes them (`record`) as the local executor does, so a killed sweep resumes as it does here.

A lost actor (its process killed, its node gone: `RayActorError`) costs only the entry it was running:
that entry goes back to the head of the queue for the next idle device, and Ray restarts the actor
(`max_restarts=-1`) wherever its resource is free; the device takes entries again once it answers. An
entry whose device is lost `LOSSES` times is reported lost and not written: the next sweep runs it.

Ray runs whatever a client submits to its ports: a cluster belongs on a trusted network only.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import Counter, deque
from contextlib import contextmanager
from typing import Callable, Iterator

from diagnose.bench.suite import Entry
from diagnose.errors import DiagnoseError, UsageError

Rows = list[tuple[str, str, dict]]
RESOURCES = {"cuda": "GPU", "npu": "NPU", "cpu": "cpu_device"}  # the Ray resource one device holds
START_FLAGS = {"cuda": "--num-gpus=1", "npu": "--resources='{\"NPU\": 1}'", "cpu": "--resources='{\"cpu_device\": 1}'"}
LOSSES = 3  # an entry whose device was lost this many times waits for the next sweep
WAIT_S = 300.0  # how long to wait for a device to start (or restart) when no entry is running
LOST = "lost (its device's worker died {} times; the next sweep runs it)"


def require_ray() -> None:
    """A one-line usage error when Ray (an optional extra) is not installed."""
    try:
        import ray  # noqa: F401 - deferred: ray is heavy and optional
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'diagnose[ray]'") from None


def reachable(address: str) -> None:
    """A usage error at once when nothing listens at HOST:PORT (Ray itself retries for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return  # not HOST:PORT (`auto`, `ray://...`): Ray says what it makes of it
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as exc:
        raise UsageError(
            f"--address {address}: nothing answers there ({exc.strerror or exc}); start the "
            "cluster's head with `ray start --head --port=PORT`"
        ) from None


class DeviceWorker:
    """The actor that holds one device; Ray runs an actor's calls one at a time."""

    def __init__(self, device: str, number: int, threads: str | None = None):
        self.device, self.number = device, number
        # Ray gives an actor that reserves no CPU `OMP_NUM_THREADS=1`, which the job's worker processes would
        # inherit: their host work (drawing inputs, comparing outputs) on one thread, where the local executor's
        # uses every core (an H100 run: 4 entries in over 190 s against 5 in 111 s). The driver's own setting
        # (`threads`) stands; none: the workers choose, as they do locally.
        if threads is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = threads

    def hello(self, fingerprint: Callable[[], str]) -> tuple[str, str]:
        """Where this actor runs, and its device's toolchain fingerprint (which also checks the device)."""
        import ray  # deferred: ray is heavy and optional

        ids = ray.get_runtime_context().get_accelerator_ids().get(RESOURCES[self.device]) or [str(self.number)]
        return f"{ray.util.get_node_ip_address()} {self.device}:{','.join(ids)} (pid {os.getpid()})", fingerprint()

    def run(self, job: Callable[[Entry], Rows], entry: Entry) -> Rows:
        return job(entry)


class Devices:
    """The device actors of a cluster: `fingerprint` is their toolchain, `run` sweeps entries over them.
    `ray` is the module (tests hand in a stand-in that plays the cluster's part)."""

    def __init__(self, ray, actors: list, fingerprint: Callable[[], str]):
        self.ray, self.probe = ray, fingerprint
        self.where: dict[int, str] = {}  # actor number -> where it runs now (a restart may move it)
        answers = {actor.hello.remote(fingerprint): n for n, actor in enumerate(actors)}
        ready, _ = ray.wait(list(answers), num_returns=len(answers), timeout=WAIT_S)
        prints = {}
        for ref in ready:
            try:
                self.where[answers[ref]], prints[answers[ref]] = self.answer(ref)
            except ray.exceptions.RayActorError:
                continue  # died while starting: the others go on
        if not prints:
            raise UsageError(f"no device of the Ray cluster answered (waited up to {WAIT_S:.0f} s)")
        if len(set(prints.values())) > 1:
            raise UsageError(
                "the cluster's devices differ (a sweep's rows carry one toolchain): "
                + "; ".join(f"{self.where[n]}: {p}" for n, p in sorted(prints.items()))
            )
        self.fingerprint = next(iter(prints.values()))
        self.actors = {n: actors[n] for n in self.where}  # a device that did not start stays out

    def answer(self, ref) -> tuple[str, str]:
        """A `hello` answer; a device that cannot run the sweep (no torch there, no device) is a usage error."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:
            raise UsageError(f"a Ray worker cannot run the sweep: {str(exc.cause).splitlines()[0]}") from None

    def run(
        self,
        job: Callable[[Entry], Rows],
        entries: list[Entry],
        record: Callable[[Entry, Rows], str],
        start_within_s: float | None = None,
    ) -> Iterator[tuple[Entry, str | None, str]]:
        """(entry, outcome, where it ran) for each entry as it finishes, its rows written by `record` here
        on the driver. The entries are handed out in their order; none starts past `start_within_s` (its
        outcome is None)."""
        ray, began = self.ray, time.monotonic()
        queue, losses, job_ref = deque(entries), Counter(), ray.put(job)
        idle = list(self.actors)
        running: dict = {}  # ObjectRef of a run -> (actor number, entry)
        restarting: dict = {}  # ObjectRef of a hello -> actor number: idle again once it answers
        while queue or running:
            while idle and queue:
                entry = queue.popleft()
                if start_within_s is not None and time.monotonic() - began > start_within_s:
                    yield entry, None, ""
                    continue
                n = idle.pop(0)
                running[self.actors[n].run.remote(job_ref, entry)] = (n, entry)
            if not running and not restarting:
                break  # every device is gone for good
            done, _ = ray.wait(list(running) + list(restarting), num_returns=1, timeout=None if running else WAIT_S)
            if not done:
                break  # no device came back in time
            ref = done[0]
            if ref in restarting:
                n = restarting.pop(ref)
                try:
                    where, toolchain = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError):
                    continue  # gone for good (`ray.kill(no_restart=True)`), or broken there: the others go on
                if toolchain == self.fingerprint:  # restarted on a device unlike the others: left out
                    self.where[n] = where
                    idle.append(n)
                continue
            n, entry = running.pop(ref)
            try:
                groups = ray.get(ref)
            except ray.exceptions.RayActorError:
                losses[entry.id] += 1
                if losses[entry.id] < LOSSES:
                    queue.appendleft(entry)
                else:
                    yield entry, LOST.format(losses[entry.id]), self.where[n]
                restarting[self.actors[n].hello.remote(self.probe)] = n
                continue
            except ray.exceptions.RayTaskError as exc:  # the job catches every error of an entry: this is ours
                raise DiagnoseError(f"{self.where[n]}: {str(exc.cause).splitlines()[0]}") from None
            yield entry, record(entry, groups), self.where[n]
            idle.append(n)
        for entry in queue:
            yield entry, LOST.format(losses[entry.id]), ""


@contextmanager
def devices(address: str | None, device: str, cpu_devices: int, fingerprint: Callable[[], str]) -> Iterator[Devices]:
    """One actor per device of the cluster at `address` (a local Ray when None, with `cpu_devices` CPU
    devices), stopped at the end, as is a Ray this started."""
    import ray  # deferred: ray is heavy and optional

    started = not ray.is_initialized()
    if started and address:
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError as exc:
            raise UsageError(
                f"--address {address}: {exc} (is `ray start --head` running there? If the cluster "
                "authenticates by token, set RAY_AUTH_MODE=token and its token here too)"
            ) from None
    elif started:
        ray.init(
            address="local",
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
            resources={"cpu_device": cpu_devices} if device == "cpu" else None,
        )
    try:
        resource = RESOURCES[device]
        count = int(ray.cluster_resources().get(resource, 0))
        if not count:
            raise UsageError(
                f"the Ray cluster has no {resource} resource for --device {device}: start its "
                f"workers with `ray start --address=HEAD:PORT {START_FLAGS[device]}`"
            )
        env = {k: v for k, v in os.environ.items() if k.startswith("DIAGNOSE_")}
        worker = ray.remote(DeviceWorker).options(
            num_cpus=0,
            num_gpus=1 if device == "cuda" else 0,
            resources={} if device == "cuda" else {resource: 1},
            # Ray restarts a lost actor; the driver resubmits its entry (to whichever device is idle first).
            max_restarts=-1,
            max_task_retries=0,
            runtime_env={"env_vars": env} if env else None,
        )
        actors = [worker.remote(device, n, os.environ.get("OMP_NUM_THREADS")) for n in range(count)]
        try:
            yield Devices(ray, actors, fingerprint)
        finally:
            for actor in actors:
                ray.kill(actor)
    finally:
        if started:
            ray.shutdown()
