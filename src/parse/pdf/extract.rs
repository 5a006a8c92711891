//! The glyphs of a PDF, page by page, with their positions and fonts
//! (`pdf_oxide`). Everything the layout needs and nothing of the library
//! leaves this module.

use std::sync::atomic::Ordering;

use super::forms::{self, PlacedField};
use super::invisible::{Ink, PageInk};
use super::metadata::{self, PdfMetadata};
use super::outline::{self, OutlineEntry};
use super::survey::Survey;
use super::{Glyph, PageGlyphs, PagesRead, Rule};
use crate::memory::Budget;
use crate::parse::Format;
use crate::parse::ParseFailure;

/// What was read of a document.
pub(super) struct Extracted {
    pub pages: Vec<PageGlyphs>,
    /// Pages the document has: those its page tree promises (more than
    /// `pages` when the page limit cut it, or when the file lost some).
    pub page_count: usize,
    /// Pages the library found in the file.
    pub readable: usize,
    /// Pages whose text could not be read, with the library's reason.
    pub failed_pages: Vec<(u32, String)>,
    /// The bookmarks, in document order.
    pub outline: Vec<OutlineEntry>,
    /// The title and metadata the file records.
    pub metadata: PdfMetadata,
    /// Its form fields, with where their widgets stand.
    pub fields: Vec<PlacedField>,
    /// Pages the page tree promises whose page object or content stream
    /// is not in the file (a truncated or damaged file): their text is
    /// lost, not missing for want of OCR.
    pub lost_pages: Vec<u32>,
    /// Pages drawn from a stream that failed to decode, with the reason:
    /// what was read of them is in doubt.
    pub damaged_pages: Vec<(u32, String)>,
    /// Damaged streams no page draws directly (a form, a font's map), by
    /// object number, with the reason.
    pub damaged_elsewhere: Vec<(u32, String)>,
}

/// How many pages the root of the page tree says the document has
/// (`/Count`), which a damaged file may hold fewer of than it promises;
/// `None` when the root cannot be read.
fn promised_pages(document: &pdf_oxide::PdfDocument) -> Option<usize> {
    let catalog = document.catalog().ok()?;
    let pages = document
        .resolve_object(catalog.as_dict()?.get("Pages")?)
        .ok()?;
    let count = pages.as_dict()?.get("Count")?.as_integer()?;
    usize::try_from(count).ok()
}

/// The object numbers of a page's content streams; `None` when the page
/// object cannot be read.
fn content_objects(document: &pdf_oxide::PdfDocument, index: usize) -> Option<Vec<u32>> {
    let page = document.get_page(index).ok()?;
    let contents = page.as_dict()?.get("Contents");
    Some(match contents {
        None => Vec::new(),
        Some(object) => match object.as_array() {
            Some(parts) => parts
                .iter()
                .filter_map(|p| p.as_reference().map(|r| r.id))
                .collect(),
            None => object.as_reference().map(|r| r.id).into_iter().collect(),
        },
    })
}

/// Most pages a damaged file's page tree is believed to promise.
const MOST_PROMISED_PAGES: usize = 100_000;

fn corrupt(detail: impl std::fmt::Display) -> ParseFailure {
    ParseFailure::Corrupt {
        format: Format::Pdf,
        detail: detail.to_string(),
    }
}

/// Reads the glyphs of the first `max_pages` pages of `bytes`, within a
/// memory budget of `max_memory` bytes for this thread (checked after each
/// page).
pub(super) fn glyphs(
    bytes: Vec<u8>,
    max_pages: usize,
    max_memory: u64,
    progress: &PagesRead,
    survey: &Survey,
) -> Result<Extracted, ParseFailure> {
    let budget = Budget::begin(max_memory);
    let document = pdf_oxide::PdfDocument::from_bytes(bytes).map_err(corrupt)?;
    if document.is_encrypted()
        && !document.is_authenticated()
        && !document.authenticate(b"").unwrap_or(false)
    {
        return Err(ParseFailure::Encrypted);
    }
    let readable = document.page_count().map_err(corrupt)?;
    // Pages promised past those the library found are lost (a truncated
    // file); a /Count far past any file's pages is not believed.
    let promised = promised_pages(&document)
        .filter(|&n| n > readable && n <= MOST_PROMISED_PAGES)
        .unwrap_or(readable);
    let page_count = readable;
    let reading = page_count.min(max_pages);
    progress.pages.store(
        u32::try_from(reading).unwrap_or(u32::MAX),
        Ordering::Relaxed,
    );
    let mut pages = Vec::with_capacity(page_count.min(max_pages));
    let mut failed_pages = Vec::new();
    let (mut lost_pages, mut damaged_pages) = (Vec::new(), Vec::new());
    let mut drawn = std::collections::HashSet::new();
    for index in 0..reading {
        let number = index as u32 + 1;
        progress.read.store(index as u32, Ordering::Relaxed);
        // A page whose object cannot be read, or whose content stream is
        // not in the file, has lost its text if none was read from it.
        // (A content stream is always an object of the file's own, never
        // inside an object stream; a survey that found no object at all
        // read a file too odd to judge by it.)
        let unreadable = match content_objects(&document, index) {
            None => true,
            Some(objects) => {
                if let Some(reason) = objects.iter().find_map(|n| survey.damaged.get(n)) {
                    damaged_pages.push((number, reason.clone()));
                }
                let missing = !survey.objects.is_empty()
                    && objects.iter().any(|n| !survey.objects.contains(n));
                drawn.extend(objects);
                missing
            }
        };
        let width = match document.get_page_media_box(index) {
            Ok((x0, _, x1, _)) => (x1 - x0).abs(),
            Err(_) => 612.0,
        };
        let chars = match document.extract_chars(index) {
            Ok(chars) => chars,
            Err(e) => {
                failed_pages.push((number, e.to_string()));
                continue;
            }
        };
        if unreadable && chars.iter().all(|c| c.char.is_whitespace()) {
            lost_pages.push(number);
        }
        let ink = PageInk::read(&document, index);
        let (mut ocr_layer, mut hidden) = (0, 0);
        let glyphs = chars
            .iter()
            .filter(|c| upright(c.rotation_degrees))
            .filter(|c| {
                let Some(ink) = &ink else { return true };
                let counted = usize::from(!c.char.is_whitespace());
                match ink.ink(c.origin_x, c.origin_y, c.font_size.abs()) {
                    Ink::Drawn => true,
                    Ink::OcrLayer => {
                        ocr_layer += counted;
                        true
                    }
                    Ink::Hidden => {
                        hidden += counted;
                        false
                    }
                }
            })
            .map(|c| Glyph {
                ch: c.char,
                x0: c.bbox.x,
                x1: c.bbox.x + c.bbox.width.max(0.0),
                baseline: c.origin_y,
                size: c.font_size.abs(),
                bold: c.font_weight as u16 >= 600 || c.font_name.contains("Bold"),
            })
            .filter(|g| g.size.is_finite() && g.x0.is_finite() && g.baseline.is_finite())
            .collect();
        let rules = document
            .extract_paths(index)
            .map(|paths| paths.iter().flat_map(rules_of).collect())
            .unwrap_or_default();
        pages.push(PageGlyphs {
            number,
            width,
            glyphs,
            rules,
            ocr_layer,
            hidden,
        });
        if budget.exceeded() {
            return Err(ParseFailure::OutOfMemory {
                limit: budget.limit(),
                page: number,
            });
        }
    }
    lost_pages.extend((readable as u32 + 1)..=(promised as u32));
    let mut damaged_elsewhere: Vec<(u32, String)> = survey
        .damaged
        .iter()
        .filter(|(n, _)| !drawn.contains(*n))
        .map(|(n, reason)| (*n, reason.clone()))
        .collect();
    damaged_elsewhere.sort();
    Ok(Extracted {
        pages,
        page_count: promised,
        readable,
        failed_pages,
        outline: outline::read(&document),
        metadata: metadata::read(&document),
        fields: forms::read(&document),
        lost_pages,
        damaged_pages,
        damaged_elsewhere,
    })
}

/// Thicker than this (points), a filled rectangle is a shape, not a rule.
const RULE_THICKNESS: f32 = 2.5;
/// Shorter than this (points), a segment is not a rule.
const RULE_LENGTH: f32 = 6.0;

/// The horizontal and vertical ruling lines a path draws: its straight
/// segments, the edges of its rectangles, or itself when it is a thin
/// filled rectangle.
fn rules_of(path: &pdf_oxide::elements::PathContent) -> Vec<Rule> {
    use pdf_oxide::elements::PathOperation;
    if path.stroke_color.is_none() && path.fill_color.is_none() {
        return Vec::new();
    }
    let mut rules = Vec::new();
    let mut push = |(x0, y0): (f32, f32), (x1, y1): (f32, f32)| {
        let (dx, dy) = ((x1 - x0).abs(), (y1 - y0).abs());
        if dy <= 0.5 && dx >= RULE_LENGTH {
            rules.push(Rule {
                horizontal: true,
                at: (y0 + y1) / 2.0,
                from: x0.min(x1),
                to: x0.max(x1),
            });
        } else if dx <= 0.5 && dy >= RULE_LENGTH {
            rules.push(Rule {
                horizontal: false,
                at: (x0 + x1) / 2.0,
                from: y0.min(y1),
                to: y0.max(y1),
            });
        }
    };
    let (mut start, mut current) = ((0.0, 0.0), (0.0, 0.0));
    for operation in &path.operations {
        match *operation {
            PathOperation::MoveTo(x, y) => {
                start = (x, y);
                current = (x, y);
            }
            PathOperation::LineTo(x, y) => {
                if path.stroke_color.is_some() {
                    push(current, (x, y));
                }
                current = (x, y);
            }
            PathOperation::CurveTo(.., x, y) => current = (x, y),
            PathOperation::ClosePath => {
                if path.stroke_color.is_some() {
                    push(current, start);
                }
                current = start;
            }
            PathOperation::Rectangle(x, y, w, h) => {
                let (x1, y1) = (x + w, y + h);
                if w.abs() <= RULE_THICKNESS || h.abs() <= RULE_THICKNESS {
                    // A thin bar, filled or stroked: one rule along it.
                    if w.abs() >= h.abs() {
                        push((x, y + h / 2.0), (x1, y + h / 2.0));
                    } else {
                        push((x + w / 2.0, y), (x + w / 2.0, y1));
                    }
                } else if path.stroke_color.is_some() {
                    push((x, y), (x1, y));
                    push((x, y1), (x1, y1));
                    push((x, y), (x, y1));
                    push((x1, y), (x1, y1));
                }
                start = (x, y);
                current = (x, y);
            }
        }
    }
    rules
}

/// Horizontal text, upright or nearly: rotated stamps and margin notes
/// ("Confidential", line numbers set sideways) are left out of the body.
fn upright(degrees: f32) -> bool {
    let d = degrees.rem_euclid(360.0);
    !(2.0..=358.0).contains(&d)
}
