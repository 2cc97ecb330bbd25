"""The 7-series / UltraScale configuration CRC: CRC-32C (reflected, poly 0x82F63B78) over each
(5-bit register address, 32-bit data) write, data bits first, as prjxray's xc7series icap_crc.
"""

from __future__ import annotations

POLY = 0x82F63B78


def icap_crc(addr: int, data: int, prev: int) -> int:
    """Bit-serial reference: extend ``prev`` by one (address, data) write."""
    val = ((addr & 0x1F) << 32) | (data & 0xFFFFFFFF)
    crc = prev
    for _ in range(37):
        if (val ^ crc) & 1:
            crc = (crc >> 1) ^ POLY
        else:
            crc >>= 1
        val >>= 1
    return crc


def _table(bits: int) -> list[int]:
    """Reflected CRC table consuming ``bits`` bits at a time."""
    out = []
    for v in range(1 << bits):
        crc = v
        for _ in range(bits):
            crc = (crc >> 1) ^ POLY if crc & 1 else crc >> 1
        out.append(crc)
    return out


_T16 = _table(16)
_T5 = _table(5)


def icap_crc_words(addr: int, words, prev: int = 0) -> int:
    """Extend ``prev`` by writes of every word in ``words`` to register ``addr`` (16+16+5-bit steps)."""
    crc = prev
    a = addr & 0x1F
    t16, t5 = _T16, _T5
    for w in words:
        crc = (crc >> 16) ^ t16[(crc ^ w) & 0xFFFF]
        crc = (crc >> 16) ^ t16[(crc ^ (w >> 16)) & 0xFFFF]
        crc = (crc >> 5) ^ t5[(crc ^ a) & 0x1F]
    return crc
