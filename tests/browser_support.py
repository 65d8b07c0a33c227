"""Headless Chromium for the report's tests: Debian's `chromium` and `chromedriver`
driven by Selenium, both named by path (nothing is downloaded: Selenium's driver manager
is never asked). Tests skip when either is absent."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("LOOPWATCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("LOOPWATCH_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"


def have_browser() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


needs_browser = pytest.mark.skipif(
    not have_browser(), reason="needs Debian's chromium and chromium-driver, and selenium (the test extra)"
)


def start_browser(width: int = 1400, height: int = 1000):
    os.environ["SE_OFFLINE"] = "true"  # Selenium's manager must never fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def requests_made(driver) -> list[str]:
    """Every URL the page asked for since the last call (the DevTools network log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def page_url(path: str | Path) -> str:
    return Path(path).resolve().as_uri()
