"""squall."""
