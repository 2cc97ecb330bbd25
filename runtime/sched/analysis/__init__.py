"""What admission proves: the schedulability test, arrival curves, mode changes, control traffic."""
