"""fuse-host-epilogue and the rule it answers speak of the same ops."""

from diagnose.rewrite.codemods.fuse_host_epilogue import ALIASES, OPS
from diagnose.triage.rules.host_epilogue_after_launch import ELEMENTWISE


def test_the_rule_flags_the_ops_the_rewrite_moves():
    assert ELEMENTWISE == set(OPS) | set(ALIASES)
