"""The guards of the harness's processes, each in a fresh interpreter as the workers are: the launch wrapper
a candidate runs under (`diagnose.verify.instrument.watch_launches` wraps Triton's classes for the whole
process), and the parent that holds the reference outputs made non-dumpable."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json
    import torch
    import triton
    import triton.language as tl
    from diagnose.verify import instrument

    log = instrument.LaunchLog()
    watched = instrument.watch_launches(log, ghost=GHOST)

    def make():  # a kernel made after the wrapping, inside a function
        @triton.jit
        def fill(out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, 1.0, mask=offs < n)
        return fill

    fill = make()
    out = torch.zeros(8)
    fill[(1,)](out, 8, BLOCK=8)
    try:
        fill[(1,)](out, BLOCK=8)  # an argument missing: raises
        raised = False
    except Exception:
        raised = True
    report = {"launches": log.launches, "raised": raised, "written": float(out.sum()), "intact": instrument.intact(watched)}
    fill.run = lambda *a, **k: None  # a kernel's own `run` shadows the wrapper
    report["intact_after_shadowing"] = instrument.intact(watched)
    print(json.dumps(report))
""")


def watch(ghost: bool) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("GHOST", str(ghost))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_kernel_made_after_the_wrapping_is_counted_and_a_launch_that_raised_is_not():
    report = watch(ghost=False)
    assert report["launches"] == {"fill": 1}
    assert report["raised"] and report["written"] == 8.0
    assert report["intact"] and not report["intact_after_shadowing"]


def test_ghost_launches_are_counted_and_do_nothing():
    report = watch(ghost=True)
    assert report["launches"] == {"fill": 2}  # a ghost launch does not run, so it cannot raise
    assert report["written"] == 0.0


GRAPH_SCRIPT = textwrap.dedent("""
    import json
    import torch
    import triton
    import triton.language as tl
    from diagnose.verify import instrument

    class Graph:  # torch.cuda.CUDAGraph's three methods, without a GPU: replay runs what was captured
        def capture_begin(self, *args, **kwargs):
            pass

        def capture_end(self):
            pass

        def replay(self):
            pass

    log = instrument.LaunchLog()
    instrument.watch_launches(log)
    instrument.watch_graph_replays(log, Graph)

    @triton.jit
    def fill(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 1.0, mask=offs < n)

    out = torch.zeros(8)
    fill[(1,)](out, 8, BLOCK=8)  # a warm-up launch before the capture
    graph, empty = Graph(), Graph()
    graph.capture_begin()
    fill[(1,)](out, 8, BLOCK=8)
    graph.capture_end()
    empty.capture_begin()
    empty.capture_end()
    counts = [log.total()]
    for g in (graph, graph, empty):
        g.replay()
        counts.append(log.total())
    print(json.dumps(counts))
""")


def test_a_cuda_graph_replay_counts_the_launches_it_captured():
    """An honest candidate that captures its launch once and replays the graph launches on every call."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", GRAPH_SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, 3, 4, 4]


def test_the_process_holding_reference_outputs_is_not_dumpable():
    script = (
        "import ctypes; from diagnose.verify.harness import hide_memory; libc = ctypes.CDLL(None); "
        "before = libc.prctl(3, 0, 0, 0, 0); hide_memory(); print(before, libc.prctl(3, 0, 0, 0, 0))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["1", "0"], done.stderr[-1000:]  # PR_GET_DUMPABLE


def test_new_memory_reads_as_nan_inside_the_block_and_as_torch_ships_after_it(tmp_path):
    script = textwrap.dedent("""
        import sys, torch
        from pathlib import Path
        from diagnose.verify.uninitialized import uninitialized_filled
        with uninitialized_filled(Path(sys.argv[1])):
            inside = bool(torch.empty(1000).isnan().all()), torch.are_deterministic_algorithms_enabled()
        print(inside, torch.are_deterministic_algorithms_enabled(),
              torch.utils.deterministic.fill_uninitialized_memory)
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["(True,", "True)", "False", "True"]  # torch ships the fill switch on
