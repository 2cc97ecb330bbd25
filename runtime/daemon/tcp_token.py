"""The TCP listener's shared token: read from a file only its owner (root, or the listener's own
user) may read or change, and refused where it does not look random, since a guessable token
opens the board to the LAN (runtime/daemon/tcp_listener.py)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from fpgashare.errors import FpgashareError

MIN_TOKEN_BYTES = 16
MIN_TOKEN_BITS = 48


def load_token(path: str | Path) -> bytes:
    """The shared token from ``path``; refuses a file others can read or write, one owned by
    another user than root (or the listener's own), and a token that does not look random."""
    path = Path(path)
    try:
        info = path.stat()
        token = path.read_bytes().strip()
    except OSError as exc:
        raise FpgashareError(f"token file {path}: {exc.strerror or exc}") from None
    if info.st_mode & 0o077:
        raise FpgashareError(f"token file {path}: readable by others (mode {oct(info.st_mode & 0o777)}); chmod 600 it")
    if info.st_uid not in (0, os.geteuid()):
        raise FpgashareError(f"token file {path}: owned by uid {info.st_uid}, not root; whoever owns it can "
                             "change it (chown root it)")
    check_token(token, f"token file {path}")
    return token


def token_bits(token: bytes) -> float:
    """An estimate of the token's entropy: its length times the empirical entropy of its bytes,
    scaled by the share of its 4-byte windows that differ (a repeated word has few): a lower bound
    for a random token's, far under it for a repeated or patterned one."""
    if not token:
        return 0.0
    counts = [token.count(b) for b in set(token)]
    bits = -len(token) * sum(c / len(token) * math.log2(c / len(token)) for c in counts)
    windows = [token[i:i + 4] for i in range(len(token) - 3)]
    return bits * len(set(windows)) / len(windows) if windows else bits


def check_token(token: bytes, what: str = "the TCP listener's token") -> None:
    """Refuse a token shorter than MIN_TOKEN_BYTES or under MIN_TOKEN_BITS of estimated entropy
    (32 zero bytes, a word repeated): make one with ``head -c 32 /dev/urandom | base64``."""
    if len(token) < MIN_TOKEN_BYTES:
        raise FpgashareError(f"{what}: a token needs at least {MIN_TOKEN_BYTES} bytes, has {len(token)}")
    bits = token_bits(token)
    if bits < MIN_TOKEN_BITS:
        raise FpgashareError(f"{what}: does not look random ({bits:.0f} bits by its byte counts, "
                             f"at least {MIN_TOKEN_BITS} needed); make one with head -c 32 /dev/urandom | base64")
