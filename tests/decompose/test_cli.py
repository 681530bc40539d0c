"""`diagnose decompose` as a user runs it: a subprocess, the report on stdout and in the output folder."""

from tests.conftest import FIXTURES, run_cli


def test_decompose_cli_writes_the_subtasks_the_composite_and_the_report(tmp_path):
    out = tmp_path / "l2"
    result = run_cli(
        "decompose", str(FIXTURES / "decompose" / "l2_chain.py"), "--out", str(out), "--seeds", "2", "--no-inductor"
    )
    assert result.returncode == 0, result.stderr
    assert (
        "| sg0_conv2d | conv2d |" in result.stdout and "| sg1_groupnorm | groupnorm -> add -> relu |" in result.stdout
    )
    assert "torch only, nothing to verify" in result.stdout
    for name in ("sg0_conv2d.py", "sg0_conv2d.pt", "sg1_groupnorm.py", "composite.py", "report.md"):
        assert (out / name).exists(), name


def test_a_model_fx_cannot_trace_is_one_usage_line(tmp_path):
    model = tmp_path / "branchy.py"
    model.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x if x.sum() > 0 else -x\n\n\n"
        "def get_inputs():\n    return [torch.randn(3)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    result = run_cli("decompose", str(model))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("diagnose: error:")
    assert "torch.fx cannot trace this model" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "branchy.decompose").exists(), "the folder made for it is removed"


def test_a_model_that_writes_into_its_own_state_is_one_usage_line(tmp_path):
    result = run_cli("decompose", str(FIXTURES / "decompose" / "stateful_cell.py"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"diagnose: error: {FIXTURES / 'decompose' / 'stateful_cell.py'}: the forward writes into the model's state "
        "in place (hidden.copy_(...)): subgraph tasks cannot share that state"
    ]
    assert not (tmp_path / "out").exists(), "the folder made for it is removed"
