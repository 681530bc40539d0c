"""diagnose: compiler-grounded diagnosis and verified optimization of Triton kernels."""

__version__ = "0.1.0"
