//! Which extractors a sentence could feed, read in one pass before any of
//! them runs.
//!
//! Every extractor names its *cues*: literals one of which each match of its
//! patterns contains, plus whether a match needs a digit. A sentence holding
//! none of an extractor's cues cannot match it, so the extractor is not run.
//! Cues are necessary, never sufficient: they decide what runs, never what
//! is found, and the extractors keep their own checks.
//!
//! All cues are found by two Aho-Corasick automata, one matching case for
//! case and one ignoring ASCII case, instead of one regular-expression scan
//! per extractor. Most sentences of most documents hold no cue of most
//! extractors, and the full patterns then never see them.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::{amounts, dates, definitions, organizations, periods, references};

/// The literals one of which every match of an extractor contains.
#[derive(Clone, Debug, Default)]
pub(super) struct Cues {
    /// Matched case for case.
    pub exact: Vec<String>,
    /// Matched ignoring ASCII case: the words an extractor's patterns match
    /// under `(?i)`.
    pub caseless: Vec<String>,
    /// Whether every match holds an ASCII digit as well.
    pub needs_digit: bool,
}

/// The extractors that are run behind cues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extractor {
    Dates,
    FiscalPeriods,
    Money,
    Percentages,
    Organizations,
    References,
    Definitions,
}

impl Extractor {
    pub const ALL: [Extractor; 7] = [
        Extractor::Dates,
        Extractor::FiscalPeriods,
        Extractor::Money,
        Extractor::Percentages,
        Extractor::Organizations,
        Extractor::References,
        Extractor::Definitions,
    ];

    fn bit(self) -> u8 {
        1 << self as u8
    }

    fn cues(self) -> Cues {
        match self {
            Extractor::Dates => dates::cues(),
            Extractor::FiscalPeriods => periods::cues(),
            Extractor::Money => amounts::money_cues(),
            Extractor::Percentages => amounts::percentage_cues(),
            Extractor::Organizations => organizations::cues(),
            Extractor::References => references::cues(),
            Extractor::Definitions => definitions::cues(),
        }
    }
}

/// Characters outside ASCII that Unicode case folding, which `(?i)` in the
/// extractors' patterns follows, equates with an ASCII letter: the long s
/// (ſ, "s") and the Kelvin sign (K, "k"). A sentence holding one may match
/// a caseless pattern that no ASCII-caseless cue finds, so it counts as
/// holding every caseless cue.
const ASCII_FOLDS: [&str; 2] = ["\u{17F}", "\u{212A}"];

/// The two automata, and for each of their patterns the extractors it cues.
struct Automata {
    exact: AhoCorasick,
    exact_cues: Vec<u8>,
    caseless: AhoCorasick,
    caseless_cues: Vec<u8>,
    /// Extractors with caseless cues.
    caseless_extractors: u8,
    /// Extractors whose matches need a digit.
    need_digit: u8,
}

static AUTOMATA: LazyLock<Automata> = LazyLock::new(Automata::new);

impl Automata {
    fn new() -> Self {
        let mut exact: Vec<String> = Vec::new();
        let mut exact_cues: Vec<u8> = Vec::new();
        let mut caseless: Vec<String> = Vec::new();
        let mut caseless_cues: Vec<u8> = Vec::new();
        let mut need_digit = 0;
        for extractor in Extractor::ALL {
            let cues = extractor.cues();
            add(&mut exact, &mut exact_cues, cues.exact, extractor.bit());
            add(
                &mut caseless,
                &mut caseless_cues,
                cues.caseless,
                extractor.bit(),
            );
            if cues.needs_digit {
                need_digit |= extractor.bit();
            }
        }
        let caseless_extractors = caseless_cues.iter().fold(0, |all, bits| all | bits);
        let folds = ASCII_FOLDS.map(String::from).to_vec();
        add(&mut exact, &mut exact_cues, folds, caseless_extractors);
        Automata {
            exact: build(&exact, false),
            exact_cues,
            caseless: build(&caseless, true),
            caseless_cues,
            caseless_extractors,
            need_digit,
        }
    }
}

/// Adds `words` to a pattern list, merging the extractors of a word that is
/// already there.
fn add(patterns: &mut Vec<String>, cues: &mut Vec<u8>, words: Vec<String>, bits: u8) {
    for word in words {
        match patterns.iter().position(|p| *p == word) {
            Some(at) => cues[at] |= bits,
            None => {
                patterns.push(word);
                cues.push(bits);
            }
        }
    }
}

/// Builds an automaton over constant patterns. Overlapping search needs the
/// standard match kind: a cue inside another extractor's cue ("SE" in
/// "SEP") must still be seen. A failure is a bug in this module, caught by
/// every test that enriches, never a property of the input.
fn build(patterns: &[String], ascii_case_insensitive: bool) -> AhoCorasick {
    match AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .ascii_case_insensitive(ascii_case_insensitive)
        .build(patterns)
    {
        Ok(automaton) => automaton,
        Err(error) => panic!("invalid enrichment cues: {error}"),
    }
}

/// The extractors a sentence holds cues of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cued(u8);

impl Cued {
    /// Reads `text` once per automaton; the caseless one is skipped when
    /// the exact one has already cued every extractor it could.
    pub fn of(text: &str) -> Cued {
        let automata = &*AUTOMATA;
        let mut bits = 0;
        for found in automata.exact.find_overlapping_iter(text) {
            bits |= automata.exact_cues[found.pattern().as_usize()];
        }
        if bits & automata.caseless_extractors != automata.caseless_extractors {
            for found in automata.caseless.find_overlapping_iter(text) {
                bits |= automata.caseless_cues[found.pattern().as_usize()];
            }
        }
        if bits & automata.need_digit != 0 && !text.bytes().any(|b| b.is_ascii_digit()) {
            bits &= !automata.need_digit;
        }
        Cued(bits)
    }

    /// Whether `text` may hold a match of `extractor`.
    pub fn may_match(self, extractor: Extractor) -> bool {
        self.0 & extractor.bit() != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cued(text: &str) -> Vec<Extractor> {
        let cued = Cued::of(text);
        Extractor::ALL
            .into_iter()
            .filter(|e| cued.may_match(*e))
            .collect()
    }

    #[test]
    fn a_sentence_without_cues_runs_nothing() {
        assert!(cued("The weather was fine and the crowd went home.").is_empty());
        // A digit alone cues nothing: every digit extractor needs a word too.
        assert!(cued("There were 12 of them").is_empty());
    }

    #[test]
    fn each_extractor_is_cued_by_its_own_words() {
        use Extractor::*;
        assert_eq!(cued("signed on March 3, 2020"), vec![Dates]);
        assert_eq!(cued("on 2020-03-03"), vec![Dates]);
        assert_eq!(cued("revenue in FY2024 rose"), vec![FiscalPeriods]);
        assert_eq!(cued("the third Quarter of 2023"), vec![FiscalPeriods]);
        assert_eq!(cued("a fee of 5 Dollars"), vec![Money]);
        assert_eq!(cued("a fee of €5"), vec![Money]);
        assert_eq!(cued("up 12 PerCent"), vec![Percentages]);
        assert_eq!(cued("Acme GmbH was there"), vec![Organizations]);
        assert_eq!(cued("as set out in sEcTiOn 5"), vec![References]);
        assert_eq!(cued("see § 5"), vec![References]);
        assert_eq!(cued("“Affiliate” MEANS any"), vec![Definitions]);
    }

    #[test]
    fn digit_extractors_need_a_digit() {
        assert!(!Cued::of("in March").may_match(Extractor::Dates));
        assert!(!Cued::of("per cent").may_match(Extractor::Percentages));
    }

    #[test]
    fn exact_cues_keep_their_case() {
        // "sep" in lower case is no month; "fy" is no fiscal year.
        assert!(!Cued::of("a separate 2 satisfy").may_match(Extractor::Dates));
        assert!(!Cued::of("satisfy 2").may_match(Extractor::FiscalPeriods));
        assert!(!Cued::of("inc 5 gmbh").may_match(Extractor::Organizations));
    }

    #[test]
    fn a_cue_inside_another_cue_is_seen() {
        // "SE" (a suffix) and "SEP" (a month) start at the same place.
        let cued = Cued::of("SEPT 5, 2020");
        assert!(cued.may_match(Extractor::Dates));
        assert!(cued.may_match(Extractor::Organizations));
    }

    #[test]
    fn characters_that_fold_to_ascii_cue_every_caseless_extractor() {
        // "ſection" matches `(?i:section)`; no ASCII-caseless cue sees it.
        assert!(Cued::of("ſection 5").may_match(Extractor::References));
        assert!(Cued::of("5 per \u{212A}").may_match(Extractor::Percentages));
        let caseless = regex::Regex::new("(?i:section)").expect("a valid pattern");
        assert!(caseless.is_match("ſection"));
    }
}
