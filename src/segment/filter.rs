//! Which sentences are indexed.
//!
//! Every sentence stays in the skeleton and in chunks (a reader sees the
//! whole document); the filter only keeps fragments and form noise out of
//! the lexical and vector indexes, where they would match queries without
//! answering them.

use crate::spec::SentenceSpec;

/// Most words of the label before a blank ("Name of Authorized Signatory
/// ________"); a longer run of words before a blank is a sentence with a
/// gap in it ("The Tenant shall pay $____ per month.").
const MAX_LABEL_WORDS: usize = 5;

/// Most words of a bare label ending in a colon ("Signature:", "Name of
/// Company:"); longer ones are lead-ins to what follows ("The following
/// terms apply:").
const MAX_BARE_LABEL_WORDS: usize = 3;

/// Most words of one option of a checkbox line ("☐ Not applicable").
const MAX_OPTION_WORDS: usize = 3;

/// Fewest underscores that make a blank to be filled in ("___").
const MIN_UNDERSCORE_BLANK: usize = 3;

/// Fewest dots or dashes (an "…" counting three) that make a blank
/// ("Date: ....."); shorter runs are ellipses and dashes in prose.
const MIN_LEADER_BLANK: usize = 5;

/// Decides whether a sentence is indexed (it stays in the skeleton and in
/// chunks either way).
#[derive(Clone, Debug)]
pub struct SentenceFilter {
    min_chars: usize,
    min_words: usize,
    drop_form_labels: bool,
}

impl SentenceFilter {
    /// A filter with the profile's minimum length and form-label setting.
    pub fn new(spec: &SentenceSpec) -> Self {
        Self {
            min_chars: spec.min_chars as usize,
            min_words: spec.min_words as usize,
            drop_form_labels: spec.drop_form_labels,
        }
    }

    /// Whether `sentence` goes into the indexes: it has at least
    /// `minChars` characters and `minWords` whitespace-separated words, and
    /// (when `dropFormLabels` is set) is not a form label
    /// ([`is_form_label`]).
    pub fn is_indexable(&self, sentence: &str) -> bool {
        self.is_indexable_within(sentence, Screen::NOTHING_RULED_OUT)
    }

    /// [`is_indexable`](Self::is_indexable) for a sentence of a text that
    /// `screen` was read from.
    pub fn is_indexable_within(&self, sentence: &str, screen: Screen) -> bool {
        // Bounded counts: only whether the minimum is reached matters, and
        // this runs once per sentence of every document.
        has_min_chars(sentence, self.min_chars)
            && has_min_words(sentence, self.min_words)
            && !(self.drop_form_labels && is_form_label_within(sentence, screen))
    }
}

/// What the sentences of one text (a paragraph) cannot be, read once for
/// the whole text: a sentence is part of its paragraph, so what the
/// paragraph lacks, none of its sentences has, and a search per sentence
/// can be skipped. Three paragraphs in four of SQuAD's hold no checkbox's
/// opening byte, for instance.
#[derive(Clone, Copy, Debug)]
pub struct Screen {
    may_hold_checkbox: bool,
}

impl Screen {
    /// For a sentence judged without its text.
    pub const NOTHING_RULED_OUT: Screen = Screen {
        may_hold_checkbox: true,
    };

    /// Reads `text`. Sentences judged with the screen must be parts of it.
    pub fn of(text: &str) -> Self {
        Screen {
            may_hold_checkbox: has_checkbox(text),
        }
    }
}

/// Whether `text` has at least `min` characters; no character is longer
/// than four bytes, so long texts are decided by their length alone.
fn has_min_chars(text: &str, min: usize) -> bool {
    text.len() >= 4 * min || text.chars().take(min).count() >= min
}

/// Whether `text` has at least `min` whitespace-separated words, reading
/// only as far as it takes.
fn has_min_words(text: &str, min: usize) -> bool {
    if min == 0 {
        return true;
    }
    // Most sentences start with ASCII words: counted by bytes until the
    // minimum is reached. Anything else is left to `split_whitespace`,
    // whose idea of whitespace (Unicode's) this agrees with on ASCII.
    let mut words = 0;
    let mut in_word = false;
    for &b in text.as_bytes() {
        if !b.is_ascii() {
            return text.split_whitespace().nth(min - 1).is_some();
        }
        // `char::is_whitespace` on ASCII: tab to carriage return (with the
        // vertical tab, which `is_ascii_whitespace` leaves out) and space.
        let space = matches!(b, b'\t'..=b'\r' | b' ');
        if !space && !in_word {
            words += 1;
            if words == min {
                return true;
            }
        }
        in_word = !space;
    }
    false
}

impl Default for SentenceFilter {
    fn default() -> Self {
        Self::new(&SentenceSpec::default())
    }
}

/// Whether a sentence is form-label noise rather than prose:
///
/// * labels and blanks to fill in: "Name: ________", "Date: .....",
///   "By: ____ Title: ____", "Signature ________ Date ________", or a line
///   of blanks alone;
/// * a bare label: "Signature:", "Name of Company:";
/// * checkbox options: "☐ Yes ☐ No", `Married? [ ] Yes [x] No`.
///
/// A sentence with a blank inside prose ("The Tenant shall pay $____ per
/// month.") is not a label: its words around the blank are too many, or it
/// ends with a full stop.
pub fn is_form_label(sentence: &str) -> bool {
    is_form_label_within(sentence, Screen::NOTHING_RULED_OUT)
}

/// [`is_form_label`] for a sentence of a text that `screen` was read from.
fn is_form_label_within(sentence: &str, screen: Screen) -> bool {
    let sentence = sentence.trim();
    !sentence.is_empty()
        && (is_fill_in(sentence) || (screen.may_hold_checkbox && is_checkbox_options(sentence)))
}

/// Characters that draw a blank to fill in, and how many each counts for.
fn fill_weight(c: char) -> usize {
    match c {
        '_' | '.' | '-' | '‐' | '‒' | '–' | '—' | '·' => 1,
        '…' => 3,
        _ => 0,
    }
}

/// A run of fill characters being read.
#[derive(Default)]
struct FillRun {
    weight: usize,
    underscores: usize,
    /// Whether the run started right after a letter or digit ("that....",
    /// "well---known"): then only underscores make it a blank.
    attached: bool,
}

impl FillRun {
    fn is_blank(&self) -> bool {
        self.underscores >= MIN_UNDERSCORE_BLANK
            || (!self.attached && self.weight >= MIN_LEADER_BLANK)
    }
}

/// An upper bound of the total [`fill_weight`] of a sentence, counted over
/// bytes with vectorised searches: the ASCII fill characters, and the
/// multi-byte ones ("·", dashes, "…") by their lead bytes.
fn fill_weight_bound(bytes: &[u8]) -> usize {
    let ascii = memchr::memchr3_iter(b'_', b'.', b'-', bytes).count();
    let wide: usize = memchr::memchr2_iter(0xc2, 0xe2, bytes)
        .map(|i| match bytes.get(i..i + 3) {
            Some([0xc2, 0xb7, _]) => 1,
            Some([0xe2, 0x80, 0x90..=0x95]) => 1,
            Some([0xe2, 0x80, 0xa6]) => 3,
            _ => 0,
        })
        .sum();
    ascii + wide
}

/// Labels and blanks, or a bare label ending in a colon.
fn is_fill_in(sentence: &str) -> bool {
    // A full stop right after a word ends prose ("… per month."): the walk
    // below would end on a fill run that is no blank. Most sentences stop
    // here, or at the next test: without a colon at the end or enough fill
    // characters for a blank, nothing below can succeed.
    if let [.., before, b'.'] = sentence.as_bytes()
        && before.is_ascii_alphanumeric()
    {
        return false;
    }
    if !sentence.ends_with(':')
        && fill_weight_bound(sentence.as_bytes()) < MIN_UNDERSCORE_BLANK.min(MIN_LEADER_BLANK)
    {
        return false;
    }
    let mut blanks = 0;
    let mut label_words = 0;
    let mut run = FillRun::default();
    let mut in_word = false;
    for c in sentence.chars() {
        let weight = fill_weight(c);
        if weight > 0 {
            if run.weight == 0 {
                run.attached = in_word;
            }
            run.weight += weight;
            run.underscores += usize::from(c == '_');
            in_word = false;
            continue;
        }
        if c.is_whitespace() {
            in_word = false;
            continue;
        }
        if run.is_blank() {
            // A blank closes the label before it.
            if label_words > MAX_LABEL_WORDS {
                return false;
            }
            blanks += 1;
            label_words = 0;
        }
        run = FillRun::default();
        if c.is_alphanumeric() {
            if !in_word {
                label_words += 1;
                // Too many words for a label, whatever follows: a later
                // blank would close a label that is too long, and no blank
                // leaves a lead-in or prose. Stop reading early; this runs
                // on every sentence.
                if label_words > MAX_LABEL_WORDS {
                    return false;
                }
            }
            in_word = true;
        } else {
            in_word = false;
        }
    }
    if run.is_blank() {
        if label_words > MAX_LABEL_WORDS {
            return false;
        }
        blanks += 1;
        label_words = 0;
    } else if run.weight > 0 {
        // A sentence ending in a full stop or an ellipsis is prose, even
        // with a gap in it ("… shall pay $____ per month.").
        return false;
    }
    if blanks > 0 {
        label_words <= MAX_LABEL_WORDS
    } else {
        sentence.ends_with(':') && (1..=MAX_BARE_LABEL_WORDS).contains(&label_words)
    }
}

/// Whether any checkbox is present: an ASCII box, or a glyph from the
/// Geometric Shapes (U+25A0–U+25BF: E2 96 ..), Miscellaneous Symbols
/// (U+2610–U+263F: E2 98 ..) or Dingbats (U+2700–U+273F: E2 9C ..) blocks.
/// A screen run on every sentence: both kinds of box open with a byte
/// that is rare in prose ("[" or the E2 lead byte, which also opens dashes
/// and curly quotes), so a vectorised search for those two bytes skips
/// nearly all of the text.
fn has_checkbox(sentence: &str) -> bool {
    let bytes = sentence.as_bytes();
    memchr::memchr2_iter(b'[', 0xe2, bytes).any(|i| {
        matches!(
            bytes.get(i..i + 3),
            Some([b'[', b' ' | b'x' | b'X', b']'] | [0xe2, 0x96 | 0x98 | 0x9c, _])
        )
    })
}

/// Checkbox glyphs and ASCII checkboxes "[ ]", "[x]", "[X]": each option
/// after a box is a few words, and so is the question before the first.
fn is_checkbox_options(sentence: &str) -> bool {
    if !has_checkbox(sentence) {
        return false;
    }
    let mut boxes = 0;
    let mut words = 0;
    let mut in_word = false;
    let mut rest = sentence;
    while let Some(c) = rest.chars().next() {
        let ascii_box = ["[ ]", "[x]", "[X]"]
            .iter()
            .find(|b| rest.starts_with(**b))
            .map(|b| b.len());
        let box_len = match c {
            '☐' | '☑' | '☒' | '□' | '■' | '▢' | '✓' | '✔' | '✗' | '✘' => {
                Some(c.len_utf8())
            }
            _ => ascii_box,
        };
        if let Some(len) = box_len {
            let limit = if boxes == 0 {
                MAX_LABEL_WORDS
            } else {
                MAX_OPTION_WORDS
            };
            if words > limit {
                return false;
            }
            boxes += 1;
            words = 0;
            in_word = false;
            rest = rest.get(len..).unwrap_or_default();
            continue;
        }
        if c.is_alphanumeric() {
            if !in_word {
                words += 1;
            }
            in_word = true;
        } else {
            in_word = false;
        }
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    boxes > 0 && words <= MAX_OPTION_WORDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_form_labels() {
        for label in [
            "Name: ________",
            "Signature:",
            "Date: .....",
            "By: ____",
            "Title: ___",
            "By: ____ Title: ____",
            "Signature ________________ Date __________",
            "Name of Authorized Signatory: ___________",
            "Name of Company:",
            "______________________",
            ". . . . . . . .",
            "☐ Yes ☐ No",
            "Are you married? [ ] Yes [x] No",
            "☐ Single ☐ Married ☐ Not applicable",
            "Name____",
        ] {
            assert!(is_form_label(label), "{label:?} is a form label");
        }
    }

    #[test]
    fn keeps_prose() {
        for prose in [
            "Name: John Smith",
            "Signature of the parties is required.",
            "The following terms apply:",
            "The Tenant shall pay $________ per month.",
            "The Tenant shall pay the sum of ________ dollars to the Landlord on the first day.",
            "☒ The Company elects to renew the agreement for one further year",
            "Contoso Ltd. is at P.O. Box 123, FL.",
            "The well-known e-mail service was down.",
            "I never meant that....",
            "Wait for it . . .",
            "It was a long day...",
            "",
        ] {
            assert!(!is_form_label(prose), "{prose:?} is prose");
        }
    }

    #[test]
    fn indexable_needs_length_words_and_no_label() {
        let filter = SentenceFilter::default();
        assert!(filter.is_indexable("The term is five years."));
        assert!(!filter.is_indexable("Yes."));
        assert!(!filter.is_indexable("Termination"));
        assert!(!filter.is_indexable("Name: ________"));
        let keep_labels = SentenceFilter::new(&SentenceSpec {
            drop_form_labels: false,
            ..SentenceSpec::default()
        });
        assert!(keep_labels.is_indexable("Name: ________"));
    }

    /// Pieces around checkboxes: boxes whole and cut, other characters
    /// whose UTF-8 starts with E2 (dashes, curly quotes), letters.
    const PIECES: &[&str] = &[
        "[", "]", " ", "x", "X", "[ ]", "[x]", "\u{2610}", "\u{25a0}", "\u{2713}", "\u{2014}",
        "\u{201c}", "\u{2022}", "a", "Yes",
    ];

    proptest::proptest! {
        #[test]
        fn checkbox_screen_agrees_with_a_search(
            pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..12)
        ) {
            let text = pieces.concat();
            let bytes = text.as_bytes();
            let searched = (0..bytes.len()).any(|i| {
                matches!(
                    &bytes[i..],
                    [b'[', b' ' | b'x' | b'X', b']', ..] | [0xe2, 0x96 | 0x98 | 0x9c, ..]
                )
            });
            proptest::prop_assert_eq!(has_checkbox(&text), searched, "{:?}", text);
        }

        #[test]
        fn words_are_counted_as_unicode_splits_them(
            pieces in proptest::collection::vec(proptest::sample::select(&[
                "a", "word", " ", "\t", "\n", "\x0b", "\x0c", "\r", "\u{85}", "\u{a0}",
                "\u{2003}", "\u{e9}",
            ][..]), 0..10),
            min in 0usize..5,
        ) {
            let text = pieces.concat();
            let split = min == 0 || text.split_whitespace().nth(min - 1).is_some();
            proptest::prop_assert_eq!(has_min_words(&text, min), split, "{:?}", text);
        }
    }
}
