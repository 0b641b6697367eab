"""Built-in plugins shipped with squall (each behind its own extra)."""
