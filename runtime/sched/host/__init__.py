"""The host CPU as a scheduled resource: stages the fabric does not take."""
