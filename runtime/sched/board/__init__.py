"""A board of partitions: the streams plan, one configuration port shared, and the online path the
daemon runs (pipelines come and go; re-partitioning through mode changes)."""
