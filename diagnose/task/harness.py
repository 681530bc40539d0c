"""A kernel module as a task: its own source, then a generated section that makes it one.

The task file of a kernel module is a copy of the module's source, line for line (code that runs at
import, a demo or a test at the top level, turned into `pass`: `module_part`), followed by a section
that defines the task format's names through `diagnose.task.replay.Harness`:

    <the module's source, as in the project>

    # ---- diagnose task harness (generated from rms_norm.py; not part of it, never patched) ----
    # diagnose-origin: /home/me/proj/src/liger_kernel/ops/rms_norm.py
    # diagnose-module: liger_kernel.ops.rms_norm
    # diagnose-root: /home/me/proj/src
    from diagnose.task.replay import Harness as _DiagnoseHarness
    _diagnose = _DiagnoseHarness(globals(), {"groups": {...}, "primary": ..., "reference": ...})
    Model = _diagnose.Model
    ...

So everything that works on a task (triage, IR facts, profiling, rewrites, verification, the agent)
works on the module: line numbers are the module's own, rewrites edit the module's code (never the
section: it launches nothing by name), and the reference is the original code, because the reference
file is the task file of the original source. A rewritten task file, its section cut off, is the new
module source (`user_part`), from which the patch against the user's file is made.

The header comments say where the module belongs; `import_task_file` reads them to import the file
under the module's dotted name with its package root on `sys.path` (`diagnose/task/kernelbench.py`).
"""

from __future__ import annotations

import ast
import hashlib
import pprint
import re
from dataclasses import dataclass
from pathlib import Path

from diagnose import syntax
from diagnose.task.callspec import parse_call
from diagnose.task.module import ModuleIdentity, without_import_time_work

MARK = "# ---- diagnose task harness"
TASK_FILE = re.compile(r"(?:[\w./~-]*/)?tasks/[\w.-]+-[0-9a-f]{12}/(?:candidate-[0-9a-f]{12}/)?[\w.-]+\.py")
HEADER = re.compile(r"^# diagnose-(origin|module|root): (.*)$", re.M)


@dataclass(frozen=True)
class Header:
    """What the generated section says about the module it belongs to."""

    origin: Path
    module: str
    root: Path


def section(
    identity: ModuleIdentity,
    groups: dict[str, str],
    primary: str,
    reference: str | None,
    unseen: dict[str, str] | None = None,
) -> str:
    spec = {"groups": groups, "primary": primary, "reference": reference, **({"unseen": unseen} if unseen else {})}
    return "\n".join(
        [
            f"{MARK} (generated from {identity.path.name}; not part of it, never patched) ----",
            f"# diagnose-origin: {identity.path}",
            f"# diagnose-module: {identity.name}",
            f"# diagnose-root: {identity.root}",
            "from diagnose.task.replay import Harness as _DiagnoseHarness  # noqa: E402",
            "",
            f"_diagnose = _DiagnoseHarness(globals(), {pprint.pformat(spec, width=110, sort_dicts=False)})",
            "Model = _diagnose.Model",
            "ModelNew = _diagnose.ModelNew",
            "get_inputs = _diagnose.get_inputs",
            "get_init_inputs = _diagnose.get_init_inputs",
            "get_input_groups = _diagnose.get_input_groups",
            *(["get_unseen_shape_groups = _diagnose.get_unseen_shape_groups"] if unseen else []),
            "ROOFLINE = _diagnose.roofline",
            "",
        ]
    )


def module_part(module_source: str) -> str:
    """The module's source as its task file holds it: code that runs at import (a demo, a test or a
    benchmark written at the top level) turned into `pass`, line for line (`module.import_time_work`);
    every worker imports the task file, and a kernel launched while it loads would run for nothing, or
    fail where nothing can run (a compile-only worker)."""
    body = module_source if module_source.endswith("\n") else module_source + "\n"
    try:
        tree = syntax.parse(body)
    except SyntaxError:
        return body
    return without_import_time_work(body, tree)


def task_source(
    module_source: str,
    identity: ModuleIdentity,
    groups: dict[str, str],
    primary: str,
    reference: str | None = None,
    unseen: dict[str, str] | None = None,
) -> str:
    return f"{module_part(module_source)}\n\n{section(identity, groups, primary, reference, unseen)}"


def user_part(task_text: str) -> str:
    """The module's source in a task file: everything above the generated section."""
    at = task_text.find("\n" + MARK)
    if at < 0:
        return task_text
    # The section was appended after the source's own last newline and two blank lines.
    body = task_text[: at + 1]
    return body[:-2] if body.endswith("\n\n\n") else body


def header(task_text: str) -> Header | None:
    """The section's header, or None for a file that is not a kernel module's task file."""
    at = task_text.find("\n" + MARK)
    if at < 0:
        return None
    found = dict(HEADER.findall(task_text[at:]))
    if not {"origin", "module", "root"} <= set(found):
        return None
    return Header(Path(found["origin"]), found["module"], Path(found["root"]))


def replay_targets(task_text: str) -> tuple[str, ...] | None:
    """What the section replays, as call specs name it (`rms_norm_backward`, `LigerFn.apply`, a kernel
    for a bare launch), the primary call first; None for a file that is not a kernel module's task file
    (a rewrite then considers every kernel the file launches)."""
    at = task_text.find("\n" + MARK)
    if at < 0:
        return None
    try:
        tree = syntax.parse(task_text[at + 1 :])
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[1], ast.Dict):
            try:
                spec = ast.literal_eval(node.args[1])
            except ValueError:
                return None
            groups = spec.get("groups", {})
            calls = [groups.get(spec.get("primary")), *groups.values()]
            return tuple(dict.fromkeys(parse_call(c).target for c in calls if isinstance(c, str)))
    return None


def write_task(
    cache: Path,
    identity: ModuleIdentity,
    module_source: str,
    groups: dict[str, str],
    primary: str,
    reference: str | None = None,
    unseen: dict[str, str] | None = None,
) -> Path:
    """Write the task file of a module into `cache/tasks/<stem>-<hash>/<stem>.py` (the same content gives
    the same file); return its path. `unseen`: calls checked as unseen-shape cases (label -> call text)."""
    text = task_source(module_source, identity, groups, primary, reference, unseen)
    digest = hashlib.sha256(f"{identity.path}\n{text}".encode()).hexdigest()[:12]
    folder = cache / "tasks" / f"{identity.path.stem}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / identity.path.name
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def replace_user_part(task_text: str, module_source: str) -> str:
    """The task file with its module source replaced (a candidate given as an edited copy of the module)."""
    at = task_text.find("\n" + MARK)
    if at < 0:
        raise ValueError("not a kernel module's task file")
    return f"{module_part(module_source)}\n{task_text[at:]}"


def shown(text: str) -> str:
    """`text` with every kernel module's task file named as the module itself (messages for the user)."""

    def origin(match: re.Match) -> str:
        try:
            found = header(Path(match.group(0)).read_text(errors="replace"))
        except OSError:
            return match.group(0)
        return str(found.origin) if found else match.group(0)

    return TASK_FILE.sub(origin, text)
