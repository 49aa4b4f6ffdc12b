#!/usr/bin/env bash
# Refresh the wizard's Qt Linguist sources from app/ui, then compile them. Translate new messages in the .ts
# (Qt Linguist, or tools/fill_translation.py), run this again, and commit the .ts and .qm files. The English file
# holds only the plural forms of texts with %n ("%n problem(s)" -> "1 problem", "2 problems").
set -euo pipefail
cd "$(dirname "$0")/.."
sources=$(find app/ui -name "*.py" | sort)
ts=resources/translations/torch_dll_doctor_zh_CN.ts
pyside6-lupdate $sources -ts "$ts" -source-language en -target-language zh_CN -no-obsolete
pyside6-lrelease "$ts" -qm "${ts%.ts}.qm"
en=resources/translations/torch_dll_doctor_en.ts
pyside6-lupdate $sources -ts "$en" -source-language en -target-language en -pluralonly -no-obsolete
pyside6-lrelease "$en" -qm "${en%.ts}.qm"
