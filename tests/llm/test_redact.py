"""The redactor against encodings that give the key back in one standard decoding step, beyond the ones
the loopback server echoes (``KEY_ENCODINGS``, checked end to end in ``tests/llm/test_key_encodings.py``
and ``tests/test_key_leak.py``): each is masked wherever it stands, and text holding no key is kept."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import pytest

from audit.llm.redact import INFLATED, MASK, Redactor
from audit.testing.replies import REAL_SHAPED_KEY as KEY

RAW = KEY.encode()
ENCODINGS = {
    "0x list, upper case, in brackets": "[" + ",".join(f"0X{b:02X}" for b in RAW).replace("0X", "0x") + "]",
    "hex with colons": ":".join(f"{b:02x}" for b in RAW),
    "decimal bytes": ", ".join(map(str, RAW)),
    "UTF-16 little-endian hex": KEY.encode("utf-16-le").hex(),
    "UTF-16 hex of Bearer <key>": f"Bearer {KEY}".encode("utf-16-be").hex().upper(),
    "0x list of UTF-16 units": ", ".join(f"0x{ord(c):04x}" for c in KEY),
    "base32, lower case": base64.b32encode(RAW).decode().lower(),
    "base32 of Bearer <key>": base64.b32encode(f"Bearer {KEY}".encode()).decode(),
    "base32hex": base64.b32hexencode(RAW).decode(),
    "base85": base64.b85encode(RAW).decode(),
    "Ascii85 of user:<key>": base64.a85encode(f"user:{KEY}".encode()).decode(),
    "\\U escapes": "".join(f"\\U{ord(c):08x}" for c in KEY),
    "\\x{...} escapes": "".join(f"\\x{{{ord(c):x}}}" for c in KEY),
    "octal escapes, two digits where they do": "".join(f"\\{b:o}" for b in RAW),
    "gzip of a JSON error, base64": base64.b64encode(gzip.compress(json.dumps({"key": KEY}).encode())).decode(),
    "gzip, URL-safe base64": base64.urlsafe_b64encode(gzip.compress(RAW)).decode(),
    "zlib, base64": base64.b64encode(zlib.compress(RAW)).decode(),
    "zlib, hex": zlib.compress(RAW, 9).hex(),
    "gzip, hex": gzip.compress(RAW).hex(),
}


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize("place", ["error", "model text", "JSON error body"])
def test_the_key_in_any_one_step_encoding_is_masked(encoding, place):
    encoded = ENCODINGS[encoding]
    redact = Redactor([KEY])
    if place == "error":
        out = redact(f"Invalid credentials: {encoded}")
    elif place == "model text":
        out = redact.keys(f"My notes say {encoded} here.")
    else:
        out = json.loads(redact(json.dumps({"error": {"message": f"bad key {encoded}"}})))["error"]["message"]
    assert MASK in out and encoded not in out, out


def test_text_without_the_key_is_kept():
    other = base64.b64encode(gzip.compress(b"the Nile flows through Cairo")).decode()
    texts = [f"data {other}", "0x41, 0x42, 0x43", "eJustice and theNile are words", "A ratio of 1:2:3",
             "\\101\\102 octal", "base64 " + base64.b64encode(b"not a secret at all").decode()]
    for text in texts:
        assert Redactor([KEY]).keys(text) == text


def test_compressed_data_too_large_to_read_whole_is_masked_unread():
    """A bomb is inflated only up to the limit; what it may hide past it is masked rather than kept."""
    bomb = base64.b64encode(zlib.compress(b"\0" * (50 * INFLATED) + RAW)).decode()
    assert Redactor([KEY]).keys(f"x {bomb} y") == f"x {MASK} y"
    small = base64.b64encode(zlib.compress(b"\0" * 100)).decode()
    assert Redactor([KEY]).keys(f"x {small}") == f"x {small}"
