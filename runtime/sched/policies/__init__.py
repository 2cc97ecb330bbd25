"""Scheduling policies: ``edf`` and the baselines measured beside it (``registry`` names them).

A policy sees the engine through ``fpgashare.sched.core.view`` only and starts frames or loads."""
