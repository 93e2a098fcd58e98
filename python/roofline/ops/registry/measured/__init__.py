"""Predictors of measurement rows: ``predict(row, hardware, efficiency)`` ->
``[(family, measured, predicted)]``, one module per area. The registry's public-op entries
(:mod:`..public_entries`) point to them; ``roofline.validation`` and ``roofline.calibration``
find them there."""
