"""`python -m imdbox` is `box`."""

from .cli import main

main()
