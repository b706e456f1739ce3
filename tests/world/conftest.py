"""Fixtures the world's modules share (tests/conftest.py has the engine's, the image's and the
topology's)."""

import pytest

from tests.harness import login


@pytest.fixture(scope="module")
def world():
    """A module's test CA and the hosts' TLS key and certificate it signed, which the scripted
    Anthropic serves (tests/harness/login.py)."""
    return login.certificates()
