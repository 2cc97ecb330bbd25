"""Partial bitstreams: the .bit container, configuration packets, CRC, generation and checks."""
