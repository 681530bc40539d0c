"""A launch guessed from a kernel's source: pointers, sizes, flags, dtypes and tuned values read from how
the kernel uses its parameters."""

import ast
import textwrap

from diagnose.task.generate import guess_launch, guessed_launches
from diagnose.task.specs import DtypeValue, TensorSpec

SOURCE = textwrap.dedent("""
    import triton
    import triton.language as tl

    @triton.jit
    def layer_norm_fwd(X, Y, W, Mean, Rstd, index_ptr, stride_xm, stride_xn, N, eps,
                       HAS_BIAS: tl.constexpr, OUT_DTYPE: tl.constexpr, BLOCK_N: tl.constexpr, GROUP: tl.constexpr = 8):
        row = tl.program_id(0)
        col_block = tl.program_id(1)
        X += row * stride_xm
        cols = col_block * BLOCK_N + tl.arange(0, BLOCK_N)
        i = tl.load(index_ptr + row)
        x = tl.load(X + cols * stride_xn, mask=cols < N).to(tl.float32)
        if HAS_BIAS:
            x += 1.0
        tl.store(Mean + row, tl.sum(x, axis=0))
        tl.store(Rstd + row, 1 / tl.sqrt(tl.sum(x * x, axis=0) + eps))
        tl.store(Y + cols, (x * tl.load(W + cols)).to(OUT_DTYPE), mask=cols < N)

    @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def tuned(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + o, tl.load(x_ptr + o) * 2)

    def host():
        pass
""")


def test_parameters_are_read_from_their_use():
    tree = ast.parse(SOURCE)
    call = guess_launch(tree.body[2])
    named = call.named()
    for pointer in ("X", "Y", "W", "Mean", "Rstd"):
        assert named[pointer] == TensorSpec("f32", (1 << 20,)), pointer
    assert named["index_ptr"].dtype == "i64" and named["index_ptr"].high == 64
    assert (named["stride_xm"], named["stride_xn"], named["N"], named["eps"]) == (1024, 1, 1024, 0.5)
    assert named["HAS_BIAS"] is False and named["OUT_DTYPE"] == DtypeValue("tl.float32")
    assert named["BLOCK_N"] == 64 and named["GROUP"] == 8
    assert call.grid == (16, 8)


def test_every_parameter_is_guessed_the_wrappers_drop_what_they_set_at_launch():
    """The source cannot say what configs a helper returns (`configs=_get_configs()`), nor whether a
    `BLOCK_M` is tuned or passed by the host: the guess names every parameter, and the replay leaves
    to the autotuner and heuristics the values they set (`diagnose.task.replay.decided_by`)."""
    tree = ast.parse(SOURCE)
    (first, second) = guessed_launches(tree)
    assert first.target == "layer_norm_fwd"
    assert second.text() == "tuned[(128,)](x_ptr=f32[1048576], n=1024, BLOCK=64, EVEN=False)"


def test_a_device_function_is_never_launched():
    """A `@triton.jit` function that returns a value (a helper, a `tl.reduce` combine function) compiles
    inside its callers: no launch is guessed for it."""
    tree = ast.parse(
        textwrap.dedent("""
        import triton

        @triton.jit
        def combine(a, b):
            return a + b

        @triton.jit
        def kernel(x_ptr, n):
            def inner():
                return 1
            tl.store(x_ptr, n)
    """)
    )
    assert [call.target for call in guessed_launches(tree)] == ["kernel"]


def test_a_pointer_whose_values_address_memory_holds_indices():
    """FlagGems' nll_loss and embedding: the target and the token ids have plain names; what marks them
    is that their loaded values are added to another pointer."""
    tree = ast.parse(
        textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def nll(inp_ptr, tgt_ptr, out_ptr, N, C, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tgt = tl.load(tgt_ptr + offs, mask=offs < N, other=0)
            inp = tl.load(inp_ptr + offs * C + tgt, mask=offs < N)
            tl.store(out_ptr + offs, -inp, mask=offs < N)

        @triton.jit
        def embed(out_ptr, in_ptr, weight_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
            in_ptr += tl.program_id(0)
            row = tl.load(in_ptr)
            weight_ptr += row * N
            cols = tl.arange(0, BLOCK)
            tl.store(out_ptr + cols, tl.load(weight_ptr + cols, mask=cols < N), mask=cols < N)
    """)
    )
    nll, embed = guessed_launches(tree)
    assert nll.named()["tgt_ptr"].dtype == "i64" and nll.named()["inp_ptr"].dtype == "f32"
    assert embed.named()["in_ptr"].dtype == "i64" and embed.named()["weight_ptr"].dtype == "f32"


def test_pointers_handed_to_a_helper_and_sizes_named_in_lower_case():
    """FlagGems' `unique`: the kernel passes its pointers and `tile_size` on to an `_impl` function."""
    tree = ast.parse(
        textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def counts_impl(pid, idx_ptr: tl.tensor, n: int, counts_ptr: tl.tensor, tile_size: tl.constexpr):
            i = pid * tile_size + tl.arange(0, tile_size)
            tl.store(counts_ptr + i, tl.load(idx_ptr + i, mask=i < n), mask=i < n)

        @triton.jit
        def counts_kernel(idx_ptr, n, counts_ptr, tile_size: tl.constexpr):
            counts_impl(tl.program_id(0), idx_ptr, n, counts_ptr=counts_ptr, tile_size=tile_size)
    """)
    )
    call = next(c for c in guessed_launches(tree) if c.target == "counts_kernel")
    named = call.named()
    assert isinstance(named["idx_ptr"], TensorSpec) and isinstance(named["counts_ptr"], TensorSpec)
    assert named["n"] == 1024 and named["tile_size"] == 64
