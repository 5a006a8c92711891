#!/usr/bin/env python3
"""Generates the hostile and broken input fixtures under tests/fixtures/bad/.

Standard library only; deterministic (fixed timestamps, seeded garbage), so
re-running it reproduces the committed files byte for byte.

    python3 scripts/make_bad_fixtures.py

Fixtures (each must fail with the named ParseFailure, fast, never panic):

  truncated.docx         a valid DOCX cut in half                  -> Corrupt
  corrupt.docx           zip magic followed by garbage             -> Corrupt
  zip_bomb.docx          word/document.xml inflates to 320 MiB     -> ZipBomb
  missing_document.docx  a package without word/document.xml       -> Corrupt
  deep.docx              document.xml nested 100,000 levels deep   -> TooDeep
  malformed_xml.docx     document.xml with mismatched tags         -> Xml
  empty.txt              zero bytes                                -> Empty
  garbage.txt            4 KiB of random bytes                     -> Binary
  deep.html              <div> nested 100,000 levels deep          -> TooDeep
  latin1.txt             Windows-1252 text, not UTF-8              -> parsed, with a warning
  utf16.txt              UTF-16 LE text with a byte-order mark     -> parsed
"""

import io
import os
import random
import zipfile

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "bad")
STAMP = (2024, 1, 1, 0, 0, 0)
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
PACKAGE_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)
STYLES = f'<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="{W}"/>'


def document(body: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>'
    )


def paragraph(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


def add(zf: zipfile.ZipFile, name: str, data) -> None:
    info = zipfile.ZipInfo(name, STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data, compresslevel=9)


def package(parts) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in parts:
            add(zf, name, data)
    return buffer.getvalue()


def valid_docx() -> bytes:
    body = "".join(
        paragraph(f"Clause {i}. The supplier shall deliver the goods within {i} days of the order.")
        for i in range(1, 200)
    )
    return package(
        [
            ("[Content_Types].xml", CONTENT_TYPES),
            ("_rels/.rels", PACKAGE_RELS),
            ("word/document.xml", document(body)),
            ("word/styles.xml", STYLES),
        ]
    )


def zip_bomb() -> bytes:
    """A valid DOCX whose document part is 320 MiB of whitespace inside one
    paragraph: about 320 KiB on disk (deflate's ratio tops out near 1:1030)."""
    head = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t xml:space="preserve">'
    ).encode()
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    chunk = b" " * (1 << 20)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        add(zf, "[Content_Types].xml", CONTENT_TYPES)
        add(zf, "_rels/.rels", PACKAGE_RELS)
        info = zipfile.ZipInfo("word/document.xml", STAMP)
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as part:
            part.write(head)
            for _ in range(320):
                part.write(chunk)
            part.write(tail)
    return buffer.getvalue()


def deep() -> bytes:
    depth = 100_000
    body = "<w:sdt><w:sdtContent>" * depth + paragraph("deep") + "</w:sdtContent></w:sdt>" * depth
    return package(
        [
            ("[Content_Types].xml", CONTENT_TYPES),
            ("_rels/.rels", PACKAGE_RELS),
            ("word/document.xml", document(body)),
        ]
    )


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    valid = valid_docx()
    garbage = random.Random(7).randbytes(4096)
    fixtures = {
        "truncated.docx": valid[: len(valid) // 2],
        "corrupt.docx": b"PK\x03\x04" + garbage,
        "zip_bomb.docx": zip_bomb(),
        "missing_document.docx": package(
            [
                ("[Content_Types].xml", CONTENT_TYPES),
                ("_rels/.rels", PACKAGE_RELS),
                ("word/styles.xml", STYLES),
            ]
        ),
        "deep.docx": deep(),
        "empty.txt": b"",
        "garbage.txt": random.Random(11).randbytes(4096),
        "deep.html": b"<!DOCTYPE html><html><body>" + b"<div>" * 100_000 + b"deep</body></html>",
        "latin1.txt": (
            "Caf\u00e9 cr\u00e8me at the Stra\u00dfe \u201cM\u00fcller\u201d costs \u20ac4.50.\n\n"
            "The r\u00e9sum\u00e9 lists na\u00efve coordinates and a se\u00f1or's address.\n"
        ).encode("cp1252"),
        "utf16.txt": "\ufeffUTF-16 text with a byte-order mark reads like any other text.\n".encode("utf-16-le"),
        "malformed_xml.docx": package(
            [
                ("[Content_Types].xml", CONTENT_TYPES),
                ("_rels/.rels", PACKAGE_RELS),
                ("word/document.xml", document("<w:p><w:r><w:t>unclosed</w:r></w:p>")),
            ]
        ),
    }
    for name, data in fixtures.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
