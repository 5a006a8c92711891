//! Clauses that open with their own title, run into their text.
//!
//! Contracts filed as plain text rarely give a clause's title a line of
//! its own: "11. Customer References. Customer agrees …" is one paragraph,
//! and "… are as follows: 1. License - Individual grants … 2. Marketing
//! Materials - Marketing Materials shall mean …" runs several clauses into
//! one. The clause still starts a section a reader would cite ("11.
//! Customer References"), so the text parser opens one there (a run-in
//! heading, [`crate::parse::TreeBuilder::run_in_heading`]) and splits a
//! paragraph where a later clause starts inside it.
//!
//! A run-in heading is an outline number ("11.", "10.1"), a title in title
//! case of at most [`MAX_TITLE_WORDS`] words, and a separator — ". " or a
//! dash between spaces — before the clause's text. Inside a paragraph a
//! clause starts only after a sentence or a list's introduction (". ",
//! ": ", "; ") and only when its number continues the document's clause
//! numbers ([`ClauseNumbers::continues`]), so that "… under Section 4. 5.
//! Ownership" opens a clause when clause 4 came before and "in 2. Annual
//! Fees. The" does not without one.

use std::ops::ControlFlow;
use std::sync::LazyLock;

use super::heading::{decimal_depth, is_title, is_title_case};

/// Most words in a run-in title ("Mutual Representations, Warranties and
/// Covenants" has five).
const MAX_TITLE_WORDS: usize = 10;

/// Separators between a run-in title and its clause's text.
const SEPARATORS: &[&str] = &[". ", " - ", " – ", " — ", " -- "];

/// An outline number opening a clause, and its run-in title if it has
/// one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Opening<'a> {
    /// The outline number's parts ("10.1" → [10, 1]).
    pub number: Vec<u32>,
    /// Number and title as written ("11. Customer References").
    pub heading: Option<&'a str>,
    /// Whether the title is in title case ("Customer References"), rather
    /// than a short one in sentence case ("Limitation of liability").
    pub title_case: bool,
}

impl Opening<'_> {
    /// Outline depth: 1 for "11.", 2 for "10.1".
    pub fn depth(&self) -> u8 {
        u8::try_from(self.number.len()).unwrap_or(u8::MAX)
    }
}

/// The outline number `text` opens with, and the title run in after it.
pub(super) fn leading(text: &str) -> Option<Opening<'_>> {
    let token_end = text.find(char::is_whitespace)?;
    let number = outline_number(&text[..token_end])?;
    let rest = &text[token_end..];
    let title_start = token_end + (rest.len() - rest.trim_start().len());
    let mut opening = Opening {
        number,
        heading: None,
        title_case: false,
    };
    // The nearest separator after the title's first word.
    let Some(title_len) = SEPARATORS
        .iter()
        .filter_map(|separator| text.get(title_start..)?.find(separator))
        .min()
    else {
        return Some(opening);
    };
    let title = &text[title_start..title_start + title_len];
    let body = text[title_start + title_len..]
        .trim_start_matches(['.', ' ', '-', '–', '—'])
        .chars()
        .next();
    let words = title.split_whitespace().count();
    let titled = (1..=MAX_TITLE_WORDS).contains(&words)
        && !title.ends_with([',', ';', ':'])
        // A number inside is a second clause's: "14. [Omitted.] 15. Fees".
        && !title.split_whitespace().any(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        && body.is_some_and(|c| c.is_alphanumeric() || matches!(c, '"' | '“' | '('));
    if titled && (is_title_case(title) || is_title(title)) {
        opening.heading = Some(&text[..title_start + title_len]);
        opening.title_case = is_title_case(title);
    }
    Some(opening)
}

/// Where clauses open in a paragraph: at its start, and inside it where
/// the document's clause numbers continue; each with its depth and run-in
/// heading, when it has one. Reads the paragraph's numbers into `clauses`.
pub(super) fn clause_starts<'a>(
    text: &'a str,
    clauses: &mut ClauseNumbers,
) -> Vec<(usize, u8, &'a str)> {
    let mut starts = Vec::new();
    if let Some(opening) = leading(text)
        && let Some(heading) = clauses.read(&opening, false)
    {
        starts.push((0, opening.depth(), heading));
    }
    let mut from = 0;
    loop {
        // Before the first clause number only "1." continues the numbers
        // (`ClauseNumbers::continues`), and a search for " 1." finds its
        // few candidates, where the search for breaks stops at every
        // sentence's end. Once a number is read, every break is visited.
        let numbered = clauses.is_numbered();
        let mut restart = None;
        let mut read = |(at, opening): (usize, Opening<'a>)| {
            if let Some(heading) = clauses.read(&opening, true) {
                starts.push((at, opening.depth(), heading));
            }
            if !numbered && clauses.is_numbered() {
                restart = Some(at + 1);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        };
        let _ = if numbered {
            inner_openings(text, from).try_for_each(&mut read)
        } else {
            first_inner_openings(text, from).try_for_each(&mut read)
        };
        // A later opening's break comes after an earlier opening's start:
        // only closing marks and a space stand between a break and its
        // clause.
        match restart {
            Some(at) => from = at,
            None => return starts,
        }
    }
}

/// Clauses opening inside `text` after a sentence or an introduction
/// (". ", ": ", "; "), at breaks from `from` on, with their byte offsets
/// (never 0). Whether each continues the clause numbers is the caller's
/// question.
fn inner_openings(text: &str, from: usize) -> impl Iterator<Item = (usize, Opening<'_>)> {
    // From each break, rarer than the spaces or digits around it: past
    // closing quotes and brackets to a space and a digit.
    let haystack = text.as_bytes().get(from..).unwrap_or_default();
    memchr::memchr3_iter(b'.', b':', b';', haystack).filter_map(move |offset| {
        let at = from + offset;
        let after = &text[at + 1..];
        let rest = after.trim_start_matches(['"', '”', ')', ']']);
        let digits = rest.strip_prefix(' ')?;
        if !digits.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let start = text.len() - digits.len();
        leading(digits).map(|opening| (start, opening))
    })
}

/// The [`inner_openings`] from `from` on that a search for " 1." finds:
/// among them every one numbered "1.", the only number that continues
/// none (the others may be "1.5" and the like).
fn first_inner_openings(text: &str, from: usize) -> impl Iterator<Item = (usize, Opening<'_>)> {
    // Built once: a searcher costs more to build than most paragraphs
    // cost to search.
    static FIRST: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b" 1."));
    let bytes = text.as_bytes();
    let haystack = bytes.get(from..).unwrap_or_default();
    FIRST.find_iter(haystack).filter_map(move |offset| {
        let start = from + offset + 1;
        follows_break(&bytes[..start])
            .then(|| leading(&text[start..]))
            .flatten()
            .map(|opening| (start, opening))
    })
}

/// Whether `before` ends with a break (".", ":" or ";"), any closing
/// quotes or brackets after it, and one space: what stands before a
/// clause opening inside a paragraph.
fn follows_break(before: &[u8]) -> bool {
    let Some(mut rest) = before.strip_suffix(b" ") else {
        return false;
    };
    loop {
        match rest {
            [.., b'.' | b':' | b';'] => return true,
            [head @ .., b'"' | b')' | b']'] => rest = head,
            [head @ .., 0xE2, 0x80, 0x9D] => rest = head, // ”
            _ => return false,
        }
    }
}

/// "11." → [11], "10.1" → [10, 1]: a decimal outline number (parts of
/// one to three digits, so that years are not).
fn outline_number(token: &str) -> Option<Vec<u32>> {
    decimal_depth(token)?;
    // "5" alone is a count, not a clause: a depth-one number has its dot.
    if !token.contains('.') {
        return None;
    }
    token
        .trim_end_matches('.')
        .split('.')
        .map(|part| part.parse().ok())
        .collect()
}

/// The clause numbers of a document so far: which may come next, and
/// whether its clauses have run-in titles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ClauseNumbers {
    last: Vec<u32>,
    /// Whether a clause with a title in title case was seen.
    titled: bool,
}

impl ClauseNumbers {
    /// Whether a clause number was read (or a numbered heading seen).
    pub fn is_numbered(&self) -> bool {
        !self.last.is_empty()
    }

    /// Whether `number` may follow the last one: the next at its level or
    /// at an enclosing one ("10.2" or "11" after "10.1"), the first below
    /// it ("10.1.1" after "10.1"), or "1" when none came before.
    pub fn continues(&self, number: &[u32]) -> bool {
        if self.last.is_empty() {
            return number == [1];
        }
        let first_child = number.len() == self.last.len() + 1
            && number.starts_with(&self.last)
            && number.last() == Some(&1);
        let next = (0..self.last.len()).any(|k| {
            number.len() == k + 1
                && number[..k] == self.last[..k]
                && number[k] == self.last[k].saturating_add(1)
        });
        first_child || next
    }

    /// Reads a clause's opening at the start of a paragraph (`inner`
    /// false) or inside one, and gives the run-in heading that opens a
    /// section there, if any.
    ///
    /// Inside a paragraph only a number that continues the clause numbers
    /// opens a clause. A title in title case is a heading wherever the
    /// clause opens; a short one in sentence case ("7. Limitation of
    /// liability. …") only where the number continues, in a document whose
    /// clauses were titled before, so that a numbered step ("1. Preheat
    /// the oven. …") is not taken for one.
    pub fn read<'a>(&mut self, opening: &Opening<'a>, inner: bool) -> Option<&'a str> {
        let continues = self.continues(&opening.number);
        if inner && !continues {
            return None;
        }
        self.last.clone_from(&opening.number);
        let heading = opening.heading?;
        let accepted = opening.title_case || (continues && self.titled);
        self.titled |= opening.title_case;
        accepted.then_some(heading)
    }

    /// Records the number a numbered heading opens with ("12.
    /// Miscellaneous", "6 Warranties"), if it opens with one.
    pub fn saw_heading(&mut self, heading: &str) {
        let token = heading.split_whitespace().next().unwrap_or_default();
        let number = if token.contains('.') {
            outline_number(token)
        } else {
            token.parse().ok().map(|n| vec![n])
        };
        if let Some(number) = number {
            self.last = number;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heading(text: &str) -> Option<&str> {
        leading(text).and_then(|r| r.heading)
    }

    #[test]
    fn run_in_headings_are_numbered_titles_before_a_separator() {
        assert_eq!(
            heading("11. Customer References. Customer agrees that …"),
            Some("11. Customer References")
        );
        assert_eq!(
            heading("10.1 Term and Termination. This Agreement shall …"),
            Some("10.1 Term and Termination")
        );
        assert_eq!(
            heading("11. Mutual Representations, Warranties and Covenants - Each party (the …"),
            Some("11. Mutual Representations, Warranties and Covenants")
        );
        assert_eq!(
            heading("2. Provision of Services. eGain will provide …"),
            Some("2. Provision of Services")
        );
        assert_eq!(leading("10.1 Term. This").map(|r| r.depth()), Some(2));
        // Sentences, not titles; numbers that are not outline numbers.
        assert_eq!(heading("1.1 HDI shall design the product. It …"), None);
        assert!(leading("5 Ownership. Individual …").is_none());
        assert!(leading("2016. Annual Report. The …").is_none());
        // A second clause's number is no part of a title.
        assert_eq!(
            heading("14. [Intentionally Omitted.] 15. Fees - The …"),
            None
        );
        // Sentence case is told apart: it is a heading only in context.
        let step = leading("1. Preheat the oven. Then …").expect("numbered");
        assert_eq!(step.heading, Some("1. Preheat the oven"));
        assert!(!step.title_case);
        // A heading with nothing after it is a heading line, not run in.
        assert_eq!(heading("10. Term and Termination."), None);
    }

    #[test]
    fn inner_clauses_start_after_a_break() {
        let text = "The terms are as follows: 1. License - Individual grants rights. \
                    2. Marketing Materials - Marketing Materials shall mean materials. \
                    Fees under Section 2. Payment is due.";
        let starts: Vec<(usize, Option<&str>)> = inner_openings(text, 0)
            .map(|(at, o)| (at, o.heading))
            .collect();
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert_eq!(starts[0].1, Some("1. License"));
        assert_eq!(&text[starts[1].0..][..3], "2. ");
        assert_eq!(starts[1].1, Some("2. Marketing Materials"));
    }

    /// Every break visited, as before the search for " 1.": the reference
    /// [`clause_starts`] is held to.
    fn starts_at_every_break<'a>(
        text: &'a str,
        clauses: &mut ClauseNumbers,
    ) -> Vec<(usize, u8, &'a str)> {
        let leading = leading(text).map(|opening| (0, opening));
        let mut starts = Vec::new();
        for (at, opening) in leading.into_iter().chain(inner_openings(text, 0)) {
            if let Some(heading) = clauses.read(&opening, at > 0) {
                starts.push((at, opening.depth(), heading));
            }
        }
        starts
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        // Small cases, and many: the search for " 1." runs only while the
        // document has no clause number yet.
        #![proptest_config(proptest::test_runner::Config::with_cases(2048))]
        #[test]
        fn clause_starts_are_those_every_break_gives(
            heading in proptest::sample::select(vec!["", "", "", "1.", "2.", "1.1", "9. Fees"]),
            pieces in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["", ".", ":", ";", "x", "é"]),
                    proptest::collection::vec(
                        proptest::sample::select(vec!["\"", "”", ")", "]", "“"]),
                        0..2,
                    ),
                    proptest::sample::select(vec![" ", " ", "", "  "]),
                    proptest::sample::select(vec!["1.", "1.", "1.1", "2.", "1", "10.", "1.5", "x"]),
                    proptest::sample::select(vec![" Term. ", " Fees - x", " the", "", "é", "."]),
                )
                    .prop_map(|(stop, closers, space, number, tail)| {
                        format!("{stop}{}{space}{number}{tail}", closers.concat())
                    }),
                0..10,
            )
        ) {
            let text = pieces.concat();
            let mut expected_numbers = ClauseNumbers::default();
            expected_numbers.saw_heading(heading);
            let mut numbers = expected_numbers.clone();
            let expected = starts_at_every_break(&text, &mut expected_numbers);
            proptest::prop_assert_eq!(clause_starts(&text, &mut numbers), expected);
            proptest::prop_assert_eq!(numbers, expected_numbers);
        }
    }

    #[test]
    fn clause_numbers_continue_by_one_at_some_level() {
        let mut numbers = ClauseNumbers::default();
        assert!(numbers.continues(&[1]));
        assert!(!numbers.continues(&[4]));
        numbers.saw_heading("10.1 Term");
        assert!(numbers.continues(&[10, 2]));
        assert!(numbers.continues(&[11]));
        assert!(numbers.continues(&[10, 1, 1]));
        assert!(!numbers.continues(&[12]));
        assert!(!numbers.continues(&[10, 3]));
        numbers.saw_heading("12. Miscellaneous");
        assert!(numbers.continues(&[13]));
        numbers.saw_heading("6 Limited Warranties");
        assert!(numbers.continues(&[7]));
    }

    #[test]
    fn sentence_case_titles_are_headings_only_among_titled_clauses() {
        let opening = |text| leading(text).expect("numbered");
        let mut numbers = ClauseNumbers::default();
        assert_eq!(
            numbers.read(&opening("1. Preheat the oven. Then"), false),
            None
        );
        let mut numbers = ClauseNumbers::default();
        let first = opening("6. Limited Warranties. eGain warrants");
        assert_eq!(numbers.read(&first, false), Some("6. Limited Warranties"));
        let next = opening("7. Limitation of liability. EXCLUDING");
        assert_eq!(
            numbers.read(&next, false),
            Some("7. Limitation of liability")
        );
        // Inside a paragraph, a number out of sequence opens nothing.
        assert_eq!(numbers.read(&opening("9. Fees. The"), true), None);
        // One without a title still counts: "9" after "8" continues.
        assert_eq!(numbers.read(&opening("8. Compensation (a) In"), true), None);
        assert!(numbers.continues(&[9]));
    }
}
