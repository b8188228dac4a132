"""A real headless Chromium for page tests: Debian's chromium driven by its chromedriver through selenium.
No browser download, no network beyond loopback, a fresh profile per browser."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def _options(profile: Path) -> webdriver.ChromeOptions:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,900", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    return options


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium with its own throwaway profile; quits and removes the profile on exit."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        raise RuntimeError(f"missing {', '.join(missing)}: run scripts/install.sh (apt chromium chromium-driver)")
    profile = Path(tempfile.mkdtemp(prefix="deja-chromium-"))
    # An explicit driver path keeps Selenium Manager from looking for (or downloading) a driver.
    driver = webdriver.Chrome(options=_options(profile), service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def save_screenshot(driver: webdriver.Chrome, name: str) -> Path:
    """Save a PNG under test-artifacts/ at the repo root (gitignored) and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    if not driver.save_screenshot(str(path)):
        raise RuntimeError(f"could not save screenshot {path}")
    return path
