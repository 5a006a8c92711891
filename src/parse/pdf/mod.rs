//! PDF → [`DocumentTree`].
//!
//! The glyphs of each page, with positions and fonts, come from
//! `pdf_oxide` ([`extract`]), a pure-Rust PDF library: it builds from
//! crates.io with nothing else installed, reads broken cross-reference
//! tables and truncated files where it can, and gives per glyph the box,
//! baseline, font name, size and weight the layout needs. [`layout`] turns
//! them into lines and blocks in reading order and renders them as plain
//! text with page breaks and underlined headings, which the text parser
//! then reads like any other plain text.
//!
//! The document's metadata (title, author, date, language) comes from its
//! XMP packet and information dictionary ([`metadata`]); its form fields
//! from the AcroForm field tree ([`forms`]).
//!
//! Two things the glyphs alone do not tell are read from the file besides:
//! invisible text ([`invisible`]: an OCR layer over a scanned image is
//! kept, other invisible text is hidden text and left out, both with a
//! warning), and the bookmarks ([`outline`]: a line printing a bookmark's
//! title is a heading at the bookmark's depth).
//!
//! Bounds ([`ParsingSpec`]): `maxPages` pages are read (the rest is left
//! out, with a warning), a document may take `maxMemoryBytesPerDocument`
//! (checked after each page, see [`crate::memory`]) and gets
//! `maxSecondsPerDocument`; the
//! library runs on a thread of its own, so a document that takes longer is
//! reported as timed out and the ingest goes on (the thread is left to
//! finish by itself), and a panic inside the library is a parse error of
//! that document. Pages without a text layer are reported as needing OCR;
//! a document with none fails with that reason rather than coming out
//! empty. Glyphs without a Unicode mapping are counted per page, and each
//! page's text is judged for the marks of a lost font encoding
//! ([`super::legibility`]): a garbled page is named in a warning and its
//! sentences get a low confidence; a document whose every page is garbled
//! fails rather than being indexed as symbols.

mod extract;
mod forms;
mod invisible;
pub mod layout;
mod metadata;
mod outline;
mod survey;
mod table;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::legibility::Legibility;
use super::{DocumentTree, Format, ParseFailure};
use crate::spec::ParsingSpec;

/// One glyph as the layout sees it (PDF user space: points, y upwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Glyph {
    pub ch: char,
    pub x0: f32,
    pub x1: f32,
    pub baseline: f32,
    pub size: f32,
    pub bold: bool,
}

/// A ruling line: a stroked line or a thin filled rectangle, horizontal or
/// vertical (PDF user space).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub horizontal: bool,
    /// The y of a horizontal rule, the x of a vertical one.
    pub at: f32,
    /// Where it runs along its direction, `from < to`.
    pub from: f32,
    pub to: f32,
}

/// The glyphs of one page.
#[derive(Clone, Debug, Default)]
pub struct PageGlyphs {
    /// 1-based.
    pub number: u32,
    pub width: f32,
    pub glyphs: Vec<Glyph>,
    /// The page's ruling lines (table borders).
    pub rules: Vec<Rule>,
    /// Glyphs of an invisible OCR layer over a scanned image (kept).
    pub ocr_layer: usize,
    /// Invisible glyphs over no image: hidden text, left out.
    pub hidden: usize,
}

pub fn parse(bytes: &[u8], spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    let mut extracted = guarded(bytes, spec)?;
    let metadata = std::mem::take(&mut extracted.metadata);
    let fields = std::mem::take(&mut extracted.fields);
    let mut warnings = Vec::new();
    if extracted.readable > extracted.pages.len() + extracted.failed_pages.len() {
        warnings.push(format!(
            "only the first {} of {} pages were read (parsing.maxPages)",
            spec.max_pages, extracted.readable
        ));
    }
    for (page, reason) in &extracted.failed_pages {
        warnings.push(format!("page {page}: text could not be read: {reason}"));
    }
    warnings.extend(invisible_text_warnings(&extracted.pages));
    // Reasons to flag the document besides garbled pages.
    let mut flags = Vec::new();
    let lost = &extracted.lost_pages;
    if !lost.is_empty() {
        flags.push(format!(
            "page{} {} of {} could not be read (not in the file: truncated or damaged?); \
             their text is lost",
            if lost.len() == 1 { "" } else { "s" },
            page_list(lost),
            extracted.page_count
        ));
    }
    for (page, reason) in &extracted.damaged_pages {
        flags.push(format!(
            "page {page}: a content stream did not decode ({reason}); \
             the sentences read from it carry a low confidence"
        ));
    }
    for (object, reason) in &extracted.damaged_elsewhere {
        flags.push(format!(
            "the stream of object {object} did not decode ({reason}); what it draws may be missing"
        ));
    }
    let pages: Vec<layout::PageLayout> = extracted.pages.iter().map(layout::lay_out).collect();
    let without_text: Vec<u32> = pages
        .iter()
        .filter(|p| p.visible == 0 && !lost.contains(&p.number))
        .map(|p| p.number)
        .collect();
    if pages.iter().all(|p| p.visible == 0) {
        if !lost.is_empty() {
            return Err(ParseFailure::Corrupt {
                format: Format::Pdf,
                detail: flags.remove(0),
            });
        }
        return Err(ParseFailure::NeedsOcr {
            pages: extracted.page_count,
        });
    }
    if !without_text.is_empty() {
        warnings.push(format!(
            "{} page{} without a text layer (scanned?), not indexed until OCR: {}",
            without_text.len(),
            if without_text.len() == 1 { "" } else { "s" },
            page_list(&without_text)
        ));
    }
    let (visible, unmapped) = pages
        .iter()
        .fold((0, 0), |(v, u), p| (v + p.visible, u + p.unmapped));
    if unmapped > 0 {
        warnings.push(format!(
            "{unmapped} of {visible} glyphs have no Unicode mapping (a font without ToUnicode); \
             their text is uncertain"
        ));
    }
    let legibility = judge_pages(&pages);
    let garbled = legibility.garbled_pages();
    if !garbled.is_empty() {
        if garbled.len() == legibility.pages.len() {
            return Err(ParseFailure::Garbled {
                detail: legibility.whole.describe(),
            });
        }
        warnings.push(garbled_pages_warning(&garbled));
    }
    let bookmarked = outline::printed_titles(&pages, &extracted.outline);
    let (text, lines) = layout::render(&pages, &bookmarked);
    let mut tree = super::text::parse(&text, spec)?;
    if !bookmarked.is_empty() {
        outline::relevel(&mut tree, &extracted.outline);
    }
    tree.format = Format::Pdf;
    // The document's own title (its first heading) before the one its
    // metadata records, as for DOCX: writers fill the latter with file
    // names ("Microsoft Word - draft3.docx") as often as with titles.
    if tree.title.is_none() {
        tree.title = metadata.title;
    }
    let (info, date_warning) = metadata.info.finish();
    tree.info = info;
    warnings.extend(date_warning);
    tree.lines = lines;
    forms::place(&mut tree, fields);
    tree.pages = Some(extracted.page_count as u32);
    tree.confidence = legibility.whole.legible_share();
    tree.garbled_pages = garbled;
    tree.damaged_pages = extracted.damaged_pages.iter().map(|(p, _)| *p).collect();
    tree.lost_pages = extracted.lost_pages.clone();
    warnings.extend(flags.iter().cloned());
    tree.flags = flags;
    tree.warnings.splice(0..0, warnings);
    Ok(tree)
}

/// The warning for a document indexed with garbled pages, also the reason
/// it is flagged in the ingest report.
pub fn garbled_pages_warning(pages: &[u32]) -> String {
    format!(
        "the text of page{} {} looks garbled (a font without a usable Unicode mapping?); \
         the sentences there carry a low confidence",
        if pages.len() == 1 { "" } else { "s" },
        page_list(pages)
    )
}

/// How each page with text reads ([`legibility`]).
struct PageLegibility {
    pages: Vec<(u32, Legibility)>,
    whole: Legibility,
}

impl PageLegibility {
    fn garbled_pages(&self) -> Vec<u32> {
        self.pages
            .iter()
            .filter(|(_, l)| l.is_garbled())
            .map(|(number, _)| *number)
            .collect()
    }
}

fn judge_pages(pages: &[layout::PageLayout]) -> PageLegibility {
    let mut whole = Legibility::default();
    let pages = pages
        .iter()
        .filter(|p| p.visible > 0)
        .map(|p| {
            let mut page = Legibility::default();
            for line in &p.lines {
                page.add(&line.text);
            }
            whole.merge(&page);
            (p.number, page)
        })
        .collect();
    PageLegibility { pages, whole }
}

/// What was done with invisible text, when a page has any.
fn invisible_text_warnings(pages: &[PageGlyphs]) -> Vec<String> {
    let mut warnings = Vec::new();
    let pages_with = |count: fn(&PageGlyphs) -> usize| -> (usize, Vec<u32>) {
        pages
            .iter()
            .filter(|p| count(p) > 0)
            .fold((0, Vec::new()), |(n, mut numbers), p| {
                numbers.push(p.number);
                (n + count(p), numbers)
            })
    };
    let (ocr, ocr_pages) = pages_with(|p| p.ocr_layer);
    if ocr > 0 {
        warnings.push(format!(
            "{ocr} glyphs come from an invisible OCR layer over a scanned image (page {}): \
             their text is only as good as the OCR",
            page_list(&ocr_pages)
        ));
    }
    let (hidden, hidden_pages) = pages_with(|p| p.hidden);
    if hidden > 0 {
        warnings.push(format!(
            "{hidden} glyphs of invisible text over no image left out (page {}): \
             hidden text is not what a reader sees",
            page_list(&hidden_pages)
        ));
    }
    warnings
}

/// "3, 5–7, 10": page numbers with runs shortened.
fn page_list(pages: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pages.len() {
        let start = pages[i];
        let mut end = start;
        while i + 1 < pages.len() && pages[i + 1] == end + 1 {
            i += 1;
            end = pages[i];
        }
        parts.push(if end > start {
            format!("{start}–{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    parts.join(", ")
}

/// Runs the extraction on a thread of its own, within the time bound, with
/// a panic in the library turned into an error.
fn guarded(bytes: &[u8], spec: &ParsingSpec) -> Result<extract::Extracted, ParseFailure> {
    guarded_reporting(bytes, spec, PROGRESS_EVERY, &|read, pages, elapsed| {
        tracing::info!(
            pages_read = read,
            pages,
            seconds = elapsed.as_secs(),
            "still reading a long PDF"
        );
    })
}

/// The reader thread's stack. The library recurses once per level of
/// nesting, which [`survey::survey`] bounds by `parsing.maxNestingDepth`
/// (at most [`crate::spec::bounds`]' 4096) before it reads anything; this
/// leaves it 16 KB a level at that bound, several times what a level takes.
/// Only the pages touched are committed.
const READER_STACK: usize = 64 * 1024 * 1024;

/// How often a long PDF says how far its reading has got.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Pages read so far of a document's pages, shared with the reader thread.
#[derive(Default)]
pub(super) struct PagesRead {
    pub read: AtomicU32,
    pub pages: AtomicU32,
}

/// [`guarded`], calling `report(pages read, pages, time so far)` every
/// `every` while the reader works: the document's span names it, so a
/// long document shows its own progress rather than a stalled count of
/// documents.
fn guarded_reporting(
    bytes: &[u8],
    spec: &ParsingSpec,
    every: Duration,
    report: &dyn Fn(u32, u32, Duration),
) -> Result<extract::Extracted, ParseFailure> {
    let (send, receive) = mpsc::channel();
    let owned = bytes.to_vec();
    let max_pages = spec.max_pages.max(1) as usize;
    let max_memory = spec.max_memory_bytes_per_document;
    let max_nesting = spec.max_nesting_depth;
    let progress = Arc::new(PagesRead::default());
    let shared = Arc::clone(&progress);
    std::thread::Builder::new()
        .name("pdf".into())
        .stack_size(READER_STACK)
        .spawn(move || {
            let result = std::panic::catch_unwind(move || {
                let survey = survey::survey(&owned, max_nesting, max_memory)?;
                extract::glyphs(owned, max_pages, max_memory, &shared, &survey)
            });
            let _ = send.send(result);
        })
        .map_err(ParseFailure::Io)?;
    let seconds = spec.max_seconds_per_document.max(1);
    let limit = Duration::from_secs(u64::from(seconds));
    let started = Instant::now();
    let received = loop {
        let left = limit.saturating_sub(started.elapsed());
        match receive.recv_timeout(left.min(every)) {
            Err(mpsc::RecvTimeoutError::Timeout) if started.elapsed() < limit => report(
                progress.read.load(Ordering::Relaxed),
                progress.pages.load(Ordering::Relaxed),
                started.elapsed(),
            ),
            other => break other,
        }
    };
    match received {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => Err(ParseFailure::Corrupt {
            format: Format::Pdf,
            detail: format!("the PDF reader failed: {}", panic_message(&panic)),
        }),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(ParseFailure::TimedOut { seconds }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(ParseFailure::Corrupt {
            format: Format::Pdf,
            detail: "the PDF reader stopped without an answer".into(),
        }),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_read_reports_pages_as_it_goes() {
        let bytes = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/bad/three_pages.pdf"),
        )
        .unwrap();
        let reports = std::sync::Mutex::new(Vec::new());
        let extracted = guarded_reporting(
            &bytes,
            &ParsingSpec::default(),
            Duration::from_micros(1),
            &|read, pages, _| reports.lock().unwrap().push((read, pages)),
        )
        .unwrap();
        assert_eq!(extracted.pages.len(), 3);
        let reports = reports.into_inner().unwrap();
        // However fast the reader, what it reported never runs backwards
        // or past the document.
        assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0), "{reports:?}");
        assert!(
            reports
                .iter()
                .all(|&(read, pages)| read <= 3 && (pages == 0 || pages == 3)),
            "{reports:?}"
        );
    }

    #[test]
    fn page_lists_shorten_runs() {
        assert_eq!(page_list(&[3, 5, 6, 7, 10]), "3, 5–7, 10");
        assert_eq!(page_list(&[1]), "1");
    }

    #[test]
    fn garbage_is_a_clear_error_not_a_panic() {
        let spec = ParsingSpec::default();
        for bytes in [
            b"%PDF-1.7\n".to_vec(),
            b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"
                .to_vec(),
            (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ] {
            assert!(parse(&bytes, &spec).is_err());
        }
    }
}
