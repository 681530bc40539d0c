"""A kernel module's dotted name and package root, as its project imports it."""

from diagnose.task.module import identity


def _touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_a_module_in_a_package_is_named_from_the_package_root(tmp_path):
    _touch(tmp_path / "src" / "lib" / "__init__.py")
    _touch(tmp_path / "src" / "lib" / "ops" / "__init__.py")
    found = identity(_touch(tmp_path / "src" / "lib" / "ops" / "rms_norm.py"))
    assert (found.name, found.root) == ("lib.ops.rms_norm", tmp_path / "src")


def test_a_folder_without_init_inside_a_package_is_a_namespace_subpackage(tmp_path):
    """Liger-Kernel's `ops/experimental/` has no `__init__.py`; its modules import `liger_kernel....`."""
    _touch(tmp_path / "src" / "lib" / "__init__.py")
    _touch(tmp_path / "src" / "lib" / "ops" / "__init__.py")
    found = identity(_touch(tmp_path / "src" / "lib" / "ops" / "experimental" / "embedding.py"))
    assert (found.name, found.root) == ("lib.ops.experimental.embedding", tmp_path / "src")


def test_a_file_outside_any_package_is_its_own_root(tmp_path):
    found = identity(_touch(tmp_path / "scripts" / "01-vector-add.py"))
    assert (found.name, found.root) == ("01-vector-add", tmp_path / "scripts")


def test_other_compilers_jit_decorators_are_not_triton_kernels():
    import ast

    from diagnose.task.module import jit_functions

    tree = ast.parse(
        "import cutlass.cute as cute\nimport triton\n\n"
        "@cute.jit\ndef host_side(x):\n    pass\n\n"
        "@triton.jit\ndef kernel(x_ptr):\n    pass\n\n"
        "@torch.jit.script\ndef scripted(x):\n    return x\n"
    )
    assert jit_functions(tree) == ("kernel",)
