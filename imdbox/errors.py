"""The errors box's commands raise, in one hierarchy: the CLI prints any BoxError as one
line, never a traceback."""

from __future__ import annotations


class BoxError(Exception):
    """A clear one-line reason the command cannot go on; nothing was changed unless it says so."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class SettingsError(BoxError):
    """settings.env is not what box writes: the file, the line and the fix."""


class BuildError(BoxError):
    """The image did not build: why, and what to do."""
