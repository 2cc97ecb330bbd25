"""Limits of a workload: the best any scheduler could do on this board, computed from the catalogue
(the workload and the platform) alone, to measure schedulers against (docs/limits.md).

One idea per module:

- ``jobs``: the frames (and passes) of a workload over a horizon, in integer ticks, with windows
  that contain every realised release and deadline;
- ``exact``: the CP-SAT model (most pipelines served with no miss; fewest loads for a set);
- ``schedule_check``: an independent checker of a schedule the exact model returns;
- ``caps``: cheap upper bounds (stream, port, slots, deadline) on pipelines and on copies;
- ``belady``: the fewest loads and the least port wait for a realised frame order;
- ``dnn_windows``: DNN images that fit in idle windows after fill latency and loads;
- ``bench_limits``: ``fpgashare bench --limit``, every limit beside every scheduler's figure;
- ``cyclic``: the exact model made periodic, a table of one hyperperiod that repeats (the
  ``planned`` policy runs it); ``cyclic_check``: an independent check of such a table.

The exact model needs ``ortools`` (the ``limits`` extra); ``require_ortools`` names the fix.
"""

from __future__ import annotations

from fpgashare.errors import FpgashareError


def require_ortools():
    """The CP-SAT module, or a clear error naming the extra that provides it."""
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        raise FpgashareError("the exact limits need ortools: pip install 'fpgashare[limits]'") from None
    return cp_model
