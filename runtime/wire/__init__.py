"""Bytes between processes: the framing (sans-IO), the message protocol, frames in shared memory
and the TCP wire."""
