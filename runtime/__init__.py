"""fpgashare runtime: platforms, bitstreams, backends, slot manager, scheduler, daemon and client API."""

__version__ = "0.1.0"
