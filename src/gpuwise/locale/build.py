"""Compile the zh_CN catalog: `python -m gpuwise.locale.build` (a development tool; the .mo is committed).

python -m gpuwise.locale.build            write data/zh_CN/LC_MESSAGES/gpuwise.mo from data/po/zh_CN/*.po
python -m gpuwise.locale.build --check    exit 1 if the committed .mo is not what the sources compile to
python -m gpuwise.locale.build --missing  list the strings in the code that have no translation yet
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpuwise.locale import DOMAIN, LOCALE_DIR
from gpuwise.locale.catalog import compile_mo, read_po_files
from gpuwise.locale.extract import extract_package

PO_DIR = LOCALE_DIR / "po" / "zh_CN"
MO_PATH = LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / f"{DOMAIN}.mo"


def compiled() -> bytes:
    """The .mo the committed sources compile to."""
    return compile_mo(read_po_files(PO_DIR.glob("*.po")))


def missing() -> list[str]:
    """Lines "path:line: msgid" for every string in the code without a translation."""
    have = {e.msgid for e in read_po_files(PO_DIR.glob("*.po")) if any(e.msgstr) and not e.fuzzy}
    messages, _problems = extract_package()
    return [f"{m.where}: {m.msgid!r}" for m in messages if m.msgid not in have]


def main(argv: list[str]) -> int:
    if "--missing" in argv:
        lines = missing()
        sys.stdout.write("".join(line + "\n" for line in lines))
        return 1 if lines else 0
    data = compiled()
    if "--check" in argv:
        fresh = MO_PATH.is_file() and MO_PATH.read_bytes() == data
        if not fresh:
            sys.stderr.write(f"{MO_PATH} is out of date: run python -m gpuwise.locale.build\n")
        return 0 if fresh else 1
    Path(MO_PATH).parent.mkdir(parents=True, exist_ok=True)
    MO_PATH.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
