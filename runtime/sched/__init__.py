"""Scheduling, by layer: ``core`` (the event-driven engine, its clock, port and slots), ``analysis``
(what admission proves: schedulability, arrival curves, mode changes), ``policies`` (``edf`` and the
baselines), ``host`` (the CPU as a resource), ``board`` (partitions, the online path the daemon runs)
and ``limits`` (what any scheduler could do).

The package itself imports nothing, so a layer can import another's modules without a cycle."""
