"""The user-facing API: components, tuples, streams, the builder and groupings."""
