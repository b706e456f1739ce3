"""The one error box's commands raise: the CLI prints it as one line, never a traceback."""

from __future__ import annotations


class BoxError(Exception):
    """A clear one-line reason the command cannot go on; nothing was changed unless it says so."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code
