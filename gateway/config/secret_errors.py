"""What an error about a file that holds secrets may say: the file, the position and the field,
never any of its content.

``--ssl_config_file`` holds a private key and ``--auth_token_file`` bearer tokens. The parsers'
own messages quote what they stumble on (protobuf's text format the line and the token, Python's
UTF-8 decoder the offending byte), so errors about these files are written here, from the
position the parser reports, the schema's field names and content-free descriptions.
"""

from __future__ import annotations

import re

from google.protobuf import message, text_format

_UNKNOWN_FIELD = "a name that is not a field of the message"
_PROBLEMS = (
    ("missing ending quote", "a string lacks its closing quote"),
    ("has no field named", _UNKNOWN_FIELD),
    ("should not have multiple", "a field set more than once"),
)
"""Parser messages (by a phrase of theirs) → what went wrong, in words that quote nothing."""
_NOT_SHOWN = "the file's content is not shown: it holds secrets"


def _position(text: str) -> tuple[int, int]:
    """Line and column (both from 1) just after ``text``, the start of a file."""
    line_start = text.rfind("\n") + 1
    return text.count("\n") + 1, len(text) - line_start + 1


def _field_names(message_type: type[message.Message]) -> list[str]:
    """The names of ``message_type``'s fields and of its messages' fields, longest first."""
    names: set[str] = set()
    seen: set[str] = set()
    pending = [message_type.DESCRIPTOR]
    while pending:
        current = pending.pop()
        if current.full_name not in seen:
            seen.add(current.full_name)
            for field in current.fields:
                names.add(field.name)
                if field.message_type is not None:
                    pending.append(field.message_type)
    return sorted(names, key=len, reverse=True)


def _field_at(text: str, message_type: type[message.Message]) -> str | None:
    """The schema field whose name comes last in ``text`` (the file up to an error), if any."""
    names = _field_names(message_type)
    if not names:
        return None
    pattern = r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")\s*[:{<]"
    matches = re.findall(pattern, text)
    return str(matches[-1]) if matches else None


def _where(text: str, message_type: type[message.Message] | None, *, field: bool = True) -> str:
    """``line L, column C[, field F]`` for an error just after ``text`` (the file up to it)."""
    line, column = _position(text)
    name = _field_at(text, message_type) if field and message_type is not None else None
    return f"line {line}, column {column}" + ("" if name is None else f", field {name}")


def parse_error(
    exc: text_format.ParseError | message.DecodeError,
    text: str,
    message_type: type[message.Message],
) -> str:
    """What the text-format parser's ``exc`` on the file ``text`` may say: the position, the
    field being read there and what went wrong."""
    problem = next((words for phrase, words in _PROBLEMS if phrase in str(exc)), None)
    where = ""
    if isinstance(exc, text_format.ParseError) and (line := exc.GetLine()) is not None:
        column = exc.GetColumn() or 1
        offset = sum(len(before) + 1 for before in text.split("\n")[: line - 1]) + column - 1
        where = _where(text[:offset], message_type, field=problem != _UNKNOWN_FIELD) + ": "
    return f"{where}{problem or 'not valid text format'} ({_NOT_SHOWN})"


def not_utf8(exc: UnicodeDecodeError, message_type: type[message.Message] | None = None) -> str:
    """What a UTF-8 decoding error on a whole file may say: where the bad bytes are (and in which
    field of a ``message_type``)."""
    before = exc.object[: exc.start].decode("utf-8", errors="replace")
    return f"{_where(before, message_type)}: not UTF-8 text ({_NOT_SHOWN})"
