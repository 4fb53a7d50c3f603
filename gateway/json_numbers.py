"""A JSON request body read with simdjson, its tensors' numbers straight into one buffer each.

orjson and the standard library make a Python object per number: a 224 × 224 × 3 image in TF
Serving's row format is 150,528 floats, ~50 ms of a front end's CPU. :func:`read` parses the body
with simdjson and, at the places the caller names (``patterns``: where a protocol keeps its
tensors), reads an array whose leaves are all numbers, however nested, into one flat buffer
(:class:`Numbers`); everything else becomes the Python values orjson would give.

It answers None — the caller then parses as before, with its own messages — whenever it cannot
vouch for giving exactly what orjson gives: a document that is not valid JSON for simdjson
(``NaN``, ``Infinity``, integers past 64 bits, nesting past 1,024: the caller's parser says
what is wrong), a byte-order mark, a top level that is not an object, nesting past Python's
recursion, a key repeated in one object, and, with ``dense``, an array of numbers that is not
dense or a backslash anywhere:

``dense`` (TF Serving's row and columnar formats, whose nesting is the tensor's shape): each
array of numbers takes the shape of its first elements at each depth (:attr:`Numbers.shape`),
and the whole document's structure is checked against it at C speed — the body with every
byte but ``[ ] { } , : "`` removed and the strings cut out (a string holds no quote without a
backslash) must equal the structure the parsed values give, in which every array of numbers of
shape ``(2, 3)`` reads ``[[,,],[,,]]``. Equal, every such array is dense.

A :class:`Numbers` keeps the way back: :meth:`Numbers.python` is the value as orjson reads it
(the body parsed once more), for the caller's exact rules and messages when the buffer is not
enough (a literal's int or float kind, a value out of a dtype's range).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import orjson
import simdjson

Path = tuple[str | int, ...]
"""Keys and indices from the document's root to a value."""
Pattern = tuple[str | type, ...]
"""A path where a tensor's numbers may be: each element a key, or ``str`` (any key) or ``int``
(any index)."""

MAX_RANK: Final = 64
"""Deeper arrays of numbers stay Python lists (a tensor has at most 64 dimensions)."""
_BOM: Final = b"\xef\xbb\xbf"
_STRUCTURE: Final = b'[]{},:"'
_DELETE: Final = bytes(b for b in range(256) if b not in _STRUCTURE)


class Numbers:
    """A JSON array whose leaves are all numbers, read into one flat buffer: ``values`` is
    int64 when every leaf is an integer literal within int64, else float64 (each literal
    correctly rounded); ``shape``: the lengths of the first elements at each depth (the array's
    shape when it is dense; :func:`read` with ``dense`` checked that it is)."""

    __slots__ = ("_path", "_source", "shape", "values")

    def __init__(
        self, values: npt.NDArray[Any], shape: tuple[int, ...], source: _Source, path: Path
    ) -> None:
        self.values = values
        self.shape = shape
        self._source = source
        self._path = path

    def python(self) -> Any:
        """The array as orjson reads it: nested lists of ``int`` and ``float``."""
        return self._source.value_at(self._path)

    def __repr__(self) -> str:
        return f"Numbers({self.values.dtype}, shape={self.shape})"


def read(body: bytes, patterns: Sequence[Pattern], *, dense: bool = False) -> Any | None:
    """The body's JSON object with the arrays of numbers at ``patterns`` as :class:`Numbers`, or
    None when it cannot vouch for the result (see the module docstring)."""
    if body.startswith(_BOM) or (dense and b"\\" in body):
        return None
    try:
        root = simdjson.Parser().parse(body)
    except (ValueError, RuntimeError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(root, simdjson.Object):
        return None
    walk = _Walk(_Source(body), tuple(patterns), dense)
    try:
        document = walk.value(root, ())
    except (RecursionError, _Unsure):
        return None
    finally:
        del root  # the parser's proxies go before the parser
    if dense and b"".join(walk.structure) != _structure(body):
        return None
    return document


class _Unsure(Exception):
    """The walk met what only orjson can say how to read."""


class _Source:
    """The body, parsed by orjson only when a :class:`Numbers` is asked for its Python value."""

    def __init__(self, body: bytes) -> None:
        self._body = body
        self._document: Any = None

    def value_at(self, path: Path) -> Any:
        if self._document is None:
            try:
                self._document = orjson.loads(self._body)
            except orjson.JSONDecodeError:  # what simdjson takes and orjson does not
                self._document = json.loads(self._body)
        value = self._document
        for key in path:
            value = value[key]
        return value


class _Walk:
    """simdjson's values → Python, :class:`Numbers` at the patterns; with ``dense``, the
    structure the values give, in document order (``structure``)."""

    def __init__(self, source: _Source, patterns: tuple[Pattern, ...], dense: bool) -> None:
        self.source = source
        self.patterns = patterns
        self.dense = dense
        self.structure: list[bytes] = []

    def value(self, value: Any, path: Path) -> Any:
        if isinstance(value, simdjson.Object):
            return self._object(value, path)
        if isinstance(value, simdjson.Array):
            return self._array(value, path)
        return value  # a str, int, float, bool or None, as orjson gives it

    def _object(self, obj: simdjson.Object, path: Path) -> dict[str, Any]:
        keys = list(obj.keys())  # items() and values() would unbox every value
        if len(set(keys)) != len(keys):
            raise _Unsure  # a repeated key: lookups give its first value, orjson its last
        out: dict[str, Any] = {}
        structure = self.structure
        structure.append(b"{")
        for index, key in enumerate(keys):
            structure.append(b",:" if index else b":")
            out[key] = self.value(obj[key], (*path, key))
        structure.append(b"}")
        return out

    def _array(self, array: simdjson.Array, path: Path) -> Any:
        if any(_matches(path, p) for p in self.patterns):
            numbers = self._numbers(array, path)
            if numbers is not None:
                if self.dense:
                    self.structure.append(_dense_structure(numbers.shape))
                return numbers
        if not any(_is_prefix(path, p) for p in self.patterns):
            items = array.as_list()
            if self.dense:
                self.structure.append(_python_structure(items))
            return items
        structure = self.structure
        structure.append(b"[")
        out = []
        for index, item in enumerate(array):
            if index:
                structure.append(b",")
            out.append(self.value(item, (*path, index)))
        structure.append(b"]")
        return out

    def _numbers(self, array: simdjson.Array, path: Path) -> Numbers | None:
        try:
            values: npt.NDArray[Any] = np.frombuffer(array.as_buffer(of_type="i"), np.int64)
        except (TypeError, ValueError):  # a float, or an integer past int64
            try:
                values = np.frombuffer(array.as_buffer(of_type="d"), np.float64)
            except (TypeError, ValueError):  # a leaf that is not a number
                return None
        shape: list[int] = []
        first: Any = array
        while isinstance(first, simdjson.Array):
            if len(shape) == MAX_RANK:
                return None
            shape.append(len(first))
            if not shape[-1]:
                break
            first = first[0]
        if self.dense and values.size != np.prod(shape):
            return None  # not dense (an array of one number and an empty one look alike)
        return Numbers(values, tuple(shape), self.source, path)


def _matches(path: Path, pattern: Pattern) -> bool:
    return len(path) == len(pattern) and _is_prefix(path, pattern)


def _is_prefix(path: Path, pattern: Pattern) -> bool:
    """Whether ``path`` leads to (or is) a place ``pattern`` names."""
    if len(path) > len(pattern):
        return False
    for key, want in zip(path, pattern, strict=False):
        if isinstance(want, type):
            if type(key) is not want:
                return False
        elif key != want:
            return False
    return True


@functools.lru_cache(maxsize=32)
def _dense_structure(shape: tuple[int, ...]) -> bytes:
    """The structure of a dense array of numbers of ``shape``: ``(2, 3)`` → ``[[,,],[,,]]``."""
    level = b""
    for size in reversed(shape):
        level = b"[" + b",".join([level] * size) + b"]"
    return level


def _python_structure(value: Any) -> bytes:
    if type(value) is list:
        return b"[" + b",".join(_python_structure(v) for v in value) + b"]"
    if type(value) is dict:
        return b"{" + b",".join(b":" + _python_structure(v) for v in value.values()) + b"}"
    return b""


def _structure(body: bytes) -> bytes:
    """The body's structure outside strings: every byte but ``[ ] { } , :`` and the strings
    removed (without a backslash, each string lies between two quotes)."""
    return b"".join(body.translate(None, _DELETE).split(b'"')[0::2])
