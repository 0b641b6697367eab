"""Path and value rules shared by the state stores (ZooKeeper's, checked up front)."""
from __future__ import annotations

from squall.errors import StateError
from squall.spi.state import MAX_PATH_BYTES, MAX_VALUE_BYTES, node_name_problem

SEQUENCE_DIGITS = 10


def check_path(path: str, *, sequence: bool = False) -> str:
    """Return ``path`` if it is a valid absolute node path, else raise StateError.

    Valid: starts with ``/``, no empty, ``.`` or ``..`` components, no NUL or other character
    ZooKeeper refuses (:func:`~squall.spi.state.node_name_problem`), no trailing ``/`` (except
    ``/`` itself, and a sequential create's prefix such as ``/q/``), at most
    :data:`~squall.spi.state.MAX_PATH_BYTES` bytes of UTF-8.
    """
    if not isinstance(path, str):
        raise StateError(f"state path must be a str, not {type(path).__name__}")
    if len(path) * 4 > MAX_PATH_BYTES:         # UTF-8 takes at most 4 bytes a character
        size = len(path.encode("utf-8", "surrogatepass"))
        if size > MAX_PATH_BYTES:
            raise StateError(f"state path {path[:60]!r}... of {size} bytes exceeds the "
                             f"{MAX_PATH_BYTES}-byte limit of a state path")
    if not path.startswith("/"):
        raise StateError(f"state path {path!r} must be absolute (start with '/')")
    if "\x00" in path:
        raise StateError(f"state path {path!r} contains a NUL character")
    if path == "/":
        return path
    body = path[1:-1] if (sequence and path.endswith("/")) else path[1:]
    for part in body.split("/"):
        problem = node_name_problem(part)
        if problem is not None:
            raise StateError(f"state path {path!r}: a component {problem}")
    return path


def check_value(data: object) -> bytes:
    """Return ``data`` as bytes; TypeError unless bytes-like, StateError when too large."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"state values must be bytes, not {type(data).__name__} "
                        "(encode text or JSON first)")
    if len(data) > MAX_VALUE_BYTES:
        raise StateError(f"state value of {len(data)} bytes exceeds the {MAX_VALUE_BYTES}-byte limit")
    return data


def parent_of(path: str) -> str:
    """``/a/b`` -> ``/a``; ``/a`` -> ``/``."""
    head = path.rsplit("/", 1)[0]
    return head or "/"


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[1]


def join(parent: str, name: str) -> str:
    return ("" if parent == "/" else parent) + "/" + name


def sequence_suffix(counter: int) -> str:
    """ZooKeeper's sequential suffix: the counter as 10 zero-padded digits."""
    return f"{counter:0{SEQUENCE_DIGITS}d}"
