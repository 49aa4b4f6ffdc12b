#!/usr/bin/env bash
# Refresh the wizard's Qt Linguist source from app/ui, then compile it. Translate new messages in the .ts
# (Qt Linguist, or tools/fill_translation.py), run this again, and commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
ts=resources/translations/torch_dll_doctor_zh_CN.ts
pyside6-lupdate $(find app/ui -name "*.py" | sort) -ts "$ts" -source-language en -target-language zh_CN -no-obsolete
pyside6-lrelease "$ts" -qm "${ts%.ts}.qm"
