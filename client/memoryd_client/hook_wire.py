"""The wire protocol's frames (memoryd_client.wire) for a hook process, without msgpack.

A hook runs before every tool call (PreToolUse), so its whole process is budgeted at 30 ms, and
importing msgpack (with msgpack.ext, datetime, collections and operator) was ~60 % of what a
hook imported beyond a bare Python start. A hook sends one request and reads one reply, of a
few types, so it encodes and decodes them itself: :func:`pack` writes standard msgpack (the
daemon reads it with msgpack, the spool too), :func:`unpack` reads every msgpack type but the
extension types (which memoryd never sends; a frame holding one is refused, as a bad frame).
tests/client/test_hooks.py checks both against msgpack on generated values.
"""

from __future__ import annotations

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

#: The frame header: a 4-byte big-endian length (wire.HEADER).
HEADER_SIZE = 4


def frame(message: dict[str, Any]) -> bytes:
    """One frame: the length prefix, then the message packed."""
    body = bytearray()
    _pack(message, body)
    return len(body).to_bytes(HEADER_SIZE, "big") + bytes(body)


def frame_length(header: bytes) -> int:
    return int.from_bytes(header[:HEADER_SIZE], "big")


def pack(value: Any) -> bytes:
    out = bytearray()
    _pack(value, out)
    return bytes(out)


def _pack(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xC0)
    elif value is True:
        out.append(0xC3)
    elif value is False:
        out.append(0xC2)
    elif isinstance(value, int):
        _pack_int(value, out)
    elif isinstance(value, float):
        import struct

        out.append(0xCB)
        out += struct.pack(">d", value)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _head(len(data), out, 0xA0, 32, 0xD9, 0xDA, 0xDB)
        out += data
    elif isinstance(value, (bytes, bytearray)):
        _head(len(value), out, None, 0, 0xC4, 0xC5, 0xC6)
        out += value
    elif isinstance(value, (list, tuple)):
        _head(len(value), out, 0x90, 16, None, 0xDC, 0xDD)
        for item in value:
            _pack(item, out)
    elif isinstance(value, dict):
        _head(len(value), out, 0x80, 16, None, 0xDE, 0xDF)
        for key, item in value.items():
            _pack(key, out)
            _pack(item, out)
    else:
        raise TypeError(f"cannot pack {type(value).__name__}")


def _head(size: int, out: bytearray, fix: int | None, fix_limit: int, one: int | None,
          two: int, four: int) -> None:
    if fix is not None and size < fix_limit:
        out.append(fix | size)
    elif one is not None and size < 0x100:
        out += bytes((one, size))
    elif size < 0x10000:
        out.append(two)
        out += size.to_bytes(2, "big")
    elif size < 0x100000000:
        out.append(four)
        out += size.to_bytes(4, "big")
    else:
        raise ValueError("too long to pack")


def _pack_int(value: int, out: bytearray) -> None:
    if 0 <= value < 0x80 or -32 <= value < 0:
        out += value.to_bytes(1, "big", signed=value < 0)
    elif value >= 0:
        for code, size in ((0xCC, 1), (0xCD, 2), (0xCE, 4), (0xCF, 8)):
            if value < 1 << (8 * size):
                out.append(code)
                out += value.to_bytes(size, "big")
                return
        raise ValueError("integer too large to pack")
    else:
        for code, size in ((0xD0, 1), (0xD1, 2), (0xD2, 4), (0xD3, 8)):
            if value >= -(1 << (8 * size - 1)):
                out.append(code)
                out += value.to_bytes(size, "big", signed=True)
                return
        raise ValueError("integer too small to pack")


def unpack(data: bytes) -> Any:
    """The one value ``data`` holds (ValueError: not msgpack, trailing bytes, an extension
    type)."""
    value, end = _unpack(data, 0)
    if end != len(data):
        raise ValueError("trailing bytes after the value")
    return value


def _take(data: bytes, at: int, size: int) -> tuple[bytes, int]:
    end = at + size
    if end > len(data):
        raise ValueError("truncated")
    return data[at:end], end


def _uint(data: bytes, at: int, size: int) -> tuple[int, int]:
    raw, at = _take(data, at, size)
    return int.from_bytes(raw, "big"), at


def _unpack(data: bytes, at: int) -> tuple[Any, int]:
    if at >= len(data):
        raise ValueError("truncated")
    code = data[at]
    at += 1
    if code <= 0x7F:
        return code, at
    if code >= 0xE0:
        return code - 0x100, at
    if 0xA0 <= code <= 0xBF:
        return _str(data, at, code & 0x1F)
    if 0x90 <= code <= 0x9F:
        return _array(data, at, code & 0x0F)
    if 0x80 <= code <= 0x8F:
        return _map(data, at, code & 0x0F)
    if code == 0xC0:
        return None, at
    if code in (0xC2, 0xC3):
        return code == 0xC3, at
    return _unpack_sized(data, at, code)


def _unpack_sized(data: bytes, at: int, code: int) -> tuple[Any, int]:
    """A value whose type byte ``code`` is followed by its size or its fixed-width bytes."""
    if code in (0xD9, 0xDA, 0xDB):
        size, at = _uint(data, at, {0xD9: 1, 0xDA: 2, 0xDB: 4}[code])
        return _str(data, at, size)
    if code in (0xC4, 0xC5, 0xC6):
        size, at = _uint(data, at, {0xC4: 1, 0xC5: 2, 0xC6: 4}[code])
        raw, at = _take(data, at, size)
        return raw, at
    if code in (0xCC, 0xCD, 0xCE, 0xCF):
        return _uint(data, at, 1 << (code - 0xCC))
    if code in (0xD0, 0xD1, 0xD2, 0xD3):
        raw, at = _take(data, at, 1 << (code - 0xD0))
        return int.from_bytes(raw, "big", signed=True), at
    if code in (0xCA, 0xCB):
        import struct

        raw, at = _take(data, at, 4 if code == 0xCA else 8)
        return struct.unpack(">f" if code == 0xCA else ">d", raw)[0], at
    if code in (0xDC, 0xDD):
        size, at = _uint(data, at, 2 if code == 0xDC else 4)
        return _array(data, at, size)
    if code in (0xDE, 0xDF):
        size, at = _uint(data, at, 2 if code == 0xDE else 4)
        return _map(data, at, size)
    raise ValueError(f"unsupported msgpack type 0x{code:02x}")  # the extension types


def _str(data: bytes, at: int, size: int) -> tuple[str, int]:
    raw, at = _take(data, at, size)
    return raw.decode("utf-8"), at


def _array(data: bytes, at: int, size: int) -> tuple[list[Any], int]:
    items = []
    for _ in range(size):
        item, at = _unpack(data, at)
        items.append(item)
    return items, at


def _map(data: bytes, at: int, size: int) -> tuple[dict[Any, Any], int]:
    result: dict[Any, Any] = {}
    for _ in range(size):
        key, at = _unpack(data, at)
        value, at = _unpack(data, at)
        try:
            result[key] = value
        except TypeError:  # a list or a map as a key
            raise ValueError("a map key that cannot be a dict key") from None
    return result, at
