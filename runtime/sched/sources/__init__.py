"""Where an engine's frames come from: a workload's periodic releases (``periodic.py``: bench and
the tests) or the frames apps submit to the daemon (``submitted.py``). The engine is handed one
(``sched/core/release_source.py`` is what it asks of it) and knows nothing else of either."""
