"""The vault (`diagnose/verify/vault.py`): the reference job's files leave the disk, each job fetches what
its ticket names once each, and nothing can change a sealed file. Real sockets and real worker processes."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from diagnose.verify import tensors
from diagnose.verify.fetch import fetch
from diagnose.verify.vault import Vault

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the vault is Linux only")


@pytest.fixture
def vault(tmp_path):
    tensors.save([torch.arange(6.0)], tmp_path / "inputs_a.pt")
    tensors.save([torch.ones(3)], tmp_path / "inputs_b.pt")
    held = Vault(tmp_path, ["inputs_a.pt", "inputs_b.pt"])
    yield held
    held.close()


def test_sealed_files_leave_the_folder(tmp_path, vault):
    assert not list(tmp_path.glob("*.pt"))
    assert torch.equal(vault.load("inputs_a.pt")[0], torch.arange(6.0))


def test_a_ticket_serves_each_of_its_files_once(vault):
    with vault.ticket(["inputs_a.pt"]) as ticket:
        assert torch.equal(fetch(ticket.payload, "inputs_a.pt")[0], torch.arange(6.0))
        with pytest.raises(RuntimeError, match="already handed out"):
            fetch(ticket.payload, "inputs_a.pt")
        with pytest.raises(RuntimeError, match="not one of this job's files"):
            fetch(ticket.payload, "inputs_b.pt")
    assert ticket.refused == ["inputs_a.pt (asked for twice)", "inputs_b.pt (not one of this job's files)"]
    with pytest.raises(RuntimeError, match="not a live ticket"):
        fetch(ticket.payload, "inputs_a.pt")  # its job is over
    assert vault.strays() == ["inputs_a.pt"]


def test_another_process_fetches_and_cannot_write_the_sealed_file(vault):
    script = textwrap.dedent("""
        import json, os, sys
        import diagnose.verify.fetch as f
        payload = json.loads(sys.argv[1])
        values = f.fetch(payload, "inputs_b.pt")
        values[0][0] = 7.0  # a private mapping: the sealed file stays as it was
        print(float(values[0].sum()))
    """)
    with vault.ticket(["inputs_b.pt"]) as ticket:
        done = subprocess.run(
            [sys.executable, "-c", script, json.dumps(ticket.payload)], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout) == 9.0
    assert torch.equal(vault.load("inputs_b.pt")[0], torch.ones(3))
    with pytest.raises(PermissionError):
        descriptor = os.open(vault.path("inputs_b.pt"), os.O_RDWR)
        os.pwrite(descriptor, b"x", 0)


def test_a_ticket_names_only_files_the_vault_holds(vault):
    with pytest.raises(KeyError):
        with vault.ticket(["ref_a.pt"]):
            pass


@pytest.mark.slow
@pytest.mark.parametrize("soak", [20, 0])
def test_a_candidate_jobs_ticket_names_exactly_what_it_fetches(tmp_path, soak):
    """A name on the ticket that the job never fetches is one a candidate could fetch ahead (the re-check's
    inputs when the re-check only changes the soaked buffers): the ticket must name no more."""
    from diagnose.runtime.runner import call
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, prepared
    from diagnose.verify.jobs import candidate_files
    from tests.conftest import FIXTURES

    task = load_task(FIXTURES / "cheats" / "honest.py")
    with prepared(task, CheckOptions(device="cpu", seeds=(0, 1))) as reference:
        cases = reference.cases + [reference.spare]
        with reference.vault.ticket(candidate_files(cases, soak)) as ticket:
            done = call(
                "diagnose.verify.jobs:candidate_job",
                {
                    "device": "cpu",
                    "job_dir": reference.job_dir,
                    "out_dir": str(tmp_path),
                    "device_lock": None,
                    **ticket.payload,
                    "candidate": str(task.candidate_path),
                    "mode": "check",
                    "cases": cases,
                    "soak": soak,
                },
                interpret=True,
                timeout_s=120,
            )
        assert done.ok, done.failure
        assert not ticket.refused and ticket.served == ticket.names
        assert (reference.spare["perturbation"] in ticket.names) == bool(soak)
