"""A kernel module as it is found in a project becomes a task: which calls to replay, and the task file.

Where the inputs come from, in order (`Inputs`):

1. `--call` specs given by the user: each is one input group, replayed as written;
2. captured launches (`diagnose capture -- COMMAND`, `diagnose/task/launches.py`) made from this
   module: the largest host call by default (bare launches after), `--launch N` for the N-th of `diagnose capture --list FILE`;
   the calls of the same target become the task's input groups (the smallest ones, small enough for
   the CPU interpreter, named `test_...`, or where every call is larger the smallest cut down to that
   size (`diagnose/task/shrink.py`); the chosen one and the largest others for a device);
3. otherwise `NoLaunches`: the caller may run the module's own tests under capture
   (`diagnose/capture/own_tests.py`) and try again with the launches they made.

The task file (`diagnose/task/harness.py`) is written into the cache; its reference is the module's
own code, or the PyTorch function `Inputs.reference` names.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.task import harness, launches
from diagnose.task.callspec import parse_call
from diagnose.task.generate import guess_launch, jit_definitions, returns_value
from diagnose.task.kernelbench import Task, load_task_file, parse_file, top_level_names
from diagnose.task.module import identity, jit_functions
from diagnose.task.shrink import shrunk
from diagnose.task.specs import CallSpec, Inputs

# Replayed calls with at most this many tensor elements run on the CPU interpreter (`test_` groups).
CPU_ELEMENTS = 1 << 18
TEST_GROUPS = 2
DEVICE_GROUPS = 3


class NoLaunches(UsageError):
    """A kernel module with nothing to replay: no `--call`, no captured launch from it."""


def module_task(path: Path, cache: Path, inputs: Inputs = Inputs(), candidate: Path | None = None) -> Task:
    """The task of the kernel module at `path`; `candidate`: an edited copy of the module to check."""
    tree = parse_file(path)
    kernels = jit_functions(tree)
    if not kernels:
        raise UsageError(f"{path}: no @triton.jit kernels (and no Model, get_inputs, get_init_inputs, ModelNew)")
    groups, primary = _from_calls(path, tree, inputs) if inputs.calls else _from_launches(path, inputs)
    reference = _check_reference(inputs.reference) if inputs.reference else None
    module = identity(path)
    source = path.read_text(encoding="utf-8")
    unseen = {} if inputs.calls else unseen_groups(groups, primary)
    task_path = harness.write_task(cache, module, source, groups, primary, reference, unseen)
    if candidate is None:
        return load_task_file(task_path)
    text = harness.replace_user_part(task_path.read_text(), parse_candidate(candidate))
    folder = task_path.parent / f"candidate-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    folder.mkdir(exist_ok=True)
    candidate_path = folder / task_path.name
    candidate_path.write_text(text)
    return load_task_file(task_path, candidate_path)


def parse_candidate(candidate: Path) -> str:
    """An edited copy of the module: it must parse (so that a syntax error is the user's, named)."""
    parse_file(candidate)
    return candidate.read_text(encoding="utf-8")


def _check_reference(reference: str) -> str:
    """`path.py:function`, made absolute (workers run elsewhere), once the file defines the function."""
    path, _, name = reference.rpartition(":")
    if not path or not name:
        raise UsageError(f"--reference {reference!r}: write it as path/to/file.py:function")
    names = top_level_names(parse_file(Path(path)))
    if name not in names:
        raise UsageError(f"--reference {reference!r}: {path} defines no {name!r}")
    return f"{Path(path).resolve()}:{name}"


def _from_calls(path: Path, tree, inputs: Inputs) -> tuple[dict[str, str], str]:
    names = top_level_names(tree)
    groups = {}
    for i, text in enumerate(inputs.calls):
        call = parse_call(text)
        head = call.target.split(".")[0]
        if head not in names:
            raise UsageError(f"--call {text!r}: {path.name} defines no {head!r} at module level")
        if not call.replayable:
            raise UsageError(f"--call {text!r}: every argument needs a value or a tensor spec")
        groups[f"call_{i}"] = call.text()
    return groups, "call_0"


def _from_launches(path: Path, inputs: Inputs) -> tuple[dict[str, str], str]:
    records = launches.launches_to_replay(path, inputs.launches)
    if inputs.kernel:
        records = [r for r in records if r.kernel == inputs.kernel]
    if not records:
        raise NoLaunches(
            f"{path}: no launches to replay; capture them from your tests (`diagnose capture -- pytest tests/...`) "
            f"or give a call (`--call 'fn(x=f16[4096,4096], eps=1e-6)'`)"
        )
    listed = launches.listing(records)
    if inputs.launch is not None and not 0 <= inputs.launch < len(listed):
        raise UsageError(
            f"--launch {inputs.launch}: {len(listed)} launches were captured from {path.name} "
            f"(0 to {len(listed) - 1}; `diagnose capture --list {path}` lists them)"
        )
    chosen = listed[inputs.launch or 0]
    target = parse_call(chosen.replay).target
    calls: dict[str, CallSpec] = {}
    for record in listed:
        call = parse_call(record.replay)
        if call.target == target and call.replayable:
            calls.setdefault(call.text(), call)
    return _groups(calls, parse_call(chosen.replay).text())


def _groups(calls: dict[str, CallSpec], chosen: str) -> tuple[dict[str, str], str]:
    """Input groups from distinct calls of one target: the smallest for the CPU, the chosen and the
    largest others for a device."""
    by_size = sorted(calls, key=lambda text: (calls[text].nbytes, text))
    small = [t for t in by_size if sum(s.numel for s in calls[t].tensors()) <= CPU_ELEMENTS][:TEST_GROUPS]
    if not small:  # every call a GPU's size (a project's tests written for one): the smallest, cut down if it can be
        cut = shrunk(calls[by_size[0]], CPU_ELEMENTS)
        small = [cut.call.text()] if cut is not None else by_size[:1]
    large = [chosen] + [t for t in reversed(by_size) if t != chosen and t not in small][: DEVICE_GROUPS - 1]
    groups: dict[str, str] = {}
    for i, text in enumerate(large):
        if text not in small:
            groups[f"launch_{i}"] = text
    for i, text in enumerate(small):
        groups[f"test_{i}"] = text
    primary = next(name for name, text in groups.items() if text == chosen)
    return groups, primary


def unseen_groups(groups: dict[str, str], primary: str) -> dict[str, str]:
    """The chosen call with its rows cut to a size the CPU runs (`diagnose/task/shrink.py`), as an unseen-shape
    case of its group (`launch_0@rows=32`), where it is not small already and a cut is unambiguous."""
    cut = shrunk(parse_call(groups[primary]), CPU_ELEMENTS)
    if cut is None or cut.call.text() in groups.values():  # already a group: the smallest call, cut the same way
        return {}
    return {f"{primary}@rows={cut.cut_to}": cut.call.text()}


GUESSED = "guess_"
PER_KERNEL = "kernel_"


def inspect_task(path: Path, cache: Path, inputs: Inputs = Inputs()) -> Task:
    """A task for reading the IR of every kernel of the module: one input group per kernel, named
    `kernel_<name>` (its largest captured call, or the `--launch N`-th of the module's listing; for a
    kernel that other modules launch, their largest launch of it, replayed at the kernel) or, for a
    module-level kernel nothing launched, `guess_<name>` (a launch guessed from its source:
    `diagnose/task/generate.py`). `--call` specs are used as given."""
    tree = parse_file(path)
    kernels = list(dict.fromkeys(jit_functions(tree)))
    if not kernels:
        raise UsageError(f"{path}: no @triton.jit kernels")
    if inputs.calls:
        groups, primary = _from_calls(path, tree, inputs)
    else:
        records = launches.records_for(path, inputs.launches)
        listed = launches.listing(records)
        elsewhere: list | None = None  # launches other modules made of this module's kernels, read once if needed
        if inputs.launch is not None:
            if not 0 <= inputs.launch < len(listed):
                raise UsageError(f"--launch {inputs.launch}: {len(listed)} launches were captured from {path.name}")
            listed = [listed[inputs.launch]]
            kernels = [listed[0].kernel]
        nodes = jit_definitions(tree)
        groups = {}
        for kernel in kernels:
            if inputs.kernel and kernel != inputs.kernel:
                continue
            mine = [r for r in listed if r.kernel == kernel and parse_call(r.replay).replayable]
            if not mine and inputs.launch is None:
                if elsewhere is None:
                    elsewhere = launches.listing(launches.launches_of_kernels_in(path, inputs.launches))
                mine = [r for r in elsewhere if r.kernel == kernel and parse_call(r.replay).replayable]
            if mine:
                groups[PER_KERNEL + kernel] = parse_call(mine[0].replay).text()
            elif kernel in nodes and not returns_value(nodes[kernel]):  # a device function is never launched
                groups[GUESSED + kernel] = guess_launch(nodes[kernel], nodes).text()
        if not groups:
            raise NoLaunches(f"{path}: no launch of {inputs.kernel or 'its kernels'} to compile")
        primary = next(iter(groups))
    module = identity(path)
    task_path = harness.write_task(cache, module, path.read_text(encoding="utf-8"), groups, primary)
    return load_task_file(task_path)
