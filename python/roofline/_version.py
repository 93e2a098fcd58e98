"""The package's version (``roofline.__version__``), in a module of its own so that modules
inside the package (the CLI's ``--version``) read it without importing the package's face."""

__version__ = "0.1.0"
