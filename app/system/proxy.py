"""The proxy setup script Windows' Internet Options name (a PAC file, pushed by many companies' policies): the
browser, Edge and WinHTTP run it, while Python's urllib reads only a fixed proxy server (ProxyEnable /
ProxyServer), so a download here goes direct where the browser goes through the proxy. Read, to say so."""

from __future__ import annotations

import os
from typing import Optional

INTERNET_SETTINGS = r"Software\Microsoft\Windows\CurrentVersion\Internet Settings"


def proxy_script() -> Optional[str]:
    """The address of the proxy setup script (AutoConfigURL) for this user, or the machine's policy; None when
    there is none, or this is not Windows."""
    if os.name != "nt":
        return None
    import winreg

    for hive in (winreg.HKEY_CURRENT_USER, winreg.HKEY_LOCAL_MACHINE):
        try:
            with winreg.OpenKey(hive, INTERNET_SETTINGS) as key:
                value, _kind = winreg.QueryValueEx(key, "AutoConfigURL")
        except OSError:
            continue
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
