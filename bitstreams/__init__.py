"""Platform manifests, shipped as package data: ``fpgashare.platforms`` (load by name: ``zcu104``)."""
