"""The one line a Spark / Py4J error becomes (no Spark needed: the texts are Spark's own)."""
from __future__ import annotations

import pytest

from squall.plugins.spark.session import first_line

FRAMES = ("\tat org.apache.spark.sql.errors.QueryExecutionErrors$.dataSourceNotFoundError("
          "QueryExecutionErrors.scala:770)\n\tat org.apache.spark.sql.execution.datasources."
          "DataSource$.lookupDataSource(DataSource.scala:726)\n")
NOT_FOUND = ("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: delta. Make sure the "
             "provider name is correct and the package is properly registered and compatible "
             "with your Spark version. SQLSTATE: 42K02")


class JavaError(Exception):
    """Stands for py4j's Py4JJavaError: no ``getMessage``, str() is the whole JVM text."""


@pytest.mark.parametrize("text, line", [
    # pyspark leaves an unknown data source as a Py4JJavaError: its first line names only the
    # JVM call, the Spark message is on the next one behind the Java exception class
    ("An error occurred while calling o31.load.\n: org.apache.spark."
     f"SparkClassNotFoundException: {NOT_FOUND}\n{FRAMES}", NOT_FOUND),
    # a parse error starts with an empty line and carries the SQL after the message
    ("\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'. SQLSTATE: 42601 (line 1, pos 0)"
     "\n\n== SQL ==\nSELEC x\n^^^\n",
     "[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'. SQLSTATE: 42601 (line 1, pos 0)"),
    # the error class wins over an earlier plain line, also in a cause
    ("An error occurred while calling o7.collectToPython.\n: org.apache.spark.SparkException: "
     f"Job aborted.\n{FRAMES}Caused by: org.apache.spark.SparkFileNotFoundException: "
     "[FAILED_READ_FILE.FILE_NOT_EXIST] File file:/d/x.parquet does not exist.\n",
     "[FAILED_READ_FILE.FILE_NOT_EXIST] File file:/d/x.parquet does not exist."),
    # without an error class: the first real line, the Java class shortened to its name
    ("An error occurred while calling o1.load.\n: java.io.FileNotFoundException: /d/x "
     f"(Permission denied)\n{FRAMES}", "FileNotFoundException: /d/x (Permission denied)"),
    ("An error occurred while calling o1.count.\n: java.lang.NullPointerException\n"
     + FRAMES, "NullPointerException"),
    ("Answer from Java side is empty", "Answer from Java side is empty"),
])
def test_the_meaningful_line_of_a_spark_error(text: str, line: str) -> None:
    assert first_line(JavaError(text)) == line


def test_get_message_is_preferred_and_an_empty_error_gives_its_type() -> None:
    class Captured(Exception):       # pyspark's AnalysisException and friends
        def getMessage(self) -> str:
            return NOT_FOUND

    assert first_line(Captured("long text\nwith the plan")) == NOT_FOUND
    assert first_line(JavaError("An error occurred while calling o2.x.\n" + FRAMES)) == \
        "JavaError"
    assert len(first_line(JavaError("[X] " + "y" * 1000))) == 300
