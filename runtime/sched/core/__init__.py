"""The scheduler core: one event-driven engine over an injectable clock, its configuration port and
slots, the jobs it keeps, and the narrow view a policy sees. Imports no policy and no board."""
