//! Clause ids of paragraphs, and which sections are annexes.
//!
//! Contracts number their clauses as paragraphs ("5.1 The Company shall
//! …", "(a) any fees …") far more often than as headings, so a paragraph's
//! clause id comes from, in order:
//!
//! 1. its own leading label: an outline number ("5.1"), a provision label
//!    ("Section 5.1" → "5.1", "ARTICLE V" → "ARTICLE V"), or a sub-clause
//!    marker combined with the enclosing outline number ("(a)" after
//!    "5.1" → "5.1(a)"; "(ii)" after "(a)" → "5.1(a)(ii)");
//! 2. the previous paragraph's clause, when this paragraph plainly
//!    continues it: the previous one ends without closing punctuation and
//!    this one starts in lower case (a page break in the middle of a
//!    clause);
//! 3. the enclosing section's numbering ("ARTICLE V", "5.1").
//!
//! The enclosing outline number is the latest one in the same section (or
//! the section's own numbering); markers do not combine across sections.

use super::labels::{Label, ReferenceKind, numbering_label};
use super::numbering::{is_outline_number, roman_value};
use crate::skeleton::{ParagraphKind, Skeleton};

/// The clause facts of one paragraph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParagraphClause {
    /// The paragraph's clause id, if it has one.
    pub clause: Option<String>,
    /// Whether the id comes from the paragraph's own leading label (so
    /// that a reference to that id may target this paragraph).
    pub numbered: bool,
    /// The paragraph's own sub-clause marker ("(b)"), for references
    /// such as "paragraph (b)" inside the same section.
    pub marker: Option<String>,
}

/// Clause facts of every paragraph, by paragraph id.
pub fn paragraph_clauses(skeleton: &Skeleton) -> Vec<ParagraphClause> {
    let mut out = vec![ParagraphClause::default(); skeleton.paragraphs.len()];
    for section in &skeleton.sections {
        let section_label = section.numbering.as_deref().map(numbering_label);
        let section_clause = section_label.as_ref().map(Label::clause_id);
        let mut outline = Outline::default();
        if let Some(label) = &section_label {
            outline.number = outline_number(label);
        }
        // The previous paragraph's clause, and whether it ended open.
        let mut previous: Option<(Option<String>, bool)> = None;
        for p in section.paragraphs.start..section.paragraphs.end {
            let (Some(paragraph), Some(slot)) =
                (skeleton.paragraphs.get(p as usize), out.get_mut(p as usize))
            else {
                continue;
            };
            let sentence = |index: Option<u32>| {
                index
                    .and_then(|i| skeleton.sentences.get(i as usize))
                    .map_or("", |s| s.text.as_str())
            };
            let first = sentence(Some(paragraph.sentences.start));
            let last = sentence(paragraph.sentences.end.checked_sub(1));
            let prose = matches!(
                paragraph.kind,
                ParagraphKind::Text | ParagraphKind::ListItem
            );
            let label = Label::leading(first).filter(|l| {
                prose
                    && (l.is_marker
                        || l.kind.is_none()
                        || (l.kind.is_some_and(ReferenceKind::is_structural) && l.is_title()))
            });
            *slot = match label {
                Some(label) if label.is_marker => outline.marked(&label),
                Some(label) => outline.numbered(&label),
                None => {
                    let continues = previous.as_ref().is_some_and(|(_, open)| *open)
                        && first.starts_with(char::is_lowercase);
                    let clause = match &previous {
                        Some((clause, _)) if continues => clause.clone(),
                        _ => section_clause.clone(),
                    };
                    ParagraphClause {
                        clause,
                        numbered: false,
                        marker: None,
                    }
                }
            };
            let open = prose
                && !last
                    .trim_end()
                    .ends_with(['.', '!', '?', ':', ';', '"', '”']);
            previous = Some((slot.clause.clone(), open));
        }
    }
    out
}

/// Where the numbering stands while walking one section's paragraphs.
#[derive(Debug, Default)]
struct Outline {
    /// The latest outline number ("5.1"), which markers combine with.
    number: Option<String>,
    /// The latest letter-level marker ("(a)"), which Roman markers nest
    /// under.
    letter: Option<String>,
}

impl Outline {
    /// A paragraph opening with a number or a provision label.
    fn numbered(&mut self, label: &Label) -> ParagraphClause {
        self.number = outline_number(label);
        self.letter = None;
        ParagraphClause {
            clause: Some(label.clause_id()),
            numbered: true,
            marker: None,
        }
    }

    /// A paragraph opening with a sub-clause marker. "(i)" is a Roman
    /// numeral nested under the current letter unless it follows "(h)"
    /// (then it is the next letter); longer Roman markers ("(ii)", "(iv)")
    /// always nest when a letter is open.
    fn marked(&mut self, label: &Label) -> ParagraphClause {
        let marker = label.key();
        let inner = marker.trim_start_matches('(').trim_end_matches(')');
        let nested = roman_value(inner).is_some()
            && inner.bytes().all(|b| b.is_ascii_lowercase())
            && self
                .letter
                .as_deref()
                .is_some_and(|l| inner.len() > 1 || l != "(h)");
        let number = self.number.as_deref().unwrap_or_default();
        let clause = if nested {
            let letter = self.letter.as_deref().unwrap_or_default();
            format!("{number}{letter}{marker}")
        } else {
            self.letter = Some(marker.clone());
            format!("{number}{marker}")
        };
        ParagraphClause {
            clause: Some(clause),
            numbered: true,
            marker: Some(marker),
        }
    }
}

/// The outline number a label sets for the markers that follow it: "5.1"
/// and "Section 5.1" do; "ARTICLE V" and "Exhibit A" do not ("(a)" under
/// them stays "(a)").
fn outline_number(label: &Label) -> Option<String> {
    let keyword_free = label.kind.is_none_or(|k| !k.keeps_keyword_in_clause_id());
    (keyword_free && !label.is_marker && is_outline_number(label.designator))
        .then(|| label.clause_id())
}

/// Whether each section is an annex: its heading (or an ancestor's) opens
/// with an annex keyword ("EXHIBIT A", "Schedule 2 — Fees", "Appendix B:
/// Glossary", "ATTACHMENT", "Addendum No. 1").
///
/// An annex follows the body it is annexed to, so a heading before any
/// paragraph of the document is not one: a filed contract that opens with
/// "EXHIBIT 10.2" is the exhibit of a filing, and all of it is body.
pub fn annex_sections(skeleton: &Skeleton) -> Vec<bool> {
    let mut annex = vec![false; skeleton.sections.len()];
    for (idx, section) in skeleton.sections.iter().enumerate() {
        let inherited = section
            .parent
            .and_then(|p| annex.get(p.index()).copied())
            .unwrap_or(false);
        let own = section.paragraphs.start > 0 && heading_is_annex(&section.heading);
        if let Some(slot) = annex.get_mut(idx) {
            *slot = inherited || own;
        }
    }
    annex
}

/// Whether a heading opens with an annex keyword followed by a designator,
/// punctuation or nothing ("Exhibits to the Report" does not count: it
/// talks about annexes).
fn heading_is_annex(heading: &str) -> bool {
    if let Some(label) = Label::leading(heading) {
        return label.kind.is_some_and(ReferenceKind::is_annex);
    }
    let heading = heading.trim();
    let (first, rest) = heading
        .split_once(char::is_whitespace)
        .unwrap_or((heading, ""));
    let keyword = first.trim_end_matches([':', '.', '-', '–', '—']);
    let single = ReferenceKind::from_keyword(keyword)
        .is_some_and(|(kind, plural)| kind.is_annex() && !plural);
    let rest = rest.trim_start();
    single
        && (rest.is_empty()
            || first.len() > keyword.len()
            || rest.starts_with(['-', '–', '—', ':', '('])
            || rest.to_ascii_lowercase().starts_with("no."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Format, TreeBuilder};

    /// The clause id of every paragraph of a one-section document, one
    /// sentence per paragraph.
    fn clause_ids(heading: &str, paragraphs: &[&str]) -> Vec<Option<String>> {
        let mut b = TreeBuilder::new(Format::Markdown);
        b.heading(1, heading);
        for p in paragraphs {
            b.paragraph(p);
        }
        let skeleton = Skeleton::from_builder("t.md", b);
        paragraph_clauses(&skeleton)
            .into_iter()
            .map(|c| c.clause)
            .collect()
    }

    #[test]
    fn markers_combine_with_the_outline_number() {
        let ids = clause_ids(
            "5 Payment",
            &[
                "Fees are due monthly",
                "5.1 The Company shall pay",
                "(a) invoices first",
                "(i) in writing",
                "(ii) by email",
                "(b) then reminders",
                "5.2 Late fees apply",
                "(h) eighth item",
                "(i) ninth item, a letter",
            ],
        );
        let expected = [
            "5",
            "5.1",
            "5.1(a)",
            "5.1(a)(i)",
            "5.1(a)(ii)",
            "5.1(b)",
            "5.2",
            "5.2(h)",
            "5.2(i)",
        ];
        let ids: Vec<&str> = ids.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn continuations_and_keyword_sections() {
        let ids = clause_ids(
            "ARTICLE V TERM",
            &[
                "1.4 HDI shall provide access to, and",
                "the right to use, a computer system.",
                "Unrelated closing remarks.",
                "(a) a marker under an article",
            ],
        );
        let ids: Vec<&str> = ids.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
        assert_eq!(ids, ["1.4", "1.4", "ARTICLE V", "1.4(a)"]);
        let ids = clause_ids("ARTICLE V TERM", &["(a) a marker under an article"]);
        assert_eq!(ids, [Some("(a)".to_string())]);
    }

    #[test]
    fn annex_headings() {
        assert!(heading_is_annex("EXHIBIT A"));
        assert!(heading_is_annex("Schedule 2 — Fees"));
        assert!(heading_is_annex("Appendix B: Glossary"));
        assert!(heading_is_annex("ATTACHMENT"));
        assert!(heading_is_annex("Annex: Pricing"));
        assert!(heading_is_annex("Addendum No. 1"));
        assert!(!heading_is_annex("Exhibits to the Report"));
        assert!(!heading_is_annex("Schedule of deliveries"));
        assert!(!heading_is_annex("5.1 Payment"));
        assert!(!heading_is_annex("Section 5.1 Payment"));
    }
}
