#!/usr/bin/env python3
"""Writes examples/corpus/data-processing-addendum.docx with the standard
library only: a small but real WordprocessingML document with heading styles,
a numbered list, a table with a merged cell and a footnote.

    python3 scripts/make_example_docx.py

The output is committed; rerun this only to change the example.
"""
import pathlib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "examples" / "corpus" / "data-processing-addendum.docx"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def esc(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def para(text, style=None, num=None, footnote=None):
    ppr = ""
    if style or num:
        ppr = "<w:pPr>"
        if style:
            ppr += f'<w:pStyle w:val="{style}"/>'
        if num:
            ppr += f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>'
        ppr += "</w:pPr>"
    runs = f'<w:r><w:t xml:space="preserve">{esc(text)}</w:t></w:r>'
    if footnote:
        runs += f'<w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteReference w:id="{footnote}"/></w:r>'
    return f"<w:p>{ppr}{runs}</w:p>"


def cell(text, span=None, vmerge=None):
    tcpr = ""
    if span or vmerge:
        tcpr = "<w:tcPr>"
        if span:
            tcpr += f'<w:gridSpan w:val="{span}"/>'
        if vmerge:
            tcpr += '<w:vMerge w:val="restart"/>' if vmerge == "restart" else "<w:vMerge/>"
        tcpr += "</w:tcPr>"
    return f"<w:tc>{tcpr}{para(text)}</w:tc>"


def row(cells, header=False):
    trpr = "<w:trPr><w:tblHeader/></w:trPr>" if header else ""
    return f"<w:tr>{trpr}{''.join(cells)}</w:tr>"


body = "".join([
    para("Data Processing Addendum", "Title"),
    para("This Data Processing Addendum (the \"Addendum\") forms part of the Master Services "
         "Agreement between Contoso Ltd. and Northwind Traders, Inc. dated March 1, 2024."),
    para("Scope and roles", "Heading1", num=(1, 0)),
    para("Contoso processes personal data only on documented instructions from Customer, "
         "including with regard to transfers to a third country.", footnote=1),
    para("Customer remains the controller of all personal data processed under the Agreement."),
    para("Security measures", "Heading1", num=(1, 0)),
    para("Contoso shall implement at least the following measures:"),
    para("Encryption of personal data at rest and in transit.", "ListParagraph", num=(2, 0)),
    para("Role-based access control with quarterly access reviews.", "ListParagraph", num=(2, 0)),
    para("Logging of administrative access, retained for 12 months.", "ListParagraph", num=(2, 0)),
    para("Sub-processors", "Heading1", num=(1, 0)),
    para("Approved sub-processors", "Heading2", num=(1, 1)),
    "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>"
    + row([cell("Sub-processor"), cell("Location"), cell("Purpose")], header=True)
    + row([cell("Fabrikam GmbH"), cell("Germany"), cell("Data-centre hosting")])
    + row([cell("Adatum Corporation", vmerge="restart"), cell("United States"), cell("Support desk")])
    + row([cell("", vmerge="continue"), cell("Ireland"), cell("Support desk")])
    + row([cell("Backups are replicated between the two German sites.", span=3)])
    + "</w:tbl>",
    para("Contoso shall notify Customer at least 30 days before adding a sub-processor."),
    '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr>',
])

document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>')

styles = f'''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="{W}">
  <w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
  <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style>
  <w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
  <w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
  <w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/><w:basedOn w:val="Normal"/></w:style>
  <w:style w:type="character" w:styleId="FootnoteReference"><w:name w:val="footnote reference"/></w:style>
</w:styles>'''

numbering = f'''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering xmlns:w="{W}">
  <w:abstractNum w:abstractNumId="0">
    <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>
    <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/></w:lvl>
  </w:abstractNum>
  <w:abstractNum w:abstractNumId="1">
    <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%1)"/></w:lvl>
  </w:abstractNum>
  <w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
  <w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
</w:numbering>'''

footnotes = f'''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:footnotes xmlns:w="{W}">
  <w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>
  <w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>
  <w:footnote w:id="1"><w:p><w:r><w:t>Transfers rely on the EU Standard Contractual Clauses of 4 June 2021.</w:t></w:r></w:p></w:footnote>
</w:footnotes>'''

core = '''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Data Processing Addendum</dc:title></cp:coreProperties>'''

content_types = '''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
  <Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
  <Default Extension="xml" ContentType="application/xml"/>
  <Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
  <Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
  <Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>
  <Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/>
  <Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
</Types>'''

rels = '''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
  <Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
  <Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>
</Relationships>'''

document_rels = '''<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
  <Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>
  <Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/>
  <Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes" Target="footnotes.xml"/>
</Relationships>'''

# Fixed timestamps keep the file byte-for-byte reproducible.
STAMP = (2024, 3, 1, 0, 0, 0)
with zipfile.ZipFile(OUT, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in [
        ("[Content_Types].xml", content_types),
        ("_rels/.rels", rels),
        ("word/_rels/document.xml.rels", document_rels),
        ("word/document.xml", document),
        ("word/styles.xml", styles),
        ("word/numbering.xml", numbering),
        ("word/footnotes.xml", footnotes),
        ("docProps/core.xml", core),
    ]:
        z.writestr(zipfile.ZipInfo(name, STAMP), data)
print(OUT)
