"""The command line: `diagnose check | triage | inspect | decompose ...`.

Exit codes (see `diagnose/errors.py`): 0 success, 1 the candidate failed verification or findings were
reported, 2 bad usage or bad input, 3 internal error or missing toolchain, 130 interrupted (Ctrl-C).
Errors print one line, the command line's own (a bad option value, a missing argument) too;
`--debug`, before or after the command, shows the traceback instead.
"""

from __future__ import annotations

import functools
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Callable, List, Optional

import typer
from rich.console import Console
from typer.core import TyperGroup

from diagnose import knobs
from diagnose.errors import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    DiagnoseError,
    UsageError,
)

# Each command imports its own code when it runs (`# deferred: command code`): `diagnose --help` loads
# typer, rich and the two modules above, and each command what it uses.

# The global options, with how many values each takes: they are accepted after the command too.
GLOBAL_OPTIONS = {"--debug": 0, "--cache-dir": 1}
# click's usage error (a bad option value, a missing argument), the base of the `BadParameter` typer
# re-exports; typer vendors click, so it is found through the class typer raises.
ClickUsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def hoist_global_options(args: list[str]) -> list[str]:
    """`diagnose check task.py --debug` as `diagnose --debug check task.py` (up to a `--`)."""
    end = args.index("--") if "--" in args else len(args)
    front, rest, i = [], [], 0
    while i < end:
        name = args[i].split("=", 1)[0]
        if i > 0 and name in GLOBAL_OPTIONS:
            width = 1 if "=" in args[i] else 1 + GLOBAL_OPTIONS[name]
            front += args[i : i + width]
            i += width
        else:
            rest.append(args[i])
            i += 1
    return front + rest + args[end:]


class DiagnoseGroup(TyperGroup):
    """The top-level command group: global options anywhere, and click's own usage errors in one line."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(list(args)))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ClickUsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `diagnose toolchain`: the help is the answer
                raise
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            typer.echo(f"diagnose: error: {exc.format_message()}{where}", err=True)
            raise typer.Exit(EXIT_USAGE) from None


app = typer.Typer(
    cls=DiagnoseGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Diagnose slow Triton kernels and verify faster ones.",
)
state = {"debug": False}


@app.callback()
def main_options(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Root of the caches (runs, compiles) instead of DIAGNOSE_CACHE_DIR or the defaults."
    ),
):
    state["debug"] = debug
    if cache_dir is not None:
        if cache_dir.exists() and not cache_dir.is_dir():
            raise typer.BadParameter(f"{cache_dir} is not a folder", param_hint="'--cache-dir'")
        # The layers and workers read the cache root from the environment (`diagnose.knobs`); restored
        # when the command ends.
        ctx.with_resource(knobs.scope(cache_dir=cache_dir))


def positive(value: Optional[float]) -> Optional[float]:
    """An option that must be more than 0 when given (seconds, GiB)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be more than 0, not {value:g}")
    return value


def preference(value: str) -> str:
    """`--prefer`: torch or triton."""
    if value not in ("torch", "triton"):
        raise typer.BadParameter(f"must be torch or triton, not {value}")
    return value


TIMEOUT_HELP = (
    "Seconds each worker that runs your code may run (default: DIAGNOSE_TIMEOUT_S, else each "
    "step's own limit: 600 for a verification)."
)


def worker_timeout(timeout: Optional[float]):
    """`--timeout` for every worker the command starts, whatever layer starts it (`diagnose.knobs`)."""
    return knobs.scope(timeout_s=timeout)


class CtrlC:
    """Ctrl-C (SIGINT) during a long command: raises KeyboardInterrupt as Python does, and is remembered, so
    that an `except BaseException` in a library callback (LangGraph's futures have them) that swallows the
    exception cannot turn an interrupted run into a finished one; `checked(f)` raises again at the next
    progress callback, and `raise_if_pressed()` once the work returns."""

    def __init__(self):
        self.pressed = False
        self.previous = None

    def __enter__(self) -> "CtrlC":
        if threading.current_thread() is threading.main_thread():  # handlers live in the main thread only
            self.previous = signal.signal(signal.SIGINT, self.on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def on_sigint(self, signum, frame) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def raise_if_pressed(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt

    def checked(self, callback: Callable) -> Callable:
        def call(*args, **kwargs):
            self.raise_if_pressed()
            return callback(*args, **kwargs)

        return call


def phase_line(command: str) -> Callable[[str], None]:
    """Progress on stderr, one line as each step of a verification starts (stdout stays the result's)."""
    from diagnose.verify.harness import PHASES  # deferred: command code

    return lambda phase: typer.echo(f"[{command}] {phase}: {PHASES.get(phase, phase)}", err=True)


def warm_workers(device: str) -> None:
    """Start the warm zygote of this command's workers before its own imports and the task's loading
    (`runner.prestart`), for the devices whose workers run in this interpreter."""
    if device in ("cpu", "cuda"):
        from diagnose.runtime.runner import prestart  # deferred: command code

        prestart(interpret=device == "cpu")


def one_line_errors(command: Callable) -> Callable:
    """Turn every error into one line on stderr and its exit code, unless --debug."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except DiagnoseError as exc:
            if state["debug"]:
                raise
            from diagnose.task.harness import shown  # deferred: command code

            typer.echo(f"diagnose: error: {shown(str(exc))}", err=True)
            raise typer.Exit(exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - an internal error still gets one line and code 3
            if state["debug"]:
                raise
            typer.echo(f"diagnose: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True)
            raise typer.Exit(EXIT_INTERNAL)

    return wrapper


def split_codes(values: Optional[List[str]]) -> Optional[List[str]]:
    if not values:
        return None
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


# --- kernel modules: where a module's inputs come from (`diagnose/task/kernel_module.py`) ---------------

CALL_HELP = (
    "A kernel module's call to replay, e.g. 'rms_norm(x=f16[4096,8192], w=f16[8192], eps=1e-6)' "
    "(repeat for more input groups; grammar: diagnose/task/specs.py)."
)
LAUNCH_HELP = "Replay the N-th captured launch of the module (`diagnose capture --list FILE`); default: the largest."
REFERENCE_HELP = "A PyTorch reference for a kernel module, FILE.py:FUNCTION (default: the module's own code)."
LAUNCHES_HELP = "Folder of captured launch files (default: .diagnose/launches found from the file's folder up)."


def call_option():
    return typer.Option(None, "--call", help=CALL_HELP)


def launch_option():
    return typer.Option(None, "--launch", min=0, help=LAUNCH_HELP)


def reference_option():
    return typer.Option(None, "--reference", help=REFERENCE_HELP)


def launches_option():
    return typer.Option(None, "--launches", help=LAUNCHES_HELP)


def module_inputs(
    call: Optional[List[str]],
    launch: Optional[int],
    reference: Optional[str],
    launches: Optional[Path],
    kernel: Optional[str] = None,
):
    from diagnose.task import Inputs  # deferred: command code

    return Inputs(
        calls=tuple(call or ()),
        launch=launch,
        reference=reference,
        launches=str(launches) if launches else None,
        kernel=kernel,
    )


def module_task_file(path: Path, inputs, device: str = "cpu") -> str:
    from diagnose.capture.prepare import task_path  # deferred: command code

    return task_path(path, inputs, device, knobs.Knobs.read().timeout_s or 600.0)


def inspection_file(path: Path, inputs) -> str:
    from diagnose.capture.prepare import inspection_path  # deferred: command code

    return inspection_path(path, inputs)


def task_for(path: Path, inputs, device: str = "cpu", candidate: Optional[Path] = None):
    """The task of `path`: a file in the task format as it is, a kernel module through its launches."""
    from diagnose.capture.prepare import prepare  # deferred: command code

    return prepare(path, candidate, inputs, device=device, timeout_s=knobs.Knobs.read().timeout_s or 600.0)


@app.command()
@one_line_errors
def check(
    task: Path = typer.Argument(..., help="Task file (Model, get_inputs, get_init_inputs, ModelNew)."),
    candidate: Optional[Path] = typer.Option(None, "--candidate", help="ModelNew from this file instead."),
    device: str = typer.Option("cpu", "--device", help="cuda, npu, or cpu (Triton interpreter, not timed)."),
    seeds: int = typer.Option(3, "--seeds", min=1, help="Random input sets per input group."),
    group: Optional[List[str]] = typer.Option(None, "--group", help="Input group(s) to use."),
    timeout: Optional[float] = typer.Option(None, "--timeout", callback=positive, help=TIMEOUT_HELP),
    memory_limit: float = typer.Option(
        16.0, "--memory-limit", callback=positive, help="GiB of host memory each worker may use."
    ),
    no_compile: bool = typer.Option(False, "--no-compile", help="Skip the torch.compile baseline."),
    fixed_shapes: bool = typer.Option(
        False, "--fixed-shapes", help="Check only the task's own sizes (as FIXED_SHAPES = True in the file)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON report on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON report to this file."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
    call: Optional[List[str]] = call_option(),
    launch: Optional[int] = launch_option(),
    reference: Optional[str] = reference_option(),
    launches: Optional[Path] = launches_option(),
):
    """Verify a candidate (correctness, anti-cheat) and time it against its baselines.

    A kernel module (any file with @triton.jit kernels) is checked against its own original code on its
    captured launches or `--call` specs; `--candidate` is then an edited copy of the module."""
    from diagnose.outputs import check_file  # deferred: command code
    from diagnose.report.check_view import render_check  # deferred: command code
    from diagnose.report.reports import check_report  # deferred: command code
    from diagnose.verify.harness import CheckOptions, verify  # deferred: command code

    warm_workers(device)
    if out is not None:
        check_file(out, "--out")
    with worker_timeout(timeout):
        loaded = task_for(task, module_inputs(call, launch, reference, launches), device, candidate)
    if out is not None and out.exists() and out.resolve() in (loaded.reference_path, loaded.candidate_path):
        raise UsageError(f"{out}: refusing to overwrite the task file with the report")
    baselines = ("eager",) if no_compile else ("eager", "compile")
    module = loaded.origin is not None
    options = CheckOptions(
        device=device,
        seeds=tuple(range(seeds)),
        groups=tuple(group) if group else None,
        timeout_s=timeout or CheckOptions.timeout_s,
        memory_limit=int(memory_limit * 2**30),
        baselines=baselines if not module or reference else (),
        initial=loaded.reference_path if module and candidate else None,
        unseen_shapes=not fixed_shapes,
        on_phase=None if quiet else phase_line("check"),
    )
    with worker_timeout(timeout):
        verdict = verify(loaded, options)
    report = check_report(loaded, verdict)
    data = report.to_dict()
    if out is not None:
        out.write_text(json.dumps(data, indent=2))
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        render_check(report, Console())
    raise typer.Exit(EXIT_OK if verdict.passed else EXIT_FAILED)


@app.command()
@one_line_errors
def triage(
    paths: List[Path] = typer.Argument(..., help="Python files or folders to triage."),
    target: Optional[str] = typer.Option(None, "--target", help="cuda:sm90 (default), hip:gfx942, ascend:910b ..."),
    fmt: str = typer.Option("text", "--format", help="text, json or sarif."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these codes (comma-separated)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these codes (comma-separated)."),
    fail_on: str = typer.Option("warning", "--fail-on", help="error, warning, info or never."),
):
    """Fast source rules (no compiler, no device): findings with line and column."""
    from diagnose.triage.cli import triage_command  # deferred: command code

    code, text = triage_command(
        [str(p) for p in paths],
        target=target,
        fmt=fmt,
        select=split_codes(select),
        ignore=split_codes(ignore),
        fail_on=fail_on,
    )
    if text:
        typer.echo(text)
    raise typer.Exit(code)


@app.command()
@one_line_errors
def inspect(
    path: Path = typer.Argument(..., help="Task file, or a file of @triton.jit kernels with example specs."),
    target: str = typer.Option("cuda:sm90", "--target", help="cuda:sm80|sm90|sm100, hip:gfx942|gfx950."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    passes: bool = typer.Option(False, "--passes", help="Print the pass timeline."),
    diff_pass: Optional[str] = typer.Option(None, "--diff-pass", help="Print how this pass changed the module."),
    stage: Optional[str] = typer.Option(
        None, "--stage", help="Print an artifact (ttir, ttgir, llir, ptx, amdgcn, sass)."
    ),
    kernel: Optional[str] = typer.Option(None, "--kernel", help="Only this kernel."),
    timeout: Optional[float] = typer.Option(
        None,
        "--timeout",
        callback=positive,
        help="Seconds the compile worker may run (default: DIAGNOSE_TIMEOUT_S, else DIAGNOSE_IR_TIMEOUT_S, else 600).",
    ),
    call: Optional[List[str]] = call_option(),
    launch: Optional[int] = launch_option(),
    launches: Optional[Path] = launches_option(),
):
    """Compile offline for a target and map IR facts to source lines.

    A kernel module is compiled as its captured launches (the largest, or `--launch N`) or `--call`
    specs launch it, at their real shapes."""
    if target.startswith("ascend:"):
        from diagnose.ascend.inspect import inspect_ascend  # deferred: command code

        if diff_pass:
            raise UsageError("--diff-pass is not available for Ascend targets; --passes shows the pass timeline")
        with worker_timeout(timeout):
            code, text = inspect_ascend(
                str(path), target=target, fmt="json" if as_json else "text", passes=passes, stage=stage, kernel=kernel
            )
        if text:
            typer.echo(text)
        raise typer.Exit(code)
    from diagnose.ir.cli import inspect_command  # deferred: command code

    with worker_timeout(timeout):
        file = inspection_file(path, module_inputs(call, launch, None, launches, kernel))
        code, text = inspect_command(
            file,
            target=target,
            fmt="json" if as_json else "text",
            passes=passes,
            diff_pass=diff_pass,
            stage=stage,
            kernel=kernel,
        )
    if text:
        typer.echo(text)
    raise typer.Exit(code)


@app.command()
@one_line_errors
def bench(
    suite: str = typer.Argument(
        ...,
        help="Suite folder (e.g. benchmarks/npukernel), `report`, or a format: "
        "kernelbench, multikernelbench, tritonbench, kernelgen, prtask, datakernel.",
    ),
    path: Optional[Path] = typer.Argument(None, help="After a format: the suite folder."),
    mode: str = typer.Option(
        "score",
        "--mode",
        help="score (verify and time as given), optimize (the agent), "
        "portability (kernelgen: compile for --targets), validate "
        "(datakernel: the TorchPlans against DuckDB) or stream "
        "(datakernel: out-of-core TorchPlans, checked against DuckDB).",
    ),
    device: str = typer.Option("cpu", "--device", help="cuda, npu, or cpu (Triton interpreter, not timed)."),
    jobs: int = typer.Option(
        1, "--jobs", min=1, help="Entries at a time (on a device they share it: timing runs alone)."
    ),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="Where entries run: local (this machine) or ray (one at a time on each device of a Ray cluster).",
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="With --executor ray: the cluster's HOST:PORT (`ray start --head`); none: a local Ray."
    ),
    filter_: Optional[str] = typer.Option(
        None, "--filter", help="Only entries whose id contains this (or one of several, comma-separated)."
    ),
    redo: bool = typer.Option(False, "--redo", help="Run entries again even when done for this version."),
    seeds: int = typer.Option(3, "--seeds", min=2, help="Random input sets per input group."),
    timeout: float = typer.Option(600.0, "--timeout", callback=positive, help="Seconds each worker may run."),
    no_compile: bool = typer.Option(False, "--no-compile", help="Skip the torch.compile baseline."),
    target: str = typer.Option("cuda:sm90", "--target", help="Compile target of optimize mode's IR levels."),
    targets: Optional[str] = typer.Option(
        None, "--targets", help="Portability mode: comma-separated targets (cuda:sm90,hip:gfx942,ascend:950)."
    ),
    solutions: Optional[Path] = typer.Option(
        None, "--solutions", help="Folder of solutions matched to the suite's tasks by name."
    ),
    tolerance: str = typer.Option(
        "default", "--tolerance", help="Tolerance profile: default, kernelbench, kernelbench-v0 or multikernelbench."
    ),
    memory_limit: float = typer.Option(
        16.0, "--memory-limit", callback=positive, help="GiB of host memory each worker may use."
    ),
    max_candidates: int = typer.Option(12, "--max-candidates", min=1, help="Optimize mode: candidates per entry."),
    max_wall: float = typer.Option(
        1800.0, "--max-wall", callback=positive, help="Optimize mode: seconds of wall time per entry."
    ),
    start_within: Optional[float] = typer.Option(
        None,
        "--start-within",
        help="Start no entry later than this many seconds into the sweep (the rest wait for the next sweep).",
    ),
    store_path: Path = typer.Option(Path(".diagnose_cache/bench.sqlite"), "--store", help="SQLite results store."),
    fmt: str = typer.Option("md", "--format", help="Report format: md, html, json or csv (with `report`)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the report here instead of stdout."),
    sf: Optional[float] = typer.Option(None, "--sf", help="datakernel: TPC-H scale factor (0.01 by default)."),
    kind: Optional[str] = typer.Option(None, "--kind", help="datakernel: core or full tasks only (both by default)."),
    partition_rows: Optional[int] = typer.Option(
        None,
        "--partition-rows",
        min=1,
        help="datakernel --mode stream: rows per partition (default: from the device's free memory).",
    ),
):
    """Sweep a suite into the results store (`diagnose bench [FORMAT] SUITE`), or render it (`diagnose bench report`)."""
    from diagnose.bench import report as bench_report  # deferred: command code
    from diagnose.bench import store  # deferred: command code
    from diagnose.bench.suites import DEFAULT, FORMATS  # deferred: command code
    from diagnose.bench.sweep import SweepOptions, check_executor, check_mode, sweep  # deferred: command code
    from diagnose.outputs import check_file  # deferred: command code

    if out is not None:
        check_file(out, "--out")
    if suite == "report":
        if fmt not in ("md", "html", "json", "csv"):
            raise UsageError(f"unknown report format {fmt!r}; choose md, html, json or csv")
        if not store_path.exists():
            raise UsageError(f"{store_path}: no results store (run `diagnose bench SUITE` first)")
        text = bench_report.render(store.rows(store.connect(store_path), mode=mode), fmt)
        if out is not None:
            out.write_text(text)
        else:
            typer.echo(text, nl=False)
        raise typer.Exit(EXIT_OK)
    if suite == "datakernel" and path is None:
        from diagnose.bench.suites.datakernel import default_root  # deferred: command code

        path = default_root()
    if suite == "datakernel" and mode == "validate":
        from diagnose.bench.suites.datakernel_data import require, validate_command  # deferred: command code

        require()
        raise typer.Exit(validate_command(path, sf, filter_))
    if suite == "datakernel" and mode == "stream":
        from diagnose.bench.suites.datakernel_stream import stream_command  # deferred: command code

        raise typer.Exit(stream_command(path, sf, filter_, device, partition_rows))
    if suite in FORMATS:
        if path is None:
            raise UsageError(f"give the suite folder: diagnose bench {suite} PATH")
        suite_format, folder = suite, str(path)
    elif path is not None:
        raise UsageError(f"unknown suite format {suite!r}; formats: {', '.join(FORMATS)}")
    else:
        suite_format, folder = DEFAULT, suite
    from rich.progress import Progress  # deferred: rich.progress (~15 ms), only a sweep draws it

    from diagnose.bench.suite import load_suite  # deferred: command code
    from diagnose.bench.sweep import suite_tasks  # deferred: command code

    console = Console(stderr=True)
    from diagnose.agent.state import Budget  # deferred: command code
    from diagnose.targets import lookup  # deferred: command code

    from diagnose.bench.suites.tolerance import check as check_tolerance  # deferred: command code

    lookup(target)
    check_tolerance(tolerance)
    target_list = tuple(t.strip() for t in (targets or "").split(",") if t.strip())
    for name in target_list:
        lookup(name)
    options = SweepOptions(
        mode=mode,
        device=device,
        jobs=jobs,
        pattern=filter_,
        redo=redo,
        seeds=seeds,
        timeout_s=timeout,
        baselines=("eager",) if no_compile else ("eager", "compile"),
        target=target,
        budget=Budget(max_candidates=max_candidates, max_wall_s=max_wall),
        suite_format=suite_format,
        solutions=solutions,
        targets=target_list,
        tolerance=tolerance,
        start_within_s=start_within,
        memory_limit=int(memory_limit * 2**30),
        scale_factor=sf,
        kind=kind,
        executor=executor,
        ray_address=address,
    )
    check_mode(options)  # before the progress bar starts: a usage error is one line
    check_executor(options)
    if suite_format == DEFAULT:
        total = len(load_suite(folder, filter_))
    else:
        total = len(suite_tasks(folder, options))
    with Progress(console=console, transient=False) as bar:
        task_bar = bar.add_task("sweep", total=total)

        def progress(entry, outcome):
            bar.console.print(f"{entry.id}: {outcome}", markup=False)
            bar.advance(task_bar)

        summary = sweep(folder, store_path, options, progress)
    if suite_format == "datakernel":
        from diagnose.bench.suites.datakernel import (
            render_summary as datakernel_table,
            summary as datakernel_summary,
        )  # deferred: command code

        rows = store.rows(store.connect(store_path), suite=f"{suite_format}:{Path(folder).resolve().name}", mode=mode)
        typer.echo(datakernel_table(datakernel_summary(rows)))
    if suite_format in ("kernelbench", "kernelgen"):
        rows = store.rows(store.connect(store_path), suite=f"{suite_format}:{Path(folder).resolve().name}", mode=mode)
        if suite_format == "kernelbench":
            # deferred: command code
            from diagnose.bench.suites.kernelbench import render_summary, summary as kernelbench_summary

            typer.echo(render_summary(kernelbench_summary(rows)))
        elif mode == "portability":
            from diagnose.bench.suites.kernelgen import portability_table  # deferred: command code

            typer.echo(portability_table(rows, list(target_list)))
    left = f", {summary.left} not started (--start-within)" if summary.left else ""
    console.print(
        f"{summary.ran} run, {summary.skipped} already done, {summary.failed} failed{left}; store {store_path}"
    )
    raise typer.Exit(EXIT_FAILED if summary.failed else EXIT_OK)


@app.command()
@one_line_errors
def optimize(
    task: Optional[Path] = typer.Argument(None, help="Task file (Model, get_inputs, get_init_inputs, ModelNew)."),
    target: str = typer.Option(
        "cuda:sm90", "--target", help="cuda:sm80|sm90|sm100, hip:gfx942|gfx950, ascend:910b|950."
    ),
    device: str = typer.Option(
        "cpu", "--device", help="Where candidates run and are timed: cuda, npu, or cpu (not timed)."
    ),
    resume: Optional[str] = typer.Option(
        None, "--resume", help="Resume the run with this id (with the budget it began with)."
    ),
    write: bool = typer.Option(False, "--write", help="Write the optimized kernel over the input file."),
    max_candidates: int = typer.Option(12, "--max-candidates", min=1, help="Candidates to verify at most."),
    max_wall: float = typer.Option(1800.0, "--max-wall", callback=positive, help="Seconds of wall time at most."),
    seeds: int = typer.Option(3, "--seeds", min=2, help="Random input sets per input group in each verification."),
    no_compile: bool = typer.Option(
        False, "--no-compile", help="Skip the torch.compile baseline of the task as given."
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", callback=positive, help=TIMEOUT_HELP),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress on stderr (but the run id); only the outcome and the table."
    ),
    call: Optional[List[str]] = call_option(),
    launch: Optional[int] = launch_option(),
    reference: Optional[str] = reference_option(),
    launches: Optional[Path] = launches_option(),
    apply: bool = typer.Option(
        False,
        "--apply",
        help="Apply the patch to the kernel module (a backup is kept as NAME.py.diagnose.bak); same as --write.",
    ),
):
    """Escalate from cheap to expensive evidence, propose rewrites, verify and time them.

    On a kernel module (any file with @triton.jit kernels), its captured launches (`diagnose capture`) or
    `--call` specs are replayed, the original code is the reference, and the best verified candidate
    comes back as a patch, NAME.diagnose.patch, beside the module (applied only with --apply)."""
    warm_workers(device)
    from diagnose.agent.policy import broken_task  # deferred: command code
    from diagnose.agent.progress import OptimizeProgress, resume_hint  # deferred: command code
    from diagnose.agent.run import optimize as run_optimize  # deferred: imports langgraph and libcst (the agent)
    from diagnose.agent.state import Budget  # deferred: command code
    from diagnose.targets import lookup  # deferred: command code

    if task is None and resume is None:
        raise UsageError("give a task file, or --resume RUN_ID")
    lookup(target)
    write = write or apply
    if task is not None and resume is None:
        with worker_timeout(timeout):
            task = Path(module_task_file(task, module_inputs(call, launch, reference, launches), device))
    progress = OptimizeProgress(Console(stderr=True), quiet=quiet)
    try:
        with worker_timeout(timeout), progress, CtrlC() as ctrl_c:
            result = run_optimize(
                str(task) if task else "",
                target=target,
                device=device,
                resume=resume,
                write=write,
                budget=Budget(
                    max_candidates=max_candidates, max_wall_s=max_wall, seeds=seeds, compile_baseline=not no_compile
                ),
                on_run=progress.on_run,
                on_start=ctrl_c.checked(progress.on_start),
                on_step=ctrl_c.checked(progress.on_step),
                on_candidate=ctrl_c.checked(progress.on_candidate),
                on_phase=ctrl_c.checked(progress.on_phase),
            )
            ctrl_c.raise_if_pressed()
    except KeyboardInterrupt:
        # Every finished node is checkpointed: say how to go on from there.
        where = resume_hint(progress.run_id) if progress.run_id else "no run was started"
        typer.echo(f"diagnose: interrupted; {where}", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    broken = broken_task(result.report.baseline, repaired=result.report.best is not None)
    if broken:  # the user's code is to blame, not the rewrites: bad input, before any table
        raise UsageError(f"{result.report.task}: {broken}; nothing to optimize (run {result.run_id})")
    from diagnose.report.run_view import outcome  # deferred: command code
    from diagnose.report.summary import candidates_table  # deferred: command code

    out = Console()
    if not out.is_terminal:  # a pipe or a log: plain text, wide enough that the table's rows stay whole
        out = Console(width=200, color_system=None)
    out.print(candidates_table(result.report))
    typer.echo(outcome(result.report))
    typer.echo(f"run {result.run_id}: report {result.run_dir / 'report.json'} (also .md, .html)")
    if result.diff is not None and result.diff.name.endswith(".diagnose.patch"):
        from diagnose.task.patch import apply_command  # deferred: command code

        applied = (
            f"applied to {result.optimized} (backup beside it)"
            if result.optimized
            else f"apply it with `{apply_command(result.diff, Path(result.report.module))}` or rerun with --apply"
        )
        typer.echo(f"patch: {result.diff}; {applied}")
    elif result.optimized:
        typer.echo(f"optimized task: {result.optimized}; diff: {result.diff}")
    raise typer.Exit(EXIT_OK)


@app.command()
@one_line_errors
def report(
    run_id: str = typer.Argument(..., help="The run id that `diagnose optimize` printed."),
    fmt: str = typer.Option("md", "--format", help="md, html, json or sarif."),
):
    """Render a finished run's report again, from its `report.json`."""
    from diagnose.agent.run import find_run  # deferred: imports langgraph and libcst (the agent)
    from diagnose.report.roofline_plot import SVG_NAME  # deferred: command code

    if fmt not in ("md", "html", "json", "sarif"):
        raise UsageError(f"unknown format {fmt!r}; choose md, html, json or sarif")
    folder = find_run(run_id)
    if folder is None:
        raise UsageError(f"no run {run_id!r} in {' nor '.join(str(root) for root in knobs.run_roots())}")
    path = folder / "report.json"
    if not path.exists():
        raise UsageError(f"no report for run {run_id!r} ({path} does not exist)")
    data = json.loads(path.read_text())
    if fmt == "json":  # the file itself, as the run wrote it
        typer.echo(json.dumps(data, indent=2))
        raise typer.Exit(EXIT_OK)
    from diagnose.records import report_from_dict  # deferred: command code

    data = report_from_dict(data)
    if fmt == "md":
        from diagnose.report.markdown import render_markdown  # deferred: command code

        svg = folder / SVG_NAME
        typer.echo(render_markdown(data, str(svg.resolve()) if svg.exists() else None), nl=False)
    elif fmt == "html":
        from diagnose.report.html import render_html  # deferred: command code

        typer.echo(render_html(data), nl=False)
    else:
        from diagnose.report.sarif import report_sarif  # deferred: command code

        typer.echo(json.dumps(report_sarif(data, Path.cwd()), indent=2))
    raise typer.Exit(EXIT_OK)


@app.command()
@one_line_errors
def rewrite(
    task: Path = typer.Argument(..., help="Task file."),
    apply: Optional[List[str]] = typer.Option(None, "--apply", help="Rewrite ids or finding codes (comma-separated)."),
    write: bool = typer.Option(False, "--write", help="Write over the input file instead of next to it."),
    target: str = typer.Option("cuda:sm90", "--target", help="Target for preconditions and the config search."),
    device: str = typer.Option("cpu", "--device", help="Where the candidate is verified (and timed, on a device)."),
    list_only: bool = typer.Option(False, "--list", help="Show which rewrites apply and why, change nothing."),
    seeds: int = typer.Option(3, "--seeds", min=2, help="Random input sets per input group."),
    no_compile: bool = typer.Option(False, "--no-compile", help="Skip the torch.compile baseline."),
    timeout: Optional[float] = typer.Option(None, "--timeout", callback=positive, help=TIMEOUT_HELP),
    call: Optional[List[str]] = call_option(),
    launch: Optional[int] = launch_option(),
    launches: Optional[Path] = launches_option(),
):
    """Apply evidence-backed rewrites; the verified result goes next to the input with its diff (a kernel
    module's: a patch, NAME.diagnose.patch, applied over the module with --write)."""
    from diagnose.optimizer import rewrite_command  # deferred: imports libcst (the rewrite table)

    with worker_timeout(timeout):
        task = Path(module_task_file(task, module_inputs(call, launch, None, launches), device))
        code, text = rewrite_command(
            str(task),
            apply=split_codes(apply),
            write=write,
            target=target,
            device=device,
            list_only=list_only,
            seeds=seeds,
            baselines=("eager",) if no_compile else ("eager", "compile"),
        )
    if text:
        typer.echo(text)
    raise typer.Exit(code)


@app.command()
@one_line_errors
def profile(
    task: Path = typer.Argument(..., help="Task file."),
    device: str = typer.Option("cuda", "--device", help="cuda, or cpu (static estimate only)."),
    ncu: bool = typer.Option(False, "--ncu", help="Read hardware counters with Nsight Compute."),
    proton: bool = typer.Option(False, "--proton", help="Kernel times per scope with Proton (lighter than ncu)."),
    target: Optional[str] = typer.Option(None, "--target", help="Target whose limits to use (default: the device's)."),
    plot_dir: Optional[Path] = typer.Option(None, "--plot-dir", help="Write the roofline plot (PNG, SVG) here."),
    group: Optional[List[str]] = typer.Option(None, "--group", help="Input group(s) to use."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    timeout: Optional[float] = typer.Option(None, "--timeout", callback=positive, help=TIMEOUT_HELP),
    call: Optional[List[str]] = call_option(),
    launch: Optional[int] = launch_option(),
    launches: Optional[Path] = launches_option(),
):
    """Roofline position, bottleneck classification and evidence (L1)."""
    from diagnose.profiling.cli import profile_command  # deferred: command code

    with worker_timeout(timeout):
        task = Path(module_task_file(task, module_inputs(call, launch, None, launches), device))
        code, text = profile_command(
            str(task),
            device=device,
            ncu=ncu,
            proton=proton,
            target=target,
            plot_dir=str(plot_dir) if plot_dir else None,
            fmt="json" if as_json else "text",
            groups=group or None,
        )
    typer.echo(text, nl=False)
    raise typer.Exit(code)


@app.command()
@one_line_errors
def decompose(
    model: Path = typer.Argument(..., help="Model file (Model, get_inputs, get_init_inputs)."),
    kernels: Optional[Path] = typer.Option(
        None, "--kernels", help="Folder of Triton implementations, DIR/<subgraph name>.py defining ModelNew."
    ),
    device: str = typer.Option("cpu", "--device", help="cuda, or cpu (Triton interpreter, not timed)."),
    seeds: int = typer.Option(2, "--seeds", min=1, help="Random input sets per verification."),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        help="Folder for the subtasks, the composite and report.md (default: MODEL.decompose/ beside the model).",
    ),
    prefer: str = typer.Option(
        "torch", "--prefer", callback=preference, help="torch or triton: the choice where nothing is timed."
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", callback=positive, help=TIMEOUT_HELP),
    with_inductor: bool = typer.Option(
        True,
        "--inductor/--no-inductor",
        help="Also try, per subgraph, the Triton kernels Inductor generates for it (<name>.inductor.py).",
    ),
    fuse_budget: int = typer.Option(
        4,
        "--fuse-budget",
        min=0,
        help="Pairs of neighbouring subgraphs tried as "
        "one (fused where faster than both; only where timed, on a device).",
    ),
):
    """Cut a model into subgraph tasks, verify each subgraph's candidates, and compose a ModelNew that
    calls one chosen implementation per subgraph (swappable), verified end to end."""
    from diagnose.decompose.command import decompose_command  # deferred: command code
    from diagnose.verify.harness import CheckOptions  # deferred: command code

    options = CheckOptions(
        device=device,
        seeds=tuple(range(seeds)),
        timeout_s=timeout or CheckOptions.timeout_s,
        baselines=("eager",),
        unseen_shapes=False,
    )
    with worker_timeout(timeout):
        code, text = decompose_command(
            model,
            kernels,
            options,
            out,
            prefer,  # type: ignore[arg-type]
            with_inductor,
            fuse_budget,
        )
    typer.echo(text, nl=False)
    raise typer.Exit(code)


@app.command(context_settings={"allow_interspersed_args": False})
@one_line_errors
def capture(
    command: Optional[List[str]] = typer.Argument(
        None, help="The command to run, after `--`: your tests or a script (`-- pytest tests/test_ops.py -k fwd`)."
    ),
    device: str = typer.Option(
        "auto",
        "--device",
        help="auto (a GPU if there is one), cuda, cpu (Triton's "
        "interpreter on a CPU stand-in for the GPU), or none "
        "(launches recorded, not run: the command's results "
        "are meaningless; for code the interpreter cannot run).",
    ),
    project: Path = typer.Option(
        Path("."), "--project", help="Run in this folder; the launches go to its .diagnose/launches/."
    ),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", callback=positive, help="Seconds the command may run (default: no limit)."
    ),
    list_file: Optional[Path] = typer.Option(
        None, "--list", help="List the launches captured from this kernel module, numbered as --launch counts them."
    ),
):
    """Run your own command with Triton's launches recorded: kernel, shapes, dtypes, strides, scalars,
    constexprs, grid, and the host call that made each (no tensor data), into .diagnose/launches/."""
    from diagnose.capture.command import MODES, run_capture  # deferred: command code
    from diagnose.capture.listing import render_listing  # deferred: command code

    if list_file is not None:
        typer.echo(render_listing(list_file))
        raise typer.Exit(EXIT_OK)
    modes = {"cpu": "interpreter", "cuda": "gpu", "none": "record"}
    if device not in ("auto", *modes):
        raise UsageError(f"--device {device!r}: choose auto, cuda, cpu or none")
    if not project.is_dir():
        raise UsageError(f"--project {project}: no such folder")
    if device == "auto":
        from diagnose.toolchain.placement import available  # deferred: command code

        device = "cuda" if available("cuda")[0] else "cpu"
    mode = modes[device]
    result = run_capture(list(command or []), project.resolve(), mode=mode, timeout_s=timeout)
    status = "timed out" if result.timed_out else f"exited with {result.returncode}"
    typer.echo(
        f"diagnose capture: the command {status} after {result.seconds:.0f} s, {MODES[mode]}; "
        f"{len(result.records)} distinct launches",
        err=True,
    )
    for path in result.files:
        typer.echo(f"  {path}", err=True)
    if not result.records:
        hint = (
            " If the project cannot run in Triton's interpreter, --device none records its launches "
            "without running them."
            if mode == "interpreter" and result.returncode
            else ""
        )
        raise UsageError("no Triton launch was seen: does the command launch kernels (and run Python)?" + hint)
    raise typer.Exit(EXIT_OK)


@app.command()
def lsp():
    """Language server for editors (LSP over stdio)."""
    from diagnose.lsp import main as lsp_main  # deferred: command code

    # Pass no arguments: the server's own parser would otherwise read `lsp` from sys.argv.
    raise typer.Exit(lsp_main([]))


toolchain_app = typer.Typer(no_args_is_help=True, help="Toolchains in their own environments (triton-ascend).")
app.add_typer(toolchain_app, name="toolchain")


@toolchain_app.command("setup")
@one_line_errors
def toolchain_setup(
    name: str = typer.Argument(..., help="ascend"),
    rebuild: bool = typer.Option(False, "--rebuild", help="Build the environment again."),
):
    """Create (or reuse) a toolchain's virtual environment and record it."""
    from diagnose.toolchain import toolchain_setup as setup  # deferred: command code

    code, text = setup(name, rebuild=rebuild)
    typer.echo(text)
    raise typer.Exit(code)


@toolchain_app.command("list")
@one_line_errors
def toolchain_list():
    """What is configured and what each toolchain can do here."""
    from diagnose.toolchain import toolchain_list as listing  # deferred: command code

    code, text = listing()
    typer.echo(text)
    raise typer.Exit(code)


def main() -> None:
    app()


if __name__ == "__main__":
    sys.exit(main())
