#!/usr/bin/env bash
# Installs Wine (64-bit) for the Windows lab (tests/winelab.py), only when it is missing. Idempotent.
# The lab runs console programs headless (DISPLAY unset). Xvfb and Qt's X11 libraries are for
# tests/gui/test_x11_libraries.py (the wizard on an X server, with and without those libraries).
# Debian/Ubuntu with apt-get; run as root (CI is root). Usage: bash .ci/wine_setup.sh [tools]
set -euo pipefail

have_wine() { command -v wine >/dev/null 2>&1 && command -v wineserver >/dev/null 2>&1; }
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || { S=$([ "$(id -u)" -eq 0 ] || echo sudo); $S apt-get update -q && $S env DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-mingw-w64-x86-64; }  # builds tests/standin (the stand-in vc_redist)
command -v osslsigncode >/dev/null 2>&1 || { S=$([ "$(id -u)" -eq 0 ] || echo sudo); $S apt-get update -q && $S env DEBIAN_FRONTEND=noninteractive apt-get install -y -q osslsigncode; }  # signs the stand-in (tests/lab/test_live_vc_runtime.py, test_signature.py)
command -v Xvfb >/dev/null 2>&1 && [ -e /usr/lib/x86_64-linux-gnu/libxcb-cursor.so.0 ] || { S=$([ "$(id -u)" -eq 0 ] || echo sudo); $S apt-get update -q && $S env DEBIAN_FRONTEND=noninteractive apt-get install -y -q xvfb libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0; }  # an X server, and the libraries Qt 6.5+ draws on X11 with
# Fonts for Qt's offscreen platform under Wine (it finds none of its own): DejaVu (Latin) and WenQuanYi Micro Hei
# (Chinese), handed to the app through TDD_FONT_DIR by tests/winelab.py (font_dir).
{ [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] && [ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; } || { S=$([ "$(id -u)" -eq 0 ] || echo sudo); $S apt-get update -q && $S env DEBIAN_FRONTEND=noninteractive apt-get install -y -q fonts-dejavu-core fonts-wqy-microhei; }

# The Linux locale zh_CN.UTF-8, for the lab's "Chinese Windows" (LC_ALL=zh_CN.UTF-8: code page 936, Chinese
# messages; tests/winelab.py chinese_windows). Without it Wine still picks code page 936 but reads the command line
# in ASCII, and every Chinese argument (the lab user's folder, 张伟) reaches Windows' Python garbled.
locale -a 2>/dev/null | grep -qix 'zh_CN.utf8' || { S=$([ "$(id -u)" -eq 0 ] || echo sudo); [ -f /usr/share/i18n/locales/zh_CN ] || { $S apt-get update -q && $S env DEBIAN_FRONTEND=noninteractive apt-get install -y -q locales; }; $S localedef -i zh_CN -f UTF-8 zh_CN.UTF-8; }

# `bash .ci/wine_setup.sh tools` stops here: what the fast suite needs (the stand-in's compiler, the signer, an X
# server, the fonts, the locale). Wine itself, the biggest download, is then installed while the fast suite runs.
if [ "${1:-}" = "tools" ]; then
    exit 0
fi
if have_wine; then
    echo "wine_setup: $(wine --version 2>/dev/null || echo wine) already installed"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "wine_setup: wine is missing and apt-get is not available; install Wine 8+ (64-bit) by hand" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# wine: the wrappers (wine, wineserver, wineboot); wine64: the 64-bit loader. wine32 (i386) is not needed:
# the lab's Python and torch are 64-bit, and Wine only warns that it is missing.
$SUDO apt-get install -y -q wine wine64

if ! have_wine; then
    echo "wine_setup: wine still not on PATH after apt-get install" >&2
    exit 1
fi
echo "wine_setup: installed $(wine --version 2>/dev/null || echo wine)"
