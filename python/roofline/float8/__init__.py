"""Will float8 (or MX / NVFP4 / blockwise) speed up a linear layer, and by how much?

``rl.float8.linear`` (:mod:`.layer`) estimates one linear layer in bf16 and in a recipe
(:mod:`.recipes`), ``rl.float8.cast`` (:mod:`.casts`) torchao's compiled cast of one tensor, and
``rl.float8.sweep`` (:mod:`.sweep`) a set of shapes as a table.
"""

from __future__ import annotations

from .casts import GRANULARITIES, CastEstimate, cast, cast_kernels
from .layer import Float8Linear, linear
from .recipes import MODES, RECIPES, recipe_names
from .sweep import SHAPE_SETS, TORCHAO_COLUMNS, ShapesLike, shapes, sweep

__all__ = [
    "GRANULARITIES",
    "MODES",
    "RECIPES",
    "SHAPE_SETS",
    "TORCHAO_COLUMNS",
    "CastEstimate",
    "Float8Linear",
    "ShapesLike",
    "cast",
    "cast_kernels",
    "linear",
    "recipe_names",
    "shapes",
    "sweep",
]
