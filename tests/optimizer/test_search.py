"""The launch-config search: static pruning before compiling, IR pruning after, ranking and its label."""

from __future__ import annotations

from diagnose.optimizer import ranking
from diagnose.optimizer.search import Trial, ir_prune, pick, static_prune
from diagnose.targets import lookup

SM90 = lookup("cuda:sm90")


def values(m, n, k, warps, stages):
    return {"BM": m, "BN": n, "BK": k, "num_warps": warps, "num_stages": stages}


def test_static_prune_before_compiling():
    assert static_prune(values(128, 128, 64, 8, 3), SM90) is None
    assert "shared memory" in static_prune(values(256, 256, 128, 8, 4), SM90)
    assert "wgmma" in static_prune(values(64, 128, 64, 8, 3), SM90), "64 rows over two warpgroups"
    assert "wgmma" in static_prune(values(128, 128, 64, 2, 3), SM90)
    assert static_prune(values(64, 128, 64, 8, 3), lookup("cuda:sm80")) is None, "sm_80 has no wgmma rule"
    assert static_prune({"BLOCK": 4096, "num_warps": 8}, SM90) is None


def view(path, *, errors=(), seconds=1.0, spills=0, shared_over=False, engines=("wgmma",), narrow=0):
    return ranking.StaticView(
        path, tuple(errors), (("g", seconds),), spills, shared_over, tuple(engines), narrow, ranking.ESTIMATE
    )


def test_ir_prune_on_facts():
    views = {
        0: view("ok"),
        1: view("spill", spills=512),
        2: view("smem", shared_over=True),
        3: view("v2", engines=("mma_v2",)),
        4: view("narrow", narrow=2),
        5: view("broken", errors=("CompileFailed: out of resources",)),
    }
    reasons = ir_prune(views, SM90)
    assert reasons[0] is None
    assert "spills" in reasons[1]
    assert "shared memory" in reasons[2]
    assert "mma_v2, not wgmma" in reasons[3]
    assert "narrow" in reasons[4]
    assert "does not compile" in reasons[5]
    # chosen by timing only: the current values (0) are kept whatever they do, and only what cannot
    # run well is dropped; a narrow access or another dot engine is for the timing to judge
    measured = ir_prune({**views, 0: view("current", spills=64)}, SM90, measured=True)
    assert measured[0] is None and measured[3] is None and measured[4] is None
    assert "spills" in measured[1] and "shared memory" in measured[2] and "does not compile" in measured[5]


def test_mma_path_only_matters_when_some_config_reaches_it():
    views = {0: view("a", engines=("mma_v2",)), 1: view("b", engines=("mma_v2",), seconds=2.0)}
    assert ir_prune(views, SM90) == {0: None, 1: None}


def test_pick_breaks_estimate_ties_by_preference():
    trials = [
        Trial((("B", 1024),), seconds=1.015),
        Trial((("B", 4096),), seconds=1.0),
        Trial((("B", 8192),), seconds=0.9),
    ]
    assert pick(trials, [0, 1]) == 0, "within 2% of the fastest the earlier (preferred) one wins"
    assert pick(trials, [0, 1, 2]) == 2
    measured = [
        Trial((("B", 1024),), seconds=1.015, measured=True),
        Trial((("B", 4096),), seconds=1.0, measured=True),
        Trial((("B", 8192),), seconds=0.95, measured=True),
    ]
    assert pick(measured, [0, 1]) == 0, "a measured gain under 2% is not worth changing the source"
    assert pick(measured, [0, 1, 2]) == 2


def test_gain_is_a_geometric_mean_over_common_groups():
    base = ranking.StaticView("a", (), (("g1", 4.0), ("g2", 1.0)), 0, False, (), 0, ranking.ESTIMATE)
    cand = ranking.StaticView("b", (), (("g1", 1.0), ("g2", 1.0), ("g3", 9.0)), 0, False, (), 0, ranking.ESTIMATE)
    assert ranking.gain(base, cand) == 2.0


def test_placeholder_is_monotone_in_what_rewrites_change():
    from diagnose.records import Evidence

    narrow = Evidence("ir", "ptx", "GlobalAccessWidth", "missed")
    small = ranking.placeholder_seconds({"grid": [100000]}, [narrow], SM90)
    big = ranking.placeholder_seconds({"grid": [1000]}, [], SM90)
    assert big < small


def test_an_autotuned_launch_counts_its_best_config_once():
    from diagnose.optimizer.ranking import launch_seconds

    assert launch_seconds([("k", 1.0), ("k", 2.0)]) == 3.0, "two launches of a plain kernel add up"
    assert launch_seconds([("k [BLOCK: 1024]", 3.0), ("k [BLOCK: 4096]", 1.0)]) == 1.0


def test_a_search_done_before_is_read_from_the_cache(tmp_path, monkeypatch):
    """The same rewrite on the same source, task, device and target is searched once: a run that
    proposes again at a deeper level reads the measured table instead of timing it again; another
    task file (other shapes) or device searches again."""
    from diagnose.optimizer import search as module
    from diagnose.optimizer.search import SearchOptions, SearchResult, Trial
    from diagnose.rewrite.table import REWRITES
    from tests.rewrite.goldens import FIXTURES, context

    runs = []

    def measured(rewrite, ctx, plan, options, space):
        runs.append(options.device)
        trials = (
            Trial((("num_warps", 4), ("num_stages", 3)), seconds=2e-3, measured=True),
            Trial((("num_warps", 8), ("num_stages", 3)), seconds=1e-3, measured=True),
        )
        return SearchResult(rewrite.id, trials[1].values, trials, "time on cuda")

    monkeypatch.setattr(module, "_search", measured)
    rewrite, ctx = REWRITES["launch-options"], context(FIXTURES / "launch-options")
    task = tmp_path / "task.py"
    task.write_text("# shapes A\n")
    options = SearchOptions(str(task), device="cuda", cache_root=str(tmp_path / "cache"))
    first = module.search(rewrite, ctx, rewrite.check(ctx).plan, options)
    again = module.search(rewrite, ctx, rewrite.check(ctx).plan, options)
    assert runs == ["cuda"] and again.trials == first.trials and again.chosen == first.chosen
    assert again.ranked_by.endswith("from the search cache")
    task.write_text("# shapes B\n")
    module.search(rewrite, ctx, rewrite.check(ctx).plan, options)
    assert len(runs) == 2


def test_a_baseline_trial_is_kept_and_spills_count_beyond_its_own():
    """extend-autotune's first trial is the source as it is (the authors' configs alone); every other
    trial compiles those configs too, so their spills are in each: only spills beyond them prune."""
    views = {0: view("authors", spills=64), 1: view("same", spills=64), 2: view("more", spills=128)}
    reasons = ir_prune(views, SM90, baseline=True)
    assert reasons[0] is None and reasons[1] is None
    assert "spills" in reasons[2]
    assert "spills" in ir_prune(views, SM90)[1], "without a baseline any spill prunes"


def test_only_configs_that_beat_the_authors_are_added():
    from diagnose.optimizer.pipeline import beat_the_authors, chosen_params
    from diagnose.optimizer.search import SearchResult
    from diagnose.rewrite.table import REWRITES

    trials = (
        Trial((), seconds=1.0),
        Trial((("BLOCK", 1024), ("num_warps", 4)), seconds=1.0),  # the authors' best still runs
        Trial((("BLOCK", 2048), ("num_warps", 8)), seconds=0.99),  # within the estimate's tie
        Trial((("BLOCK", 4096), ("num_warps", 8)), seconds=0.7),
        Trial((("BLOCK", 8192), ("num_warps", 8)), seconds=0.8),
        Trial((("BLOCK", 8192), ("num_warps", 16)), pruned="spills (64 B of spill stores)", seconds=0.5),
    )
    result = SearchResult("extend-autotune", (("BLOCK", 4096), ("num_warps", 8)), trials, ranking.ESTIMATE)
    assert [dict(t.values)["BLOCK"] for t in beat_the_authors(result)] == [4096, 8192]
    assert chosen_params(REWRITES["extend-autotune"], result) == {
        "configs": [{"BLOCK": 4096, "num_warps": 8}, {"BLOCK": 8192, "num_warps": 8}]
    }
    nothing = SearchResult("extend-autotune", (), trials[:3], ranking.ESTIMATE)
    assert chosen_params(REWRITES["extend-autotune"], nothing) == {"configs": []}


def test_an_add_autotune_trial_compiles_its_one_config():
    """Each trial of add-autotune's search is the one configuration it ranks (they used to compile the
    same six-config file, so every trial read the same time); the chosen list is the ranked survivors."""
    from diagnose.rewrite.table import REWRITES
    from tests.rewrite.goldens import FIXTURES, context

    rewrite, ctx = REWRITES["add-autotune"], context(FIXTURES / "add-autotune", "before_module.py")
    space = rewrite.search_space(ctx, rewrite.check(ctx).plan)
    one = rewrite.apply(ctx.with_params(space[2]))
    assert one.count("triton.Config(") == 1 and '"BLOCK_SIZE": 2048}, num_warps=4)' in one
    chosen = rewrite.apply(ctx.with_params({"configs": space[1:4]}))
    assert chosen.count("triton.Config(") == 3


def test_with_a_baseline_narrow_accesses_are_left_to_the_estimate():
    """Every trial holds the authors' configs, whose narrow accesses are in each count, and a row
    reduction's one-value store is narrow in every config: the estimate, which weighs an access by the
    bytes it moves, ranks them instead."""
    views = {0: view("authors", narrow=3), 1: view("wide", narrow=3), 2: view("narrow", narrow=4)}
    assert ir_prune(views, SM90, baseline=True) == {0: None, 1: None, 2: None}
    assert "narrow" in ir_prune(views, SM90)[2]


def test_register_spills_call_for_the_launch_value_rewrites():
    """ptxas spilled (lightllm's silu_and_mul: a 128 x 128 tile with 4 warps, 255 registers): a smaller
    tile or more warps answers it, and each candidate names the spill among what it answers."""
    from diagnose.optimizer.pipeline import called_by
    from diagnose.records import Evidence, Location
    from diagnose.rewrite.table import REWRITES

    spill = Evidence("ir", "ptxas", "RegisterSpill", "missed", Location("silu_and_mul.py", 12), (("spill_stores", 72),))
    answering = {rid for rid, rewrite in REWRITES.items() if called_by(rewrite, [], [spill])}
    assert answering == {"retune-launch", "extend-autotune", "launch-options"}
    assert called_by(REWRITES["retune-launch"], [], [spill]) == ("RegisterSpill@silu_and_mul.py:12",)
