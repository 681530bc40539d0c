"""The Ascend target: triton-ascend compiles and Ascend IR facts mapped to source lines.

triton-ascend installs as `triton` itself, so it runs in the toolchain's own environment
(`diagnose.toolchain`, `diagnose toolchain setup ascend`); this package has two sides.

Toolchain-worker side (imported by the Ascend environment's Python only; imports triton-ascend):
- `worker.py`: entries `inspect_file` / `inspect_files`: capture launches (the GPU layer's
  `diagnose.ir.launch`), expand autotune configs, compile each, return JSON;
- `compile.py`: the backend's own stages driven by hand (source -> ttir -> ttadapter -> npubin),
  timed, with per-pass IR (`pipeline.py`) and npubin reported as unavailable without CANN;
- `specialize.py`: triton-ascend 3.2.0's `JITFunction.run` specialization, offline;
- `offline_driver.py`: a stand-in NPU driver so user code that asks for core counts imports;
- `probe.py`: what the environment can do here (the toolchain's probe).

Main-environment side (no torch, no triton):
- `inspect.py`: `inspect_ascend(path, target, fmt, passes, stage, kernel)`, the command;
- `facts/`: one extractor per fact over the worker's artefacts (`facts_for(AscendFactContext)`);
- `summary.py`, `render.py`: phrases, the per-line table, the pass timeline, annotated stages.

Running on an NPU is the runtime's (`diagnose.toolchain.npu`: the `npu` device's placement in the
toolchain's Python); nothing here runs user code on a device.

Shared: `options.py` (per-target compile options: the 950's `compile_on_910_95=True`, its SIMT
`compile_mode`s), `environment.py` (what this machine lacks: CANN, torch_npu, a device).
"""
