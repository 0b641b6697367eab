"""What a :class:`~squall.plugins.spark.SparkSpout` reads: its source configuration.

Component config keys (exactly one of path, table or query):

- ``spark.source.format`` (``parquet``, ``csv``, ``json``, ``orc``, ``delta``, ...) with
  ``spark.source.path`` (a path or glob Spark understands; a list of paths is accepted);
- ``spark.source.table``: a table or view name known to the session's catalog;
- ``spark.source.query``: a Spark SQL query;
- ``spark.source.options``: reader options (``{"header": true, "inferSchema": true}``) of a
  path or a data source table; a query or a view has no reader of its own, so options with
  either are an error;
- ``spark.source.columns``: the emitted fields, in order (default: every column).

:func:`parse_source` checks the shape without Spark; :func:`load_dataframe` builds the
DataFrame. Both raise :class:`squall.TopologyError` with one clear line. :func:`fingerprint`
digests what a DataFrame built so reads (the spout's progress is only taken up over the same).
"""
from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from squall.errors import TopologyError

from squall.plugins.spark.session import first_line, quiet_spark_errors

__all__ = ["SourceSpec", "fingerprint", "load_dataframe", "parse_source"]

log = logging.getLogger(__name__)

_KEYS = ("spark.source.path", "spark.source.table", "spark.source.query")


@dataclass(frozen=True)
class SourceSpec:
    """A validated source configuration (see the module docstring)."""

    kind: str                             # "path", "table" or "query"
    target: str | tuple[str, ...]         # the path(s), table name or SQL text
    format: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None

    def describe(self) -> str:
        if self.kind == "path":
            return f"{self.format} source {self.target!r}"
        if self.kind == "table":
            return f"table {self.target!r}"
        return "query " + repr(str(self.target)[:80])


def parse_source(config: Mapping[str, Any], component: str = "spark spout") -> SourceSpec:
    """Validate the ``spark.source.*`` keys of ``config`` (no Spark needed).

    Raises TopologyError naming the key at fault; a local path (no URL scheme) that does not
    exist is reported here, other paths are checked by Spark when the DataFrame is built."""
    given = [k for k in _KEYS if config.get(k) not in (None, "", [])]
    if len(given) != 1:
        raise TopologyError(f"{component}: set exactly one of {', '.join(_KEYS)}"
                            + (f" (got {', '.join(given)})" if given else ""))
    key = given[0]
    kind = key.rsplit(".", 1)[1]
    raw = config[key]
    fmt = config.get("spark.source.format")
    if kind == "path":
        if not isinstance(fmt, str) or not fmt:
            raise TopologyError(f"{component}: spark.source.path needs spark.source.format "
                                "(parquet, csv, json, orc, delta, ...)")
        paths = (raw,) if isinstance(raw, str) else raw
        if not isinstance(paths, Sequence) or not all(isinstance(p, str) for p in paths):
            raise TopologyError(f"{component}: spark.source.path must be a path or a list of "
                                f"paths, got {raw!r}")
        for p in paths:
            _check_local_path(component, p)
        target: str | tuple[str, ...] = raw if isinstance(raw, str) else tuple(paths)
    else:
        if not isinstance(raw, str):
            raise TopologyError(f"{component}: {key} must be a string, got {raw!r}")
        target = raw
    options = config.get("spark.source.options") or {}
    if not isinstance(options, Mapping):
        raise TopologyError(f"{component}: spark.source.options must be a mapping of reader "
                            f"options, got {options!r}")
    if options and kind == "query":
        raise TopologyError(f"{component}: spark.source.options do not apply to "
                            "spark.source.query (a query has no reader); read the files in the "
                            "query itself, e.g. FROM parquet.`/data/events`, or use "
                            "spark.source.format and spark.source.path")
    columns = config.get("spark.source.columns")
    if columns is not None:
        if (isinstance(columns, str) or not isinstance(columns, Sequence) or not columns
                or not all(isinstance(c, str) and c for c in columns)):
            raise TopologyError(f"{component}: spark.source.columns must be a non-empty list of "
                                f"column names, got {columns!r}")
        if len(set(columns)) != len(columns):
            raise TopologyError(f"{component}: spark.source.columns repeats a column: "
                                f"{list(columns)}")
        columns = tuple(columns)
    return SourceSpec(kind=kind, target=target, format=fmt if kind == "path" else None,
                      options={str(k): _option(v) for k, v in options.items()},
                      columns=columns)


def _option(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _check_local_path(component: str, path: str) -> None:
    parsed = urlparse(path)
    if parsed.scheme not in ("", "file") or len(parsed.scheme) == 1:   # remote or "C:\..."
        return
    local = parsed.path if parsed.scheme == "file" else path
    if "{" in local or "[^" in local:
        return      # Hadoop's {a,b} and [^x], which Python's glob does not know: Spark checks
    if glob.has_magic(local):
        if not glob.glob(local):
            raise TopologyError(f"{component}: spark.source.path {path!r} matches no file")
    elif not os.path.exists(local):
        raise TopologyError(f"{component}: spark.source.path {path!r} does not exist")


def _is_view(spark: Any, name: str) -> bool:
    """Whether ``name`` is a view (temporary or not) in ``spark``'s catalog; False if it is
    unknown (reading it then reports that)."""
    try:
        table = spark.catalog.getTable(name)
    except Exception:   # unknown name, or a catalog that cannot say: leave it to the read
        return False
    return bool(table.isTemporary) or str(table.tableType).upper() in ("VIEW", "TEMPORARY")


def _format_hint(spec: SourceSpec, reason: str) -> str:
    """What to do when Spark does not know the source's format: for ``delta``, how to add
    Delta Lake to the sessions squall starts."""
    if spec.kind != "path" or "DATA_SOURCE_NOT_FOUND" not in reason:
        return ""
    if str(spec.format).lower() != "delta":
        return ""
    from importlib.metadata import PackageNotFoundError, version
    try:
        release = version("delta-spark")
    except PackageNotFoundError:
        release = "VERSION"
    try:       # Spark 4 is built with Scala 2.13, Spark 3 (by default) with 2.12
        scala = "2.13" if int(version("pyspark").split(".")[0]) >= 4 else "2.12"
    except (PackageNotFoundError, ValueError):
        scala = "2.13"
    return ("; the delta format needs Delta Lake: pip install delta-spark (the release made "
            "for your Spark version) and, in spark.conf, spark.jars.packages: "
            f"io.delta:delta-spark_{scala}:{release} (or spark.jars with its jar files), "
            "spark.sql.extensions: io.delta.sql.DeltaSparkSessionExtension, "
            "spark.sql.catalog.spark_catalog: org.apache.spark.sql.delta.catalog.DeltaCatalog")


def load_dataframe(spark: Any, spec: SourceSpec, component: str = "spark spout") -> Any:
    """Build the DataFrame ``spec`` describes on ``spark`` (columns selected in order).

    Blocks while Spark lists files and infers the schema. Raises TopologyError for a missing
    path, an unknown format, a bad query, an unknown table or column, and for reader options
    on a view (a view is a stored query: Spark would ignore them)."""
    if spec.kind == "table" and spec.options and _is_view(spark, str(spec.target)):
        raise TopologyError(f"{component}: spark.source.options do not apply to "
                            f"{spec.describe()}, a view (Spark ignores reader options there); "
                            "set them where the view is defined")
    with quiet_spark_errors():   # the error is this function's one line
        try:
            if spec.kind == "path":
                reader = spark.read.format(spec.format)
                if spec.options:
                    reader = reader.options(**spec.options)
                target = spec.target if isinstance(spec.target, str) else list(spec.target)
                df = reader.load(target)
            elif spec.kind == "table":
                df = spark.read.options(**spec.options).table(spec.target) if spec.options \
                    else spark.table(spec.target)
            else:
                df = spark.sql(spec.target)
        except Exception as exc:   # AnalysisException, Py4JJavaError, ...: one line
            reason = first_line(exc)
            raise TopologyError(f"{component}: cannot read {spec.describe()}: {reason}"
                                f"{_format_hint(spec, reason)}") from exc
    if spec.columns is not None:
        missing = [c for c in spec.columns if c not in df.columns]
        if missing:
            raise TopologyError(f"{component}: spark.source.columns names {missing} not in "
                                f"{spec.describe()}; its columns: {df.columns}")
        df = df.select(*["`" + c.replace("`", "``") + "`" for c in spec.columns])
    return df


def fingerprint(spec: SourceSpec, df: Any) -> str:
    """A digest (hex) of what ``df``, built from ``spec``, reads: the kind of source, its
    format, path(s), table or query text, reader options and columns, and the files Spark
    lists for it (``DataFrame.inputFiles``: file sources and file-based tables; a source
    Spark lists no files for is known by its settings alone). Equal digests: the same
    settings over the same set of files (their contents are not read)."""
    try:
        files: list[str] | None = sorted(str(f) for f in df.inputFiles())
    except Exception as exc:    # a source whose files Spark cannot list: its settings only
        log.debug("listing the input files of %s failed: %s", spec.describe(), exc)
        files = None
    target = spec.target if isinstance(spec.target, str) else list(spec.target)
    described = {"kind": spec.kind, "format": spec.format, "target": target,
                 "options": dict(sorted(spec.options.items())),
                 "columns": None if spec.columns is None else list(spec.columns),
                 "files": files}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()
