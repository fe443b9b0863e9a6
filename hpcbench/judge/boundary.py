"""The boundary that fences the agent's text off in a judge's prompt.

A judge's prompt holds text the agent wrote (its source, what its program printed,
what its compiler said about it) between a begin and an end line that carry a
boundary string. If the agent could guess that string it could end the fence early
and write outside it, so the boundary must be unpredictable to the agent. It must
also be reproducible: answers are cached by the sha256 of the rendered prompt, a
re-score must cost nothing, and a second judge must see byte-identical prompts.

Both hold with an HMAC: boundary = HMAC-SHA256(campaign key, prompt version and the
agent's text), 32 hex digits. The campaign key is 32 random bytes in
`<campaign>/judge_boundary.key` (mode 0600), made the first time the campaign is
scored with a judge. No program ever sees it: runs and builds see only their own
work folder (docs/security.md), and the key is created after they ran. Each prompt
gets its own boundary (another submission, another dimension, another boundary), the
same prompt always the same one. A scoring outside a campaign (JudgeConfig without a
key) gets a fresh random key per process: safe, just not cached across processes.

The alternative, a fresh random boundary per call left out of the cache key, was not
taken: the prompt sent would then differ from the prompt hashed, and two judges could
no longer be shown byte-identical prompts."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from hpcbench.errors import HpcbenchError

KEY_FILE = "judge_boundary.key"
KEY_BYTES = 32


def campaign_key(campaign_dir: Path) -> bytes:
    """The campaign's boundary key, made on first use (concurrent scorings agree on one)."""
    path = Path(campaign_dir) / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)
    try:
        os.write(fd, secrets.token_hex(KEY_BYTES).encode() + b"\n")
    finally:
        os.close(fd)
    return _read(path)


def _read(path: Path) -> bytes:
    try:
        text = path.read_text().strip()
        key = bytes.fromhex(text)
    except (OSError, ValueError) as e:
        raise HpcbenchError(f"{path}: unreadable judge boundary key ({e}); remove it and score again "
                            "(cached judge answers are then asked again)") from None
    if len(key) != KEY_BYTES:
        raise HpcbenchError(f"{path}: judge boundary key of {len(key)} bytes, expected {KEY_BYTES}; "
                            "remove it and score again")
    return key


def boundary(key: bytes, version: str, texts: list[str]) -> str:
    """A boundary found in none of `texts` (the HMAC is recomputed with a counter in the
    vanishing case that the agent's text holds it)."""
    for n in range(100):
        mac = hmac.new(key, f"{version}\0{n}\0".encode(), hashlib.sha256)
        for t in texts:
            mac.update(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest())
        b = mac.hexdigest()[:32]
        if not any(b in t for t in texts):
            return b
    raise HpcbenchError("no judge boundary found outside the agent's text in 100 tries")  # pragma: no cover
