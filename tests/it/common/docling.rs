//! Structural fidelity against Docling's ground-truth Markdown: headings
//! found (and their levels), tables found with their shape, and coverage of
//! the ground truth's paragraphs in our canonical text.

use std::path::{Path, PathBuf};

use trellis::parse::{BlockKind, DocumentTree};

/// What a ground-truth Markdown file states.
#[derive(Debug, Default)]
pub struct GroundTruth {
    pub headings: Vec<(u8, String)>,
    /// (rows with content, columns) of each table.
    pub tables: Vec<(usize, usize)>,
    pub paragraphs: Vec<String>,
}

/// Reads Docling's Markdown export: `#` headings, pipe tables, and every
/// other block of text (list items one by one) as a paragraph.
pub fn read_ground_truth(markdown: &str) -> GroundTruth {
    let mut truth = GroundTruth::default();
    let mut table: Vec<Vec<String>> = Vec::new();
    let flush_table = |table: &mut Vec<Vec<String>>, truth: &mut GroundTruth| {
        if !table.is_empty() {
            let columns = table.iter().map(Vec::len).max().unwrap_or(0);
            let rows = table
                .iter()
                .filter(|r| r.iter().any(|c| !c.trim().is_empty()))
                .count();
            truth.tables.push((rows, columns));
            table.clear();
        }
    };
    let mut paragraph = String::new();
    let flush_paragraph = |paragraph: &mut String, truth: &mut GroundTruth| {
        let text = strip_inline_markdown(paragraph.trim());
        if !text.trim().is_empty() {
            truth.paragraphs.push(text);
        }
        paragraph.clear();
    };
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('|') {
            flush_paragraph(&mut paragraph, &mut truth);
            // An image placeholder is not text: a row of images only is
            // an empty row, which every parser drops.
            let cells: Vec<String> = split_pipe_row(trimmed)
                .into_iter()
                .map(|c| c.replace("<!-- image -->", "").trim().to_string())
                .collect();
            let separator = cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
            if !separator {
                table.push(cells);
            }
            continue;
        }
        flush_table(&mut table, &mut truth);
        if trimmed.is_empty() || trimmed.starts_with("<!--") {
            flush_paragraph(&mut paragraph, &mut truth);
            continue;
        }
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            flush_paragraph(&mut paragraph, &mut truth);
            let text = strip_inline_markdown(trimmed[hashes..].trim());
            if !text.is_empty() {
                truth.headings.push((hashes as u8, text));
            }
            continue;
        }
        if let Some(item) = strip_list_marker(trimmed) {
            flush_paragraph(&mut paragraph, &mut truth);
            paragraph.push_str(item);
            flush_paragraph(&mut paragraph, &mut truth);
            continue;
        }
        if !paragraph.is_empty() {
            paragraph.push(' ');
        }
        paragraph.push_str(trimmed);
    }
    flush_table(&mut table, &mut truth);
    flush_paragraph(&mut paragraph, &mut truth);
    truth
}

fn split_pipe_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_string()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_string());
    cells
}

fn strip_list_marker(line: &str) -> Option<&str> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(bullet) {
            // A task-list checkbox is part of the marker, not of the text.
            let rest = ["[ ] ", "[x] ", "[X] "]
                .iter()
                .find_map(|b| rest.strip_prefix(b))
                .unwrap_or(rest);
            return Some(rest);
        }
    }
    let digits = line.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(rest);
        }
    }
    None
}

/// Links become their text, images disappear, emphasis and escapes go.
/// Docling escapes `&`, `<` and `>` in the text it writes (`&amp;`), so
/// those entities are decoded; brackets separate words ("[13][14]" is two
/// citations, not "1314"); underscores inside code spans are kept.
fn strip_inline_markdown(text: &str) -> String {
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut in_code = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '!' && chars.get(i + 1) == Some(&'[') {
            i += 1;
            continue;
        }
        if c == ']' && chars.get(i + 1) == Some(&'(') {
            // Skip the "(url)" part of a link.
            let mut depth = 0;
            let mut j = i + 1;
            while j < chars.len() {
                match chars[j] {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        if c == '\\' && i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() {
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '`' {
            in_code = !in_code;
            i += 1;
            continue;
        }
        if matches!(c, '[' | ']') {
            out.push(' ');
            i += 1;
            continue;
        }
        // An underscore inside a word (`export_to_markdown`) is text, not
        // emphasis (CommonMark).
        let intraword = c == '_'
            && i > 0
            && chars[i - 1].is_alphanumeric()
            && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if matches!(c, '*' | '_') && !in_code && !intraword {
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Lower-case letters and digits only, words separated by one space: what
/// two renderings of the same text have in common.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.extend(c.to_lowercase());
        } else {
            space = true;
        }
    }
    out
}

/// How one parsed file compares with its ground truth.
#[derive(Debug, Default, Clone)]
pub struct Fidelity {
    pub file: String,
    pub headings_expected: usize,
    pub headings_found: usize,
    pub heading_levels_agree: usize,
    pub tables_expected: usize,
    pub tables_found: usize,
    pub tables_shape_match: usize,
    pub paragraphs_expected: usize,
    pub paragraphs_covered: usize,
    /// Pairs of consecutive found ground-truth paragraphs, and those of
    /// them that come in the same order in our text (reading order).
    pub order_pairs: usize,
    pub order_pairs_agree: usize,
    pub error: Option<String>,
}

impl Fidelity {
    pub fn add(&mut self, other: &Fidelity) {
        self.headings_expected += other.headings_expected;
        self.headings_found += other.headings_found;
        self.heading_levels_agree += other.heading_levels_agree;
        self.tables_expected += other.tables_expected;
        self.tables_found += other.tables_found;
        self.tables_shape_match += other.tables_shape_match;
        self.paragraphs_expected += other.paragraphs_expected;
        self.paragraphs_covered += other.paragraphs_covered;
        self.order_pairs += other.order_pairs;
        self.order_pairs_agree += other.order_pairs_agree;
    }

    pub fn heading_recall(&self) -> f64 {
        ratio(self.headings_found, self.headings_expected)
    }

    pub fn table_shape_recall(&self) -> f64 {
        ratio(self.tables_shape_match, self.tables_expected)
    }

    pub fn coverage(&self) -> f64 {
        ratio(self.paragraphs_covered, self.paragraphs_expected)
    }

    pub fn reading_order(&self) -> f64 {
        ratio(self.order_pairs_agree, self.order_pairs)
    }

    pub fn row(&self) -> String {
        format!(
            "{:<48} headings {:>3}/{:<3} (levels {:>3}) tables {:>2}/{:<2} shape {:>2} paragraphs {:>4}/{:<4} order {:>4}/{:<4}{}",
            self.file,
            self.headings_found,
            self.headings_expected,
            self.heading_levels_agree,
            self.tables_found,
            self.tables_expected,
            self.tables_shape_match,
            self.paragraphs_covered,
            self.paragraphs_expected,
            self.order_pairs_agree,
            self.order_pairs,
            self.error
                .as_deref()
                .map(|e| format!("  ERROR {e}"))
                .unwrap_or_default()
        )
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// Compares a parsed tree with a ground truth.
pub fn compare(file: &str, tree: &DocumentTree, truth: &GroundTruth) -> Fidelity {
    let mut result = Fidelity {
        file: file.to_string(),
        headings_expected: truth.headings.len(),
        tables_expected: truth.tables.len(),
        paragraphs_expected: truth.paragraphs.len(),
        ..Fidelity::default()
    };
    let mut ours: Vec<(u8, String)> = tree
        .sections
        .iter()
        .skip(1)
        .map(|s| (s.level, normalize(&s.heading())))
        .collect();
    if let Some(title) = &tree.title {
        // A document title rendered by Docling as a heading.
        ours.push((1, normalize(title)));
    }
    for (level, heading) in &truth.headings {
        let key = normalize(heading);
        if let Some(pos) = ours.iter().position(|(_, h)| *h == key) {
            result.headings_found += 1;
            if ours[pos].0 == *level {
                result.heading_levels_agree += 1;
            }
            ours.remove(pos);
        }
    }
    let mut our_tables: Vec<(usize, usize)> = tree
        .blocks()
        .filter_map(|(_, b)| match &b.kind {
            BlockKind::Table(t) => Some((t.rows.len(), t.columns())),
            _ => None,
        })
        .collect();
    result.tables_found = our_tables.len();
    for shape in &truth.tables {
        if let Some(pos) = our_tables.iter().position(|s| s == shape) {
            result.tables_shape_match += 1;
            our_tables.remove(pos);
        }
    }
    let haystack = normalize(&tree.text);
    // Where each found paragraph starts in our text, in ground-truth order.
    let mut positions: Vec<usize> = Vec::new();
    for paragraph in &truth.paragraphs {
        let key = normalize(paragraph);
        if key.is_empty() {
            result.paragraphs_covered += 1;
        } else if let Some(at) = haystack.find(&key) {
            result.paragraphs_covered += 1;
            // Short paragraphs ("Yes", "1") are found anywhere; only
            // distinctive ones say something about order.
            if key.len() >= 20 {
                positions.push(at);
            }
        }
    }
    result.order_pairs = positions.len().saturating_sub(1);
    result.order_pairs_agree = positions.windows(2).filter(|w| w[0] < w[1]).count();
    result
}

/// Source files of one Docling format folder that have a Markdown ground
/// truth, with that ground truth's path.
pub fn cases(format_dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut cases = Vec::new();
    let Ok(entries) = std::fs::read_dir(format_dir.join("sources")) else {
        return cases;
    };
    let mut sources: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    sources.sort();
    for source in sources {
        let Some(name) = source.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // `report.docx.md` for most formats, `report.md` for PDFs.
        let stem = source.file_stem().and_then(|s| s.to_str()).unwrap_or(name);
        let truth = [name, stem]
            .iter()
            .map(|n| format_dir.join("groundtruth").join(format!("{n}.md")))
            .find(|t| t.is_file());
        if let Some(truth) = truth {
            cases.push((source, truth));
        }
    }
    cases
}
