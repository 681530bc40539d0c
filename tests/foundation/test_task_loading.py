"""Loading tasks: good files load; broken ones give one line naming the file, the line and what is missing."""

import pytest

from diagnose.errors import UsageError
from diagnose.task import load_task
from tests.conftest import EXAMPLES, FIXTURES

TASKS = FIXTURES / "tasks"


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layernorm", "matmul"])
def test_examples_load_with_their_kernels(name):
    task = load_task(EXAMPLES / f"{name}.py")
    assert task.kernels, "every example launches at least one @triton.jit kernel"
    assert task.has_input_groups
    assert not task.two_files


def test_two_files_load_as_one_task():
    task = load_task(TASKS / "two_files" / "reference.py", TASKS / "two_files" / "candidate.py")
    assert task.two_files
    assert task.candidate_path.name == "candidate.py"
    assert task.kernels == ("add_kernel",)


@pytest.mark.parametrize(
    "path, expected",
    [
        (TASKS / "does_not_exist.py", "does_not_exist.py: no such file"),
        (TASKS / "syntax_error.py", "syntax_error.py:33:"),
        (TASKS / "no_model.py", "the reference has no `Model`"),
        (TASKS / "no_get_inputs.py", "the reference has no `get_inputs`"),
        (TASKS / "no_model_new.py", "the candidate has no `ModelNew`"),
    ],
)
def test_broken_files_name_file_line_and_what_is_missing(path, expected):
    with pytest.raises(UsageError) as error:
        load_task(path)
    message = str(error.value)
    assert expected in message
    assert "\n" not in message
    assert str(path.name) in message


def test_candidate_file_without_model_new_is_named():
    with pytest.raises(UsageError, match="reference.py:.*the candidate has no `ModelNew`"):
        load_task(TASKS / "two_files" / "reference.py", TASKS / "two_files" / "reference.py")


def test_folder_is_not_a_task(tmp_path):
    with pytest.raises(UsageError, match="not a file"):
        load_task(tmp_path)


def test_non_utf8_file_is_one_line(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(b"x = '\xff'\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_task(path)
