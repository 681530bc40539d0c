"""Per module: outcome, candidates proposed / verified (from report.json), and each failure."""
import json, re, sys
from pathlib import Path
tag = sys.argv[1]
mods = "dyt fused_add_rms_norm fused_neighborhood_attention geglu group_norm grpo_loss jsd llama4_rope".split()
P = V = 0
for m in mods:
    out = Path(f"/tmp/rr/opt-{tag}-{m}.out")
    if not out.exists():
        print(f"| {m} | (not run) |"); continue
    text = out.read_text()
    rep = re.search(r"report (\S+report\.json)", text)
    outcome = next((l for l in text.splitlines() if l.startswith(("No ", "Best", "The best"))), "?")
    if not rep:
        print(f"| {m} | no report | {outcome} |"); continue
    d = json.loads(Path(rep.group(1)).read_text())
    cands = d.get("candidates", [])
    p = len(cands); v = sum(1 for c in cands if (c.get("verdict") or {}).get("passed"))
    P += p; V += v
    base = (d.get("baseline") or {}).get("passed")
    what = []
    for c in cands:
        ver = c.get("verdict") or {}
        made = "+".join((c.get("candidate") or {}).get("made_by", []))
        if ver.get("passed"):
            what.append(f"{made}: passed")
        else:
            f = ver.get("failure") or {}
            bad = [x for x in ver.get("checks", []) + ver.get("cases", []) if not x.get("passed")]
            why = f"{f.get('kind')}: {(f.get('message') or '').splitlines()[0][:90]}" if f else (str(bad[0])[:120] if bad else "?")
            what.append(f"{made}: failed ({why})")
    print(f"| {m} | baseline {'passed' if base else 'FAILED'} | {p} | {v} | {'; '.join(what) or '-'} | {outcome} |")
print(f"total proposed {P}, verified {V}")
