"""The suite-format registry, the adapters' shape, and `diagnose bench FORMAT PATH` on the command line."""

import importlib
from pathlib import Path

import pytest

from diagnose.bench import suites
from diagnose.errors import UsageError
from tests.bench.suites.conftest import SUITES

ADAPTERS = [f for f in suites.FORMATS.values() if f.module]


def test_registry_names_every_format():
    assert set(suites.FORMATS) == {
        "npukernel",
        "kernelbench",
        "multikernelbench",
        "tritonbench",
        "kernelgen",
        "prtask",
        "datakernel",
    }
    assert suites.DEFAULT == "npukernel"
    with pytest.raises(UsageError, match="unknown suite format 'nope'"):
        suites.adapter("nope")


@pytest.mark.parametrize("fmt", ADAPTERS, ids=lambda f: f.name)
def test_each_adapter_documents_its_format_and_has_fixtures(fmt):
    module = importlib.import_module(fmt.module)
    assert module.__doc__ and len(module.__doc__.splitlines()) > 10
    assert callable(module.load) and callable(module.score) and "score" in module.MODES
    # 300 lines as the code was first wrapped by hand; ruff's format spreads the same code over ~20% more
    assert len(Path(module.__file__).read_text().splitlines()) < 380, "adapters stay short"
    assert (SUITES / fmt.name).is_dir()


def test_cli_errors_are_one_line_with_usage_exit_code(cli):
    for args, message in [
        (("bench", "kernelbench"), "give the suite folder"),
        (("bench", "nope", "x"), "unknown suite format"),
        (("bench", "kernelgen", str(SUITES / "kernelgen" / "suite"), "--mode", "portability"), "needs --targets"),
        (("bench", "prtask", str(SUITES / "prtask" / "suite"), "--mode", "optimize"), "support --mode score"),
        (
            (
                "bench",
                "tritonbench",
                str(SUITES / "tritonbench" / "suite"),
                "--mode",
                "optimize",
                "--tolerance",
                "kernelbench",
            ),
            "is for score mode",
        ),
        (
            (
                "bench",
                "kernelbench",
                str(SUITES / "kernelbench" / "suite"),
                "--solutions",
                str(SUITES / "kernelbench" / "solutions"),
                "--tolerance",
                "loose",
            ),
            "unknown tolerance profile",
        ),
    ]:
        result = cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_cli_sweeps_a_format_and_the_report_renders_it(cli, tmp_path):
    db = tmp_path / "r.sqlite"
    result = cli(
        "bench",
        "kernelbench",
        str(SUITES / "kernelbench" / "suite"),
        "--solutions",
        str(SUITES / "kernelbench" / "solutions"),
        "--filter",
        "level1/4",
        "--store",
        str(db),
    )
    assert result.returncode == 1, result.stderr
    assert "KernelBench: 0/1 correct over 1 problems" in result.stdout
    assert "1 run, 0 already done, 1 failed" in result.stderr
    report = cli("bench", "report", "--store", str(db))
    assert report.returncode == 0
    assert "has no `get_inputs`" in report.stdout and "no LLM used" in report.stdout
