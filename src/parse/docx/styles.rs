//! `word/styles.xml`: what a paragraph's style makes of it — heading level,
//! title, caption, code, list numbering — following `w:basedOn` chains.

use std::collections::{HashMap, HashSet};

use super::xml::{Ns, Visit, XmlReader};
use crate::parse::ParseFailure;

/// A numbering reference (`w:numPr`): which list and which level. Either
/// half may be missing and come from the paragraph's style.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct NumberingRef {
    pub num_id: Option<u32>,
    pub level: Option<u8>,
}

impl NumberingRef {
    /// Fills what `self` leaves open from `fallback`.
    pub fn or(self, fallback: NumberingRef) -> NumberingRef {
        NumberingRef {
            num_id: self.num_id.or(fallback.num_id),
            level: self.level.or(fallback.level),
        }
    }
}

/// What a style is for, from its name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum StyleRole {
    #[default]
    Body,
    /// The document title ("Title").
    Title,
    /// A figure or table caption ("Caption", "Table Caption").
    Caption,
    /// Source code ("Source Code", "HTML Preformatted", "Code Block").
    Code,
}

/// One `w:style` as declared (not inherited).
#[derive(Clone, Debug, Default)]
struct Style {
    name: String,
    based_on: Option<String>,
    /// `w:outlineLvl` (0 = level 1 heading, 9 = body text).
    outline_level: Option<u8>,
    numbering: Option<NumberingRef>,
    /// Run font of the style (`w:rFonts w:ascii`), for code detection.
    font: Option<String>,
}

/// A paragraph style with its `w:basedOn` chain applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct ResolvedStyle {
    /// Heading level 1–9 from the style's name or outline level.
    pub heading_level: Option<u8>,
    pub role: StyleRole,
    pub numbering: NumberingRef,
    /// Whether the style sets a monospaced font.
    pub monospace: bool,
}

/// The styles of a document.
#[derive(Debug, Default)]
pub(super) struct Styles {
    paragraph: HashMap<String, Style>,
    character: HashMap<String, Style>,
    /// `w:numPr/w:numId` of numbering styles (`w:type="numbering"`), which
    /// `w:numStyleLink` points at.
    numbering_styles: HashMap<String, u32>,
    default_paragraph: Option<String>,
}

impl Styles {
    pub fn parse(text: &str, part: &str, max_depth: u32) -> Result<Styles, ParseFailure> {
        let mut styles = Styles::default();
        // The open style's (type, id, is default).
        let mut current: Option<(String, String, bool)> = None;
        let mut style = Style::default();
        let mut reader = XmlReader::new(text, part, max_depth);
        reader.visit_all(|visit| {
            let Visit::Element(path, element) = visit else {
                return;
            };
            if element.ns != Ns::Word {
                return;
            }
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            match (path.as_slice(), element.local()) {
                (["styles"], "style") => {
                    styles.store(current.take(), std::mem::take(&mut style));
                    current = Some((
                        element.attr("type").unwrap_or_else(|| "paragraph".into()),
                        element.attr("styleId").unwrap_or_default(),
                        element
                            .attr("default")
                            .is_some_and(|d| d == "1" || d == "true"),
                    ));
                }
                (["styles", "style"], "name") => {
                    style.name = element.attr("val").unwrap_or_default();
                }
                (["styles", "style"], "basedOn") => style.based_on = element.attr("val"),
                (["styles", "style", "pPr"], "outlineLvl") => {
                    style.outline_level = element.int_val().and_then(|v| u8::try_from(v).ok());
                }
                (["styles", "style", "pPr", "numPr"], "numId") => {
                    let numbering = style.numbering.get_or_insert_default();
                    numbering.num_id = element.int_val().and_then(|v| u32::try_from(v).ok());
                }
                (["styles", "style", "pPr", "numPr"], "ilvl") => {
                    let numbering = style.numbering.get_or_insert_default();
                    numbering.level = element.int_val().and_then(|v| u8::try_from(v).ok());
                }
                (["styles", "style", "rPr"], "rFonts") => {
                    style.font = element.attr("ascii").or_else(|| element.attr("hAnsi"));
                }
                _ => {}
            }
        })?;
        styles.store(current.take(), std::mem::take(&mut style));
        Ok(styles)
    }

    fn store(&mut self, declared: Option<(String, String, bool)>, style: Style) {
        let Some((kind, id, is_default)) = declared else {
            return;
        };
        match kind.as_str() {
            "paragraph" => {
                if is_default && self.default_paragraph.is_none() {
                    self.default_paragraph = Some(id.clone());
                }
                self.paragraph.insert(id, style);
            }
            "character" => {
                self.character.insert(id, style);
            }
            "numbering" => {
                if let Some(num_id) = style.numbering.and_then(|n| n.num_id) {
                    self.numbering_styles.insert(id, num_id);
                }
            }
            _ => {}
        }
    }

    /// The paragraph style `id` (or the default paragraph style) with its
    /// `w:basedOn` chain applied: the nearest declaration wins.
    pub fn resolve(&self, id: Option<&str>) -> ResolvedStyle {
        let mut resolved = ResolvedStyle::default();
        let mut heading_settled = false;
        let mut role_settled = false;
        let mut font: Option<&str> = None;
        let mut numbering = NumberingRef::default();
        let mut seen = HashSet::new();
        let mut next = id.or(self.default_paragraph.as_deref());
        while let Some(id) = next {
            if !seen.insert(id) {
                break; // a basedOn cycle
            }
            let Some(style) = self.paragraph.get(id) else {
                break;
            };
            if !heading_settled {
                if let Some(level) = style.outline_level {
                    resolved.heading_level = (level < 9).then_some(level + 1);
                    heading_settled = true;
                } else if let Some(level) = heading_level_of_name(&style.name) {
                    resolved.heading_level = Some(level);
                    heading_settled = true;
                }
            }
            if !role_settled && let Some(role) = role_of_name(&style.name) {
                resolved.role = role;
                role_settled = true;
            }
            if font.is_none() {
                font = style.font.as_deref();
            }
            if let Some(n) = style.numbering {
                numbering = numbering.or(n);
            }
            next = style.based_on.as_deref();
        }
        resolved.numbering = numbering;
        resolved.monospace = font.is_some_and(is_monospace_font);
        resolved
    }

    /// Whether the character style `id` (or what it is based on) sets a
    /// monospaced font; `None` when it sets no font.
    pub fn character_monospace(&self, id: &str) -> Option<bool> {
        let mut seen = HashSet::new();
        let mut next = Some(id);
        while let Some(id) = next {
            if !seen.insert(id) {
                break;
            }
            let style = self.character.get(id)?;
            if let Some(font) = &style.font {
                return Some(is_monospace_font(font));
            }
            next = style.based_on.as_deref();
        }
        None
    }

    /// The `w:numId` a numbering style stands for (`w:numStyleLink`).
    pub fn numbering_style_num(&self, id: &str) -> Option<u32> {
        self.numbering_styles.get(id).copied()
    }
}

/// "heading 1" … "heading 9" (Word writes built-in names in English
/// whatever the UI language; custom copies are often capitalised).
fn heading_level_of_name(name: &str) -> Option<u8> {
    let name = name.trim().to_ascii_lowercase();
    let level: u8 = name.strip_prefix("heading")?.trim().parse().ok()?;
    (1..=9).contains(&level).then_some(level)
}

fn role_of_name(name: &str) -> Option<StyleRole> {
    let lower = name.trim().to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if lower == "title" {
        Some(StyleRole::Title)
    } else if words.contains(&"caption") {
        Some(StyleRole::Caption)
    } else if words
        .iter()
        .any(|w| matches!(*w, "code" | "sourcecode" | "preformatted" | "verbatim"))
    {
        // Whole words only: "Source Reference" or "Listing Number" are prose.
        Some(StyleRole::Code)
    } else {
        None
    }
}

/// Fonts whose glyphs all have one width: text set in them throughout is
/// likely code.
pub(super) fn is_monospace_font(font: &str) -> bool {
    let font = font.to_ascii_lowercase();
    [
        "courier",
        "consolas",
        "mono",
        "menlo",
        "monaco",
        "lucida console",
        "lucida sans typewriter",
        "source code",
        "fira code",
        "inconsolata",
        "cascadia",
        "jetbrains",
        "hack",
        "fixedsys",
        "ocr a",
    ]
    .iter()
    .any(|m| font.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLES: &str = r#"<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
      <w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
      <w:style w:type="paragraph" w:styleId="Balk1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/>
        <w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/>
        <w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="4"/></w:numPr></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="MyHeading"><w:name w:val="Fancy"/><w:basedOn w:val="Heading2"/></w:style>
      <w:style w:type="paragraph" w:styleId="Plain"><w:name w:val="heading 3"/>
        <w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Outlined"><w:name w:val="Custom"/>
        <w:pPr><w:outlineLvl w:val="3"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
      <w:style w:type="paragraph" w:styleId="SourceCode"><w:name w:val="Source Code"/></w:style>
      <w:style w:type="paragraph" w:styleId="SourceRef"><w:name w:val="Source Reference"/></w:style>
      <w:style w:type="paragraph" w:styleId="Mono"><w:name w:val="Mono"/><w:rPr><w:rFonts w:ascii="Courier New"/></w:rPr></w:style>
      <w:style w:type="paragraph" w:styleId="LoopA"><w:name w:val="A"/><w:basedOn w:val="LoopB"/></w:style>
      <w:style w:type="paragraph" w:styleId="LoopB"><w:name w:val="B"/><w:basedOn w:val="LoopA"/></w:style>
      <w:style w:type="numbering" w:styleId="OutlineList"><w:pPr><w:numPr><w:numId w:val="7"/></w:numPr></w:pPr></w:style>
    </w:styles>"#;

    #[test]
    fn heading_levels_come_from_names_outline_levels_and_based_on_chains() {
        let styles = Styles::parse(STYLES, "word/styles.xml", 64).unwrap();
        let level = |id| styles.resolve(Some(id)).heading_level;
        assert_eq!(level("Balk1"), Some(1));
        assert_eq!(level("Heading2"), Some(2));
        assert_eq!(level("MyHeading"), Some(2), "inherited through basedOn");
        assert_eq!(level("Plain"), None, "outline level 9 is body text");
        assert_eq!(level("Outlined"), Some(4), "outline level 3 is heading 4");
        assert_eq!(level("LoopA"), None, "basedOn cycles end");
        assert_eq!(styles.resolve(None), ResolvedStyle::default(), "Normal");
        assert_eq!(
            styles.resolve(Some("MyHeading")).numbering,
            NumberingRef {
                num_id: Some(4),
                level: Some(1)
            }
        );
    }

    #[test]
    fn roles_come_from_whole_words_of_the_name() {
        let styles = Styles::parse(STYLES, "word/styles.xml", 64).unwrap();
        assert_eq!(styles.resolve(Some("Title")).role, StyleRole::Title);
        assert_eq!(styles.resolve(Some("SourceCode")).role, StyleRole::Code);
        assert_eq!(styles.resolve(Some("SourceRef")).role, StyleRole::Body);
        assert!(styles.resolve(Some("Mono")).monospace);
        assert_eq!(styles.numbering_style_num("OutlineList"), Some(7));
    }
}
