//! Invariants of the segmenter on arbitrary text: it never panics, and its
//! ranges are ordered, disjoint, trimmed, non-empty, on char boundaries and
//! cover every non-whitespace character exactly once.

use proptest::prelude::*;
use trellis::segment::{Screen, Segmenter, SentenceFilter, is_form_label};
use trellis::spec::SentenceSpec;

fn check_invariants(segmenter: &Segmenter, text: &str) -> Result<(), TestCaseError> {
    let ranges = segmenter.split(text);
    let mut covered_to = 0;
    let mut coverage = vec![0u8; text.len()];
    for range in &ranges {
        prop_assert!(range.start < range.end, "empty range {range:?}");
        prop_assert!(
            range.start >= covered_to,
            "range {range:?} overlaps or is out of order"
        );
        prop_assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
        let sentence = &text[range.clone()];
        prop_assert_eq!(sentence.trim(), sentence, "untrimmed sentence");
        for byte in &mut coverage[range.clone()] {
            *byte += 1;
        }
        covered_to = range.end;
    }
    for (i, c) in text.char_indices() {
        if !c.is_whitespace() {
            prop_assert_eq!(coverage[i], 1, "char {:?} at {} lost", c, i);
        }
    }

    // `split_into` appends the same ranges after what is already there.
    let mut appended = Vec::from([0..0, 1..1]);
    segmenter.split_into(text, &mut appended);
    prop_assert_eq!(&appended[2..], &ranges[..]);
    Ok(())
}

/// Text from a small alphabet dense in terminators, quotes, brackets,
/// digits, list markers, bullets and newlines.
fn punctuation_heavy() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(vec![
                "a", "Z", "I", "i", "b", "0", "1", "2", "9", " ", " ", ".", ".", "!", "?", "\"",
                "'", ")", "(", "[", "]", "\n", "\u{2026}", "\u{2022}", "\u{2043}", "\u{201d}",
                "\u{a0}", "\u{3002}", "_", ":", "-", "\u{2610}",
            ]),
            proptest::sample::select(vec![
                "Mr.", "U.S.", "e.g.", "Inc.", "No.", "p.", " . . .", "...", "1.)", "(a)", "\n\n",
                "The", "the", "etc.", "2.1", "[...]", "[12]", "a.m.",
            ]),
        ],
        0..60,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn invariants_on_arbitrary_unicode(text in any::<String>()) {
        check_invariants(&Segmenter::default(), &text)?;
    }

    #[test]
    fn invariants_on_punctuation_heavy_text(text in punctuation_heavy()) {
        check_invariants(&Segmenter::default(), &text)?;
    }

    #[test]
    fn invariants_with_extra_abbreviations(text in punctuation_heavy()) {
        let segmenter = Segmenter::new(&SentenceSpec {
            extra_abbreviations: vec!["a".into(), "Z.".into(), "the".into()],
            ..SentenceSpec::default()
        });
        check_invariants(&segmenter, &text)?;
    }

    /// The filter's verdicts hold together on any text: a form label is
    /// never indexed (the default drops them), blank text never is, and
    /// the screen read from the sentence's own text changes nothing.
    #[test]
    fn filter_verdicts_agree(text in punctuation_heavy()) {
        let filter = SentenceFilter::default();
        let indexable = filter.is_indexable(&text);
        prop_assert!(!(indexable && is_form_label(&text)), "a form label indexed: {:?}", text);
        prop_assert!(!(indexable && text.trim().is_empty()));
        prop_assert_eq!(filter.is_indexable_within(&text, Screen::of(&text)), indexable);
    }
}
