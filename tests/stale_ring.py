"""The ring name tests plant as a dead daemon's, for a daemon to sweep.

One name for every test that plants it or must ignore it: ``test_daemon_lifecycle`` plants it,
and tests that snapshot /dev/shm beside it, on another pytest worker, leave it out of their count.
"""

PLANTED_STALE_RING = "fpgashare-c9-deadbeef0000"
