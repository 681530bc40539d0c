"""Running user code in worker subprocesses: timeouts, crash isolation, devices, the interpreter on CPU.

`diagnose.runtime.runner.call` runs a worker entry; this package's modules import nothing from its
`__init__`, so the worker side (`worker`, `cpu_standin`) loads without the parent side (`runner`, `zygote`)."""
