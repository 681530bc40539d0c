"""Compile options per Ascend target: what a real launch on that device would compile with.

triton-ascend 3.2.0 picks the 950 ("910_95") pipeline only through the option
`compile_on_910_95=True`: its `compiler.py` hard-codes `is_compile_on_910_95 = False`, and the
NPUOptions defaults that depend on it (multibuffer, enable_auto_bind_sub_block,
enable_select_analysis) are computed from that constant. A launch on a 950 under a triton-ascend
that detects the device (HEAD, via `triton.tools.get_ascend_devices`) gets the 950 defaults, so we
pass them explicitly. Options the user's launch gives (`kwargs`) win over these.

`compile_mode` is the 950's switch for unstructured (indirect) access: "simd" (default),
"unstructured_in_simt" (indirect loads and stores become SIMT calls, `triton_indirect_load`, with
`parallel_mode = "mix_simd_simt"`) and "simt_only" (TTIR straight to bishengir; no ttadapter
stage). `SIMT_COMPILE_MODES` is the set a diagnosis may try on a 950.
"""

from __future__ import annotations

from diagnose.errors import UsageError
from diagnose.targets import Target

OPTIONS_910_95 = {
    "compile_on_910_95": True,
    "multibuffer": False,
    "enable_auto_bind_sub_block": False,
    "enable_select_analysis": True,
}

TARGET_OPTIONS: dict[str, dict] = {
    "ascend:910b": {},
    "ascend:950": OPTIONS_910_95,
}

COMPILE_MODES = ("simd", "unstructured_in_simt", "simt_only")
SIMT_COMPILE_MODES = ("unstructured_in_simt", "simt_only")


def target_options(target: Target) -> dict:
    """The options a launch on `target` compiles with, before the launch's own."""
    if target.backend != "npu":
        raise UsageError(f"{target.name} is not an Ascend target")
    return dict(TARGET_OPTIONS.get(target.name, {}))


def check_options(target: Target, options: dict) -> None:
    """Refuse options that this target cannot honour (the SIMT modes exist on the 950 only)."""
    mode = options.get("compile_mode")
    if mode is not None and mode not in COMPILE_MODES:
        raise UsageError(f"unknown compile_mode {mode!r}; modes: {', '.join(COMPILE_MODES)}")
    if mode in SIMT_COMPILE_MODES and not target_options(target).get("compile_on_910_95"):
        raise UsageError(f"compile_mode={mode!r} needs the Ascend 950 (ascend:950), not {target.name}")
