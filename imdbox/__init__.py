"""IMD Box: run the IMD worker inside a walled Docker container."""

__version__ = "0.1.0"
