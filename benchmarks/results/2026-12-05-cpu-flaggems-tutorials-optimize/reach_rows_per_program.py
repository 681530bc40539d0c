"""rows-per-program's precondition over every module of FlagGems' ops/ and fused/ (source only; no launches,
nothing run). PYTHONPATH=<diagnose checkout> python reach_rows_per_program.py; the corpus path is /work/corpus/flaggems."""
import sys, glob, collections
from pathlib import Path
from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES
r = REWRITES["rows-per-program"]
holds = []; reasons = collections.Counter()
files = sorted(glob.glob("/work/corpus/flaggems/src/flag_gems/ops/*.py") + glob.glob("/work/corpus/flaggems/src/flag_gems/fused/*.py"))
for f in files:
    try:
        pre = r.check(RewriteContext(Path(f).read_text(), f))
    except Exception as e:
        reasons["error " + type(e).__name__] += 1; continue
    if pre.holds: holds.append(Path(f).name + ":" + ",".join(pre.kernels))
    elif pre.reason: reasons[pre.reason.split(":")[0][:70]] += 1
print(len(files), "files;", len(holds), "hold")
print(holds)
for k, v in reasons.most_common(8): print(v, k)
