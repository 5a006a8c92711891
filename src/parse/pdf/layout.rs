//! From glyphs to lines and blocks in reading order, rendered as the plain
//! text the text parser reads.
//!
//! Per page:
//!
//! 1. **Lines.** Glyphs are grouped by baseline; within a line they are
//!    ordered left to right, duplicates from overprinting ("fake bold")
//!    dropped, and spaces put where the gap between two glyphs is wider
//!    than a fifth of the font size (text with explicit space glyphs keeps
//!    them). A gap wider than 0.8 font sizes splits the line into pieces
//!    (which may belong to different columns); one wider than two font
//!    sizes is written as three spaces, which the text parser reads as a
//!    column gap (tables).
//! 2. **Columns.** When most lines leave the same vertical strip near the
//!    middle of the page empty, the page has two columns: each run of
//!    such lines is read left column first, then right; a line crossing
//!    the strip (a title over both columns) is read where it stands.
//! 3. **Blocks.** Lines are cut into blocks where the gap to the previous
//!    line is clearly wider than the page's usual line pitch, where the
//!    font size changes, and around headings.
//! 4. **Headings** come from the font: a line set clearly larger than the
//!    document's body text, or a short line wholly in bold that does not
//!    end like a sentence. They are underlined in the rendering (`===` for
//!    the largest size, `---` for the rest), as plain text marks titles.
//! 5. **Tables** come from column alignment ([`super::table`]) and are
//!    written as pipe tables.
//!
//! The text parser then does what it does for any plain text: headings by
//! numbering and shape, paragraphs joined across lines and page breaks,
//! words broken at line ends mended, running headers and page numbers
//! recognised.

use std::collections::HashMap;

use super::outline::Printed;
use super::{Glyph, PageGlyphs, Rule};
use crate::parse::PageLine;

/// A glyph is a space when the gap before it is wider than this share of
/// the font size.
const SPACE_GAP: f32 = 0.2;
/// A gap wider than this many font sizes separates pieces of a line (which
/// may stand in different columns).
const PIECE_GAP: f32 = 0.8;
/// A gap wider than this many font sizes is written as a column gap.
const COLUMN_GAP: f32 = 2.0;
/// Lines whose baselines differ by less than this share of the font size
/// are one line.
const BASELINE_TOLERANCE: f32 = 0.4;
/// A line set at least this many times the body size is a heading.
const HEADING_SIZE: f32 = 1.15;
/// A bold line of at most this many words may be a heading.
const BOLD_HEADING_WORDS: usize = 12;
/// Narrowest gutter between two columns, in points (a third of an inch
/// is common; manuals set 11 points).
const MIN_GUTTER: usize = 9;
/// A gap between lines wider than this many times the usual pitch starts
/// a new block.
const BLOCK_GAP: f32 = 1.4;

/// One line of a page: glyphs on a baseline, in reading order.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub text: String,
    pub x0: f32,
    pub x1: f32,
    pub baseline: f32,
    /// The most common font size of its glyphs.
    pub size: f32,
    /// Every visible glyph is bold.
    pub bold: bool,
    /// The line's pieces, split at gaps wider than [`PIECE_GAP`].
    pub pieces: Vec<Piece>,
    /// The left and right edge of each character of `text`.
    pub xs: Vec<[f32; 2]>,
}

/// A run of glyphs of a line with no wide gap inside.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    pub x0: f32,
    pub x1: f32,
    pub text: String,
    /// The left and right edge of each character of `text` (a space spans
    /// the gap it stands for).
    pub xs: Vec<[f32; 2]>,
}

impl Line {
    /// A line of `pieces` (non-empty, left to right).
    fn of_pieces(pieces: Vec<Piece>, baseline: f32, size: f32, bold: bool) -> Option<Line> {
        let x0 = pieces.first()?.x0;
        let x1 = pieces.last()?.x1;
        let mut text = String::new();
        let mut xs = Vec::new();
        let mut previous: Option<&Piece> = None;
        for piece in &pieces {
            if let Some(p) = previous {
                let gap = if piece.x0 - p.x1 > COLUMN_GAP * size {
                    "   "
                } else {
                    " "
                };
                text.push_str(gap);
                xs.extend(std::iter::repeat_n([p.x1, piece.x0], gap.len()));
            }
            text.push_str(&piece.text);
            xs.extend_from_slice(&piece.xs);
            previous = Some(piece);
        }
        Some(Line {
            text,
            x0,
            x1,
            baseline,
            size,
            bold,
            pieces,
            xs,
        })
    }
}

/// A page laid out: its lines in reading order.
#[derive(Clone, Debug, Default)]
pub struct PageLayout {
    pub number: u32,
    pub lines: Vec<Line>,
    /// Glyphs without a Unicode mapping (U+FFFD) and all visible glyphs.
    pub unmapped: usize,
    pub visible: usize,
    /// The page's ruling lines.
    pub rules: Vec<Rule>,
}

/// Lays out one page.
pub fn lay_out(page: &PageGlyphs) -> PageLayout {
    let visible = page.glyphs.iter().filter(|g| !g.ch.is_whitespace()).count();
    let unmapped = page.glyphs.iter().filter(|g| g.ch == '\u{FFFD}').count();
    let lines = lines(&page.glyphs);
    let lines = reading_order(lines, page.width);
    PageLayout {
        number: page.number,
        lines,
        unmapped,
        visible,
        rules: page.rules.clone(),
    }
}

/// Groups glyphs into lines, top to bottom (PDF y grows upwards).
fn lines(glyphs: &[Glyph]) -> Vec<Line> {
    let mut sorted: Vec<&Glyph> = glyphs
        .iter()
        .filter(|g| !g.ch.is_control() && g.size > 0.0)
        .collect();
    sorted.sort_by(|a, b| {
        b.baseline
            .total_cmp(&a.baseline)
            .then(a.x0.total_cmp(&b.x0))
    });
    let mut rows: Vec<Vec<&Glyph>> = Vec::new();
    for glyph in sorted {
        match rows.last_mut() {
            Some(row)
                if (row[0].baseline - glyph.baseline).abs()
                    <= BASELINE_TOLERANCE * row[0].size.max(glyph.size) =>
            {
                row.push(glyph)
            }
            _ => rows.push(vec![glyph]),
        }
    }
    rows.into_iter().filter_map(line_of).collect()
}

/// One row of glyphs as a line: ordered, overprints dropped, spaced.
fn line_of(mut row: Vec<&Glyph>) -> Option<Line> {
    row.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    let mut pieces: Vec<Piece> = Vec::new();
    let mut previous: Option<&Glyph> = None;
    let mut space = false;
    // (Right-to-left lines are turned round once built.)
    let mut sizes: Vec<f32> = Vec::new();
    let mut bold = true;
    for glyph in row.iter().copied() {
        if glyph.ch.is_whitespace() {
            space = true;
            continue;
        }
        let gap = previous.map(|p| (p, glyph.x0 - p.x1));
        match gap {
            // Overprinting: the same glyph again at (nearly) the same place.
            Some((p, _)) if p.ch == glyph.ch && (glyph.x0 - p.x0).abs() < 0.2 * glyph.size => {
                continue;
            }
            Some((p, gap)) if gap <= PIECE_GAP * p.size.max(glyph.size) => {
                if let Some(piece) = pieces.last_mut() {
                    if space || gap > SPACE_GAP * p.size.max(glyph.size) {
                        piece.text.push(' ');
                        piece.xs.push([p.x1, glyph.x0]);
                    }
                    piece.text.push(glyph.ch);
                    piece.xs.push([glyph.x0, glyph.x1]);
                    piece.x1 = piece.x1.max(glyph.x1);
                }
            }
            _ => pieces.push(Piece {
                x0: glyph.x0,
                x1: glyph.x1,
                text: glyph.ch.to_string(),
                xs: vec![[glyph.x0, glyph.x1]],
            }),
        }
        space = false;
        sizes.push(glyph.size);
        bold &= glyph.bold;
        previous = Some(glyph);
    }
    if is_right_to_left(&pieces) {
        // Glyphs come in visual order; right-to-left text is read from the
        // right: the pieces, and the text within each, turned round.
        // Character edges are kept per piece only: the reordering moves
        // characters, and a sentence's box needs no finer grain there.
        pieces.reverse();
        for piece in &mut pieces {
            piece.text = logical_order(&piece.text);
            piece.xs = vec![[piece.x0, piece.x1]; piece.text.chars().count()];
        }
    }
    Line::of_pieces(pieces, row.first()?.baseline, mode(&sizes), bold)
}

/// Whether a script is written right to left (Hebrew, Arabic and their
/// presentation forms).
pub(super) fn is_rtl(c: char) -> bool {
    matches!(c as u32, 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF)
}

/// Whether most of a line's letters are right-to-left.
fn is_right_to_left(pieces: &[Piece]) -> bool {
    let (rtl, letters) = pieces
        .iter()
        .flat_map(|p| p.text.chars())
        .filter(|c| c.is_alphabetic())
        .fold((0usize, 0usize), |(r, n), c| {
            (r + usize::from(is_rtl(c)), n + 1)
        });
    letters > 0 && rtl * 2 > letters
}

/// A right-to-left line's text, given in visual (left-to-right) order, in
/// reading order: runs of left-to-right text (Latin words, numbers) keep
/// their order inside, everything else is reversed, with brackets
/// mirrored.
fn logical_order(visual: &str) -> String {
    let chars: Vec<char> = visual.chars().collect();
    let ltr = |c: char| c.is_alphanumeric() && !is_rtl(c);
    let mut out = String::with_capacity(visual.len());
    let mut i = chars.len();
    while i > 0 {
        if ltr(chars[i - 1]) {
            // The whole left-to-right run, as written; inner spaces and
            // punctuation between its words stay with it.
            let end = i;
            let mut start = i - 1;
            while start > 0
                && (ltr(chars[start - 1])
                    || (!is_rtl(chars[start - 1])
                        && !chars[start - 1].is_alphabetic()
                        && start >= 2
                        && ltr(chars[start - 2])))
            {
                start -= 1;
            }
            out.extend(&chars[start..end]);
            i = start;
        } else {
            let c = chars[i - 1];
            out.push(match c {
                '(' => ')',
                ')' => '(',
                '[' => ']',
                ']' => '[',
                '<' => '>',
                '>' => '<',
                c => c,
            });
            i -= 1;
        }
    }
    out
}

/// The most common value, sizes rounded to a tenth of a point.
fn mode(values: &[f32]) -> f32 {
    let mut counts: Vec<(i32, usize)> = Vec::new();
    for v in values {
        let key = (v * 10.0).round() as i32;
        match counts.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 += 1,
            None => counts.push((key, 1)),
        }
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map_or(0.0, |(k, _)| k as f32 / 10.0)
}

/// Orders lines for reading: top to bottom, and on a two-column page,
/// each run of column lines left column first.
fn reading_order(lines: Vec<Line>, width: f32) -> Vec<Line> {
    let Some((left_end, right_start)) = gutter(&lines, width) else {
        return lines;
    };
    let crosses = |l: &Line| {
        l.pieces
            .iter()
            .any(|p| p.x0 < right_start && p.x1 > left_end)
    };
    let mut out = Vec::with_capacity(lines.len());
    let mut left: Vec<Line> = Vec::new();
    let mut right: Vec<Line> = Vec::new();
    for line in lines {
        if crosses(&line) {
            out.append(&mut left);
            out.append(&mut right);
            out.push(line);
            continue;
        }
        let (l, r): (Vec<Piece>, Vec<Piece>) =
            line.pieces.into_iter().partition(|p| p.x1 <= left_end);
        left.extend(Line::of_pieces(l, line.baseline, line.size, line.bold));
        right.extend(Line::of_pieces(r, line.baseline, line.size, line.bold));
    }
    out.append(&mut left);
    out.append(&mut right);
    out
}

/// A vertical strip near the middle of the page (between 30% and 70% of
/// its width, at least [`MIN_GUTTER`] points wide) that most lines with text on both
/// halves leave empty, and that those lines fill on both sides: the gap
/// between two columns. `None` on single-column pages.
fn gutter(lines: &[Line], width: f32) -> Option<(f32, f32)> {
    if lines.len() < 6 || width <= 0.0 {
        return None;
    }
    // Occupancy of each point-wide strip across the middle of the page.
    let from = (0.3 * width) as usize;
    let to = (0.7 * width) as usize;
    let mut covered = vec![0usize; to.saturating_sub(from) + 1];
    for line in lines {
        for piece in &line.pieces {
            let a = (piece.x0.max(0.0) as usize).clamp(from, to);
            let b = (piece.x1.max(0.0).ceil() as usize).clamp(from, to);
            for c in &mut covered[a - from..b - from] {
                *c += 1;
            }
        }
    }
    // The widest run of strips that at most 5% of lines (and at least one,
    // a title over both columns) cross.
    let allowed = (lines.len() / 20).max(1);
    let mut best: Option<(usize, usize)> = None;
    let mut start = None;
    for (i, &c) in covered
        .iter()
        .enumerate()
        .chain([(covered.len(), &usize::MAX)])
    {
        if c <= allowed {
            start.get_or_insert(i);
        } else if let Some(s) = start.take()
            && best.is_none_or(|(bs, be)| i - s > be - bs)
        {
            best = Some((s, i));
        }
    }
    let (s, e) = best?;
    if e - s < MIN_GUTTER {
        return None;
    }
    let (left_end, right_start) = ((from + s) as f32, (from + e) as f32);
    // Both columns must hold text on many lines, and be alike: a narrow
    // column of labels beside a wide one of text (defined terms and their
    // definitions, a form's fields) is read row by row, not as columns.
    let widths = |side: &dyn Fn(&Piece) -> bool| {
        let mut w: Vec<f32> = lines
            .iter()
            .filter_map(|l| {
                let parts: Vec<&Piece> = l.pieces.iter().filter(|p| side(p)).collect();
                Some(parts.last()?.x1 - parts.first()?.x0)
            })
            .collect();
        w.sort_by(f32::total_cmp);
        (w.len(), w.get(w.len() / 2).copied().unwrap_or(0.0))
    };
    let (left, left_width) = widths(&|p| p.x1 <= left_end);
    let (right, right_width) = widths(&|p| p.x0 >= right_start);
    let dense = left * 3 >= lines.len() && right * 3 >= lines.len();
    let alike = left.min(right) * 2 >= left.max(right)
        && left_width.min(right_width) >= 0.6 * left_width.max(right_width);
    (dense && alike).then_some((left_end, right_start))
}

/// The body font size of a document: the size most glyphs are set in.
pub fn body_size(pages: &[PageLayout]) -> f32 {
    let mut weighted: Vec<f32> = Vec::new();
    for page in pages {
        for line in &page.lines {
            let n = line.text.chars().filter(|c| !c.is_whitespace()).count();
            weighted.extend(std::iter::repeat_n(line.size, n.min(10_000)));
        }
    }
    mode(&weighted)
}

/// Renders pages as plain text: a form feed between pages, a blank line
/// between blocks, headings underlined, indentation in spaces. Beside it,
/// where each rendered line stands on its page, in the same order.
/// `bookmarked` lines (page number, index on the page) print a bookmark's
/// title and are headings whatever their font.
pub fn render(
    pages: &[PageLayout],
    bookmarked: &HashMap<(u32, usize), Printed>,
) -> (String, Vec<PageLine>) {
    let body = body_size(pages);
    // Heading sizes, largest first: the largest is a level-1 title.
    let mut heading_sizes: Vec<i32> = pages
        .iter()
        .flat_map(|p| &p.lines)
        .filter(|l| body > 0.0 && l.size >= HEADING_SIZE * body)
        .map(|l| (l.size * 10.0).round() as i32)
        .collect();
    heading_sizes.sort_unstable_by(|a, b| b.cmp(a));
    heading_sizes.dedup();
    let mut out = String::new();
    let mut geometry = Vec::new();
    for (n, page) in pages.iter().enumerate() {
        if n > 0 {
            out.push('\x0c');
        }
        let bookmarked = |i: usize| bookmarked.get(&(page.number, i)).copied();
        render_page(
            page,
            body,
            heading_sizes.first().copied(),
            &bookmarked,
            &mut out,
        );
        geometry.extend(
            page.lines
                .iter()
                .filter(|l| !l.text.is_empty())
                .map(|l| page_line(page.number, l)),
        );
    }
    (out, geometry)
}

/// A line's place on its page. Glyph boxes are not in the layout, only
/// baselines and sizes: the box runs from a descender's depth below the
/// baseline to a capital's height above it, in proportion to the size.
fn page_line(page: u32, line: &Line) -> PageLine {
    PageLine {
        page,
        bbox: [
            line.x0,
            line.baseline - 0.25 * line.size,
            line.x1,
            line.baseline + 0.8 * line.size,
        ],
        text: line.text.clone(),
        xs: line.xs.clone(),
    }
}

fn render_page(
    page: &PageLayout,
    body: f32,
    largest: Option<i32>,
    bookmarked: &dyn Fn(usize) -> Option<Printed>,
    out: &mut String,
) {
    let pitch = usual_pitch(&page.lines);
    let left = page
        .lines
        .iter()
        .map(|l| l.x0)
        .fold(f32::INFINITY, f32::min);
    let mut previous: Option<&Line> = None;
    let mut after_heading = false;
    // A heading's underline waits for a possible second line of its title.
    let mut underline: Option<(char, usize)> = None;
    let mut tables = super::table::find(&page.lines, &page.rules)
        .into_iter()
        .peekable();
    let mut table_end = 0;
    for (i, line) in page.lines.iter().enumerate() {
        if line.text.is_empty() || i < table_end {
            continue;
        }
        if let Some(table) = tables.next_if(|t| t.start == i) {
            // A block of its own, as a pipe table.
            flush_underline(&mut underline, out);
            if previous.is_some() {
                out.push('\n');
            }
            table.render(out);
            table_end = table.end;
            previous = page.lines.get(table.end - 1);
            // What follows starts a block, as after a heading.
            after_heading = true;
            continue;
        }
        let wrapped_title = || {
            previous.is_some_and(|p| title_continues(p, line, body, largest))
                && bookmarked(i) != Some(Printed::Title)
        };
        if (bookmarked(i) == Some(Printed::Rest) || wrapped_title())
            && let Some((_, width)) = &mut underline
        {
            // The second line of a title (bookmarked, or set in the same
            // heading font right under the first), joined to the first.
            out.pop();
            out.push(' ');
            out.push_str(&line.text);
            out.push('\n');
            *width += 1 + line.text.chars().count();
            previous = Some(line);
            continue;
        }
        flush_underline(&mut underline, out);
        let heading = match bookmarked(i) {
            Some(Printed::Title) => heading_mark(line, body, largest).or(Some('-')),
            _ => heading_mark(line, body, largest),
        };
        let new_block = match previous {
            None => true,
            Some(p) => {
                let gap = p.baseline - line.baseline;
                heading.is_some()
                    || after_heading
                    || gap < 0.0
                    || gap > BLOCK_GAP * pitch
                    || (p.size - line.size).abs() > 0.15 * body.max(1.0)
            }
        };
        if new_block && previous.is_some() {
            out.push('\n');
        }
        let indent = if body > 0.0 {
            (((line.x0 - left) / (0.5 * body)).round().max(0.0) as usize).min(40)
        } else {
            0
        };
        out.extend(std::iter::repeat_n(' ', indent));
        out.push_str(&line.text);
        out.push('\n');
        underline = heading.map(|mark| (mark, line.text.chars().count()));
        after_heading = heading.is_some();
        previous = Some(line);
    }
    flush_underline(&mut underline, out);
}

/// Writes a heading's underline, `width` characters long (within bounds).
fn flush_underline(underline: &mut Option<(char, usize)>, out: &mut String) {
    if let Some((mark, width)) = underline.take() {
        out.extend(std::iter::repeat_n(mark, width.clamp(3, 80)));
        out.push('\n');
    }
}

/// Whether `line` carries on the heading `previous` began: the same
/// heading font, the next line down, and not a heading of its own (a new
/// number) nor after one that ended like a sentence.
fn title_continues(previous: &Line, line: &Line, body: f32, largest: Option<i32>) -> bool {
    let same_font = (previous.size - line.size).abs() < 0.1 && previous.bold == line.bold;
    let gap = previous.baseline - line.baseline;
    let next_line = gap > 0.0 && gap <= 1.5 * line.size;
    let first = line.text.split_whitespace().next().unwrap_or("");
    let numbered = first.starts_with(|c: char| c.is_ascii_digit())
        || matches!(
            first.to_lowercase().as_str(),
            "chapter" | "section" | "part" | "article" | "appendix" | "annex" | "schedule"
        );
    let ended = previous
        .text
        .trim_end()
        .ends_with(['.', ':', ';', '?', '!']);
    same_font && next_line && !numbered && !ended && heading_mark(line, body, largest).is_some()
}

/// The underline that marks a line as a heading, if it is one.
fn heading_mark(line: &Line, body: f32, largest: Option<i32>) -> Option<char> {
    let words = line.text.split_whitespace().count();
    let has_letters = line.text.chars().any(char::is_alphabetic);
    if !has_letters || words > 2 * BOLD_HEADING_WORDS {
        return None;
    }
    if body > 0.0 && line.size >= HEADING_SIZE * body {
        let size = (line.size * 10.0).round() as i32;
        return Some(if Some(size) == largest { '=' } else { '-' });
    }
    let ends_sentence = line.text.trim_end().ends_with(['.', ',', ';', ':']);
    (line.bold && words <= BOLD_HEADING_WORDS && !ends_sentence).then_some('-')
}

/// The most common distance between consecutive baselines on a page.
fn usual_pitch(lines: &[Line]) -> f32 {
    let gaps: Vec<f32> = lines
        .windows(2)
        .map(|w| w[0].baseline - w[1].baseline)
        .filter(|&g| g > 0.0)
        .collect();
    let pitch = mode(&gaps);
    if pitch > 0.0 {
        pitch
    } else {
        lines.first().map_or(12.0, |l| 1.2 * l.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyphs(text: &str, x: f32, baseline: f32, size: f32, bold: bool) -> Vec<Glyph> {
        let w = 0.5 * size;
        text.chars()
            .enumerate()
            .map(|(i, ch)| Glyph {
                ch,
                x0: x + i as f32 * w,
                x1: x + (i as f32 + 1.0) * w,
                baseline,
                size,
                bold,
            })
            .collect()
    }

    fn page(parts: Vec<Vec<Glyph>>) -> PageGlyphs {
        PageGlyphs {
            number: 1,
            width: 612.0,
            glyphs: parts.into_iter().flatten().collect(),
            ..PageGlyphs::default()
        }
    }

    #[test]
    fn lines_read_top_down_with_spaces_and_without_overprint() {
        let mut bold = glyphs("Terms", 72.0, 700.0, 10.0, true);
        // Overprinted for a heavier look: every glyph twice.
        bold.extend(glyphs("Terms", 72.3, 700.0, 10.0, true));
        let p = page(vec![
            glyphs("second line", 72.0, 686.0, 10.0, false),
            bold,
            glyphs("and", 72.0, 672.0, 10.0, false),
            glyphs("more", 95.0, 672.0, 10.0, false),
        ]);
        let layout = lay_out(&p);
        let texts: Vec<&str> = layout.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["Terms", "second line", "and more"]);
        assert!(layout.lines[0].bold && !layout.lines[1].bold);
    }

    #[test]
    fn two_columns_are_read_one_after_the_other() {
        let mut parts = vec![glyphs(
            "A TITLE ACROSS BOTH COLUMNS OF THE PAGE, LONG",
            150.0,
            740.0,
            10.0,
            false,
        )];
        for i in 0..8 {
            let y = 700.0 - 14.0 * i as f32;
            parts.push(glyphs(&format!("left {i}"), 72.0, y, 10.0, false));
            parts.push(glyphs(&format!("right {i}"), 330.0, y, 10.0, false));
        }
        let layout = lay_out(&page(parts));
        let texts: Vec<&str> = layout.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts[0], "A TITLE ACROSS BOTH COLUMNS OF THE PAGE, LONG");
        assert_eq!(&texts[1..3], ["left 0", "left 1"]);
        assert_eq!(texts[9], "right 0");
        assert_eq!(texts.len(), 17);
    }

    #[test]
    fn large_and_bold_lines_become_underlined_headings() {
        let mut parts = vec![
            glyphs("Annual Report", 72.0, 740.0, 20.0, false),
            glyphs("Governing Law", 72.0, 700.0, 10.0, true),
        ];
        for i in 0..5 {
            parts.push(glyphs(
                "This Agreement is governed by the laws of New York.",
                72.0,
                686.0 - 12.0 * i as f32,
                10.0,
                false,
            ));
        }
        parts.push(glyphs("Payment is due.", 72.0, 600.0, 10.0, true));
        let (text, _) = render(&[lay_out(&page(parts))], &HashMap::new());
        assert!(text.starts_with("Annual Report\n=============\n"), "{text}");
        assert!(text.contains("\nGoverning Law\n-------------\n"), "{text}");
        // A bold sentence is not a title.
        assert!(!text.contains("Payment is due.\n---"), "{text}");
    }

    #[test]
    fn a_title_set_on_two_lines_is_one_heading() {
        let mut parts = vec![
            glyphs("Row and Column Access Control", 72.0, 740.0, 20.0, false),
            glyphs("Support in IBM DB2 for i", 72.0, 718.0, 20.0, false),
            glyphs("1.1 Scope", 72.0, 690.0, 14.0, true),
            glyphs("1.2 Terms", 72.0, 674.0, 14.0, true),
        ];
        for i in 0..5 {
            parts.push(glyphs(
                "This Agreement is governed by the laws of New York.",
                72.0,
                650.0 - 12.0 * i as f32,
                10.0,
                false,
            ));
        }
        let (text, _) = render(&[lay_out(&page(parts))], &HashMap::new());
        assert!(
            text.starts_with("Row and Column Access Control Support in IBM DB2 for i\n====="),
            "{text}"
        );
        // A new number starts a heading of its own.
        assert!(text.contains("1.1 Scope\n---------\n"), "{text}");
        assert!(text.contains("1.2 Terms\n---------\n"), "{text}");
    }

    #[test]
    fn right_to_left_text_is_read_from_the_right() {
        // "שלום עולם" set on the page: visually the last word comes first.
        let visual: String = "םלוע םולש".to_string();
        let p = page(vec![glyphs(&visual, 72.0, 700.0, 10.0, false)]);
        assert_eq!(lay_out(&p).lines[0].text, "שלום עולם");
        // A Latin word and a number inside keep their own order.
        assert_eq!(logical_order("Python 3 ב שמתשה"), "השתמש ב Python 3");
        assert_eq!(logical_order("(1) אב"), "בא (1)");
    }

    #[test]
    fn a_wide_gap_is_written_as_a_column_gap() {
        let p = page(vec![
            glyphs("Fee", 72.0, 700.0, 10.0, false),
            glyphs("$5,000", 300.0, 700.0, 10.0, false),
        ]);
        assert_eq!(lay_out(&p).lines[0].text, "Fee   $5,000");
    }
}
