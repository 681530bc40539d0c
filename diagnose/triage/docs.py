"""Documentation generated from the rules themselves: the table in README.md and one page per rule
(`python -m diagnose.triage.docs` prints the table; `--rule CODE` prints a rule's page)."""

from __future__ import annotations

import argparse

from diagnose.triage.codes import RULES


def rule_table() -> str:
    rows = ["| code | name | targets | severity | what it finds |", "|---|---|---|---|---|"]
    for code, rule in RULES.items():
        rows.append(
            f"| {code} | `{rule.name}` | {', '.join(rule.targets)} | {rule.severity} | "
            f"{rule.summary().replace('|', '/')} |"
        )
    return "\n".join(rows)


def rule_page(code: str) -> str:
    rule = RULES[code]
    return f"# {code} {rule.name}\n\nMessage: {rule.message}\n\nFix: {rule.fix_title}\n\n{rule.doc()}\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rule")
    ns = parser.parse_args()
    print(rule_page(ns.rule.upper()) if ns.rule else rule_table())
