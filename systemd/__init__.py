"""The systemd unit files for a board, shipped as package data: ``fpgashare.systemd``."""
