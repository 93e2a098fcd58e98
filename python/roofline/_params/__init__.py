"""The packaged parameters of the default model, and how they become the core's structs.

The only reader of ``data/calibration.json``, ``data/terms/<area>.json`` and of a Profile's
fitted patch. One job per module, lower ones first (no module imports one listed after it):

- :mod:`.packaged`: the packaged documents, read once (``calibration()``, ``terms(area)``);
- :mod:`.documents`: the documents for one Hardware (a Profile's patch merged on top);
- :mod:`.fields`: setting a dict of values on a core struct;
- :mod:`.architecture`: an accelerator's architecture (which kernels it runs);
- :mod:`.achievable`: achievable compute fractions and FlashAttention-2 fraction per accelerator;
- :mod:`.gemm`, :mod:`.attention`, :mod:`.row_ops`, :mod:`.casts`, :mod:`.host`: one area's
  core terms struct from its document;
- :mod:`.shape_aware`: core Hardware and Efficiency of the shape-aware ("calibrated") model;
- :mod:`.threads`: threads of the array sweeps;
- :mod:`.resolve`: hardware x efficiency -> core structs, memoized for the op functions.

The formulas that carry a fitted term to another accelerator live in the C++ core
(``cpp/include/roofline/terms/scaling.hpp``); this package passes names and values.
"""
