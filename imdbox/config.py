"""What one command acts on, decided once from the environment in the CLI and passed down.

IMD_BOX_IMAGE, IMD_BOX_CONTAINER, IMD_BOX_VOLUME and IMD_BOX_NETWORK override the
names (advanced; the tests use them so they never touch a user's own box). IMD_BOX_LOGIN=jail
puts the owner's Claude login in each Claude job's jail, as before the login broker. A seat
(`box --seat NAME`) is one more worker identity on the same engine: its own container
and volume (so its own settings, logins and pairing), `-NAME` after the names above.
Every box shares the one image. Nothing here reads the environment on import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from . import names

# The owner's choice of where the Claude login lives, read here and given to every box as it is.
LOGIN_ENV = "IMD_BOX_LOGIN"


@dataclass(frozen=True)
class Config:
    image: str = names.DEFAULT_IMAGE  # the local tag every command runs
    base_container: str = names.DEFAULT_CONTAINER  # the long-running worker box
    base_volume: str = names.DEFAULT_VOLUME  # logins, the worker, pairing; never in the image
    network: str = "bridge"  # a user-defined bridge network to run every box on
    seat: Optional[str] = None  # the seat this command acts on (None: the one without a name)
    # IMD_BOX_LOGIN=jail: the owner's Claude login in each Claude job's jail, as before the login
    # broker; else the broker holds it (worker/broker). Every box gets it as IMD_BOX_LOGIN.
    login_in_jail: bool = False
    # The environment the command started with: the engine's endpoint (DOCKER_HOST,
    # DOCKER_CONTEXT) and what install.sh is handed on (IMD_*_PACKAGE) come from it.
    env: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str], seat: Optional[str] = None) -> Config:
        return cls(
            image=env.get("IMD_BOX_IMAGE") or names.DEFAULT_IMAGE,
            base_container=env.get("IMD_BOX_CONTAINER") or names.DEFAULT_CONTAINER,
            base_volume=env.get("IMD_BOX_VOLUME") or names.DEFAULT_VOLUME,
            network=env.get("IMD_BOX_NETWORK") or "bridge",
            seat=seat,
            login_in_jail=env.get(LOGIN_ENV) == "jail",
            env=dict(env),
        )

    def seat_names(self, seat: Optional[str]) -> tuple[str, str]:
        """A seat's container and volume."""
        if seat:
            return f"{self.base_container}-{seat}", f"{self.base_volume}-{seat}"
        return self.base_container, self.base_volume

    @property
    def container(self) -> str:
        return self.seat_names(self.seat)[0]

    @property
    def volume(self) -> str:
        return self.seat_names(self.seat)[1]

    def for_seat(self, seat: Optional[str]) -> Config:
        """The same command acting on another seat (the caller has checked the name)."""
        return dataclasses.replace(self, seat=seat)

    def seat_of_volume(self, volume: str) -> tuple[bool, Optional[str]]:
        """Whether a volume is a seat's, and whose (None: the seat without a name)."""
        if volume == self.base_volume:
            return True, None
        seat = volume[len(self.base_volume) + 1 :] if volume.startswith(self.base_volume + "-") else ""
        return bool(names.SEAT_NAME.fullmatch(seat)), seat or None

    def command(self, *words: str) -> str:
        """A box command the user is told to run, for this seat: `box start`, or
        `box --seat alice start` under `box --seat alice`."""
        return names.seat_command(self.seat, *words)
