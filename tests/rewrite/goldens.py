"""The rewrite fixtures: `tests/fixtures/rewrite/<rewrite id>/`.

Each folder holds `before.py` (a complete task the rewrite applies to), `after.py` (the golden
result of applying it to `before.py`), one or more `rejected_*.py` (sources where the precondition
must say no; the first line `# rejects: TEXT` names a part of the expected reason) and, where the
rewrite needs them, `params.json` (launch values, as the search would choose), `evidence.json` (IR
facts of `before.py`, from `diagnose inspect --json`) and `target` (default cuda:sm90).

Real-code pairs sit beside them: `before_<style>.py` with its golden `after_<style>.py`, a kernel
module as kernel engineers write one, no `Model` / `ModelNew`: `module` (a plain host function
`def op(x, ...)` that computes the launch values), `autograd` (a `torch.autograd.Function` whose
`forward(ctx, ...)` launches, its launch values from a settings helper such as Liger-Kernel's
`calculate_settings(n)`, some inside `with torch.cuda.device(x.device):`), `autotuned` (the kernel
under `@triton.autotune(configs=[...], key=[...])`, launched on a lambda grid over META), `nested` (the
launch in a function nested in another); `evidence_<style>.json` holds the IR facts at the lines of
`before_<style>.py` where the rewrite reads them (written from `before.py`'s facts, moved to those lines).
Every rewrite has a task file, a `module` and at least one more style. `calls.json` gives, per style,
the call that verifies the pair on the interpreter (`{"module": "op(x=f32[4,300])", "autograd":
"Fn.apply(f32[4,300], 0.5)"}`; test_styles_verified.py replays it, unless the rewrite's own test does).

Regenerate the goldens after a deliberate change, then read the diff:

    python -m tests.rewrite.goldens
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "rewrite"


def folders() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir())


def real_code_pairs() -> list[tuple[Path, Path]]:
    """(`before_<style>.py`, `after_<style>.py`) of every folder."""
    return [
        (before, before.with_name(before.name.replace("before_", "after_", 1)))
        for folder in folders()
        for before in sorted(folder.glob("before_*.py"))
    ]


def context(folder: Path, name: str = "before.py"):
    from diagnose.records import Location
    from diagnose.optimizer.pipeline import as_evidence
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.targets import lookup

    path = folder / name
    target = (folder / "target").read_text().strip() if (folder / "target").exists() else "cuda:sm90"
    evidence = ()
    facts = folder / (
        "evidence.json"
        if name == "before.py"
        else name.replace("before_", "evidence_", 1).removesuffix(".py") + ".json"
    )
    if name.startswith("before") and facts.exists():
        evidence = tuple(
            e
            if e.location is None
            else type(e)(
                e.stage, e.source, e.name, e.kind, Location(str(path), e.location.line, e.location.col), e.args, e.raw
            )
            for e in as_evidence(json.loads(facts.read_text()))
        )
    params = json.loads((folder / "params.json").read_text()) if (folder / "params.json").exists() else {}
    return RewriteContext(path.read_text(), str(path), lookup(target), (), evidence, tuple(sorted(params.items())))


def rewritten(folder: Path, name: str = "before.py") -> str:
    from diagnose.rewrite.table import REWRITES

    return REWRITES[folder.name].apply(context(folder, name))


def main() -> None:
    for folder in folders():
        (folder / "after.py").write_text(rewritten(folder))
        print(f"wrote {folder.relative_to(ROOT)}/after.py")
    for before, after in real_code_pairs():
        after.write_text(rewritten(before.parent, before.name))
        print(f"wrote {after.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
