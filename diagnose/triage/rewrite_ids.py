"""The rewrites that answer each triage code, by id (`diagnose/rewrite/` owns the rewrites themselves).

Triage runs as you type and must not import the rewrite layer (libcst and fifteen codemods, a few
hundred milliseconds), so the ids are kept here as data. They are the rewrite table's own answer
(`diagnose.rewrite.table.CODE_REWRITES`, built from each rewrite's `codes`): a test holds the two equal,
so a rewrite that starts or stops answering a code fails CI until this table follows.
"""

REWRITE_IDS: dict[str, tuple[str, ...]] = {
    "ASC001": ("persistent-grid",),
    "ASC002": ("persistent-grid",),
    "ASC003": ("two-level-tiling",),
    "ASC006": ("structured-2d-index",),
    "ASC007": ("int32-index",),
    "ASC008": ("load-other",),
    "ASC011": ("wgmma-tiles",),
    "ASC012": ("wgmma-tiles",),
    "ASC013": ("two-level-tiling",),
    "ASC014": ("single-pass-row",),
    "ASC015": ("hoist-loop-invariant",),
    "TRI001": ("retune-launch", "add-autotune", "extend-autotune"),
    "TRI004": ("dot-input-precision",),
    "TRI005": ("wgmma-tiles", "attention-tiles", "add-autotune"),
    "TRI006": ("wgmma-tiles", "attention-tiles", "add-autotune"),
    "TRI007": ("single-pass-row", "online-softmax"),
    "TRI008": ("block-loop-sum", "block-per-program"),
    "TRI011": ("fuse-elementwise",),
    "TRI018": ("retune-launch", "extend-autotune"),
    "TRI019": ("group-m-swizzle",),
    "TRI020": ("persistent-grid",),
    "TRI022": ("wgmma-tiles",),
    "TRI023": ("wgmma-tiles",),
    "TRI024": ("add-autotune",),
    "TRI025": ("block-per-program",),
    "TRI028": ("constexpr-block-size",),
    "TRI029": ("column-tiles",),
    "TRI030": ("fuse-host-epilogue",),
    "TRI031": ("elementwise-max",),
    "TRI032": ("pointer-subscript",),
}
