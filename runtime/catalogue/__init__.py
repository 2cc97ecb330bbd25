"""What a board and a workload are: platform manifests, the module catalogue, OpenCV goldens,
cycle timing, workload files and passes. Pure data and functions; imports no other layer."""
