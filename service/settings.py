"""The gateway's settings: the one `Settings` class lives in `index.settings` so that `eval` can read it too."""

from index.settings import Settings

__all__ = ["Settings"]
