"""Bench suites, shipped as package data: ``fpgashare.suites`` (run by name: ``nh_720p60_zcu104``)."""
