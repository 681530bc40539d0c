"""How many calls, and how many seconds, the candidate's timing job spends on one group, by how long a call takes.

    python benchmarks/timing_calls.py [--call-ms 1 300 3000]

Runs the timing job's three measurements (`timing.measure`, `side_stream_ratio`, `escaped_calls`) on a function
that sleeps `--call-ms`, timed by the host's clock (a stand-in for the device's events), and prints a Markdown
table: call ms, calls in the timing loop, calls in all, wall seconds. A second-long call (a full TPC-H query
reading Parquet) is where fixed repetition counts cost minutes.
"""

from __future__ import annotations

import argparse
import time

from diagnose.verify import timing


class Event:
    def __init__(self, enable_timing: bool = True) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "Event") -> float:
        return (end.at - self.at) * 1e3


class Stream:
    def query(self) -> bool:
        return True


class HostClock:
    """torch.cuda's `Event`, `synchronize` and `current_stream`, on the host's clock."""

    Event = Event

    @staticmethod
    def synchronize() -> None:
        pass

    @staticmethod
    def current_stream() -> Stream:
        return Stream()


def one(call_ms: float) -> tuple[int, int, float]:
    calls = 0

    def call() -> None:
        nonlocal calls
        calls += 1
        time.sleep(call_ms / 1e3)

    timer = timing.EventTimer("cpu", backend=HostClock, flush_bytes=4096)
    begin = time.perf_counter()
    (measured,) = timing.measure(timer, {"candidate": call}, "g")
    in_loop = calls
    timing.side_stream_ratio(timer, call, call_ms=measured.median_ms)
    timing.escaped_calls(timer, call, [], call_ms=measured.median_ms)
    return in_loop, calls, time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--call-ms", type=float, nargs="+", default=[1.0, 300.0, 3000.0])
    args = parser.parse_args()
    print("| call ms | calls in the timing loop | calls in all | seconds |")
    print("|---|---|---|---|")
    for call_ms in args.call_ms:
        in_loop, calls, seconds = one(call_ms)
        print(f"| {call_ms:g} | {in_loop} | {calls} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
