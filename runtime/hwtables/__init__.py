"""The hardware tables: one source (tables.toml) for the numbers the runtime and the RTL share."""
