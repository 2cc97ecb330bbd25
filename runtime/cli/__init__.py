"""The ``fpgashare`` command line: the parser (``main``) and what each command runs."""
