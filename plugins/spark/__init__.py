"""squall's Spark plugin: :class:`SparkSpout` feeds topologies from Spark sources, the ``spark``
metrics consumer lands metrics as Parquet, and ``squall metrics report DIR`` summarises them
(:func:`squall.plugins.spark.report.report`).

Importing this package does not import pyspark or pyarrow: the classes load on first use and
pyspark starts only when a spout initializes (or declares outputs from a schema).
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SparkMetricsConsumer", "SparkSpout"]

_LAZY = {
    "SparkSpout": "squall.plugins.spark.spout",
    "SparkMetricsConsumer": "squall.plugins.spark.sink",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'squall.plugins.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
