"""The package version, in a module of its own so that nothing inside kernelrl imports the package's face."""

__version__ = "0.1.0"
