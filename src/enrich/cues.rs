//! Which extractors a sentence could feed, read in one pass before any of
//! them runs.
//!
//! Every extractor names its *cues*: literals one of which each match of its
//! patterns contains, plus whether a match needs a digit. A sentence holding
//! none of an extractor's cues cannot match it, so the extractor is not run.
//! Cues are necessary, never sufficient: they decide what runs, never what
//! is found, and the extractors keep their own checks.
//!
//! All cues are found by one Aho-Corasick automaton that ignores ASCII
//! case, instead of one regular-expression scan per extractor; a cue that
//! must match case for case is checked against its spellings where found,
//! and one that must open or close a word against the bytes around it.
//! Most sentences of most documents hold no cue of most extractors, and the
//! full patterns then never see them.
//!
//! The automaton's steps through one text form a chain, each state read
//! from the one before, so a document's sentences are read several at a
//! time, side by side ([`Cued::of_each`]).

use std::sync::LazyLock;

use aho_corasick::automaton::{Automaton as _, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};

use super::{amounts, dates, definitions, organizations, periods, references};

/// The literals one of which every match of an extractor contains.
#[derive(Clone, Debug, Default)]
pub(super) struct Cues {
    /// Matched case for case.
    pub exact: Vec<String>,
    /// Where every match holds its exact cue: "Inc" opening a word cues
    /// nothing in "Including", closing one nothing in "Income".
    pub exact_edges: Edges,
    /// Matched ignoring ASCII case: the words an extractor's patterns match
    /// under `(?i)`.
    pub caseless: Vec<String>,
    /// Where every match holds its caseless cue: "table" opening a word
    /// cues nothing in "notable", "euro" closing one nothing in "European".
    pub caseless_edges: Edges,
    /// Whether every match holds an ASCII digit as well.
    pub needs_digit: bool,
}

/// Which ends of a cue must be ends of a word where a match holds it, as
/// `(?-u:\b)` beside a letter asks: a cue *opens* a word when the byte
/// before it, if any, is no ASCII letter, digit or underscore, and
/// *closes* one when the byte after it, if any, is none either. An end of
/// the cue that is no such byte itself ("." of "Inc.") asks nothing of its
/// neighbour, as no word boundary stands beside it in a pattern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Edges {
    pub opens: bool,
    pub closes: bool,
}

impl Edges {
    /// A cue counts wherever it stands.
    pub const ANYWHERE: Edges = Edges {
        opens: false,
        closes: false,
    };
    /// A cue counts where it opens a word.
    pub const OPENING: Edges = Edges {
        opens: true,
        closes: false,
    };
    /// A cue counts where it closes a word.
    pub const CLOSING: Edges = Edges {
        opens: false,
        closes: true,
    };
    /// A cue counts where it is a word of its own.
    pub const WHOLE: Edges = Edges {
        opens: true,
        closes: true,
    };

    /// Whether the cue at `start..end` of `text` stands where these edges
    /// ask.
    fn hold(self, text: &[u8], start: usize, end: usize) -> bool {
        let opens = || {
            !text.get(start).is_some_and(|b| is_word_byte(*b))
                || start
                    .checked_sub(1)
                    .and_then(|before| text.get(before))
                    .is_none_or(|b| !is_word_byte(*b))
        };
        let closes = || {
            !end.checked_sub(1)
                .and_then(|last| text.get(last))
                .is_some_and(|b| is_word_byte(*b))
                || text.get(end).is_none_or(|b| !is_word_byte(*b))
        };
        (!self.opens || opens()) && (!self.closes || closes())
    }
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

    /// The extractor's bit in both bytes of a [`Cued`]: cued by an exact
    /// cue (low byte) or by a caseless one (high byte).
    fn cued_bits(self) -> u16 {
        u16::from(self.bit()) * 0x0101
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
/// holding every caseless cue spelt with that letter. A cue without it is
/// matched by its ASCII spellings alone.
const ASCII_FOLDS: [(&str, u8); 2] = [("\u{17F}", b's'), ("\u{212A}", b'k')];

/// One cue as the automaton sees it: a lower-case string, the extractors
/// it cues in any case, and its spellings that cue only as written.
#[derive(Default)]
struct Pattern {
    caseless: u8,
    /// The extractors it cues in any case where its ends are ends of a
    /// word, by which ends must be.
    bounded: Vec<(Edges, u8)>,
    /// Its spellings, each with the ends that must be ends of a word.
    exact: Vec<(String, Edges, u8)>,
}

/// What reaching one state of the automaton adds to a [`Cued`]: the
/// extractors of the caseless cues that end there (already in the high
/// byte), and the cues that count only where the text around them agrees.
#[derive(Clone, Default)]
struct Reached {
    caseless: u16,
    /// Indices into [`Automaton::conditions`].
    conditions: std::ops::Range<usize>,
}

/// A cue ending at a state that counts only where its check holds, and
/// the bits it then adds, laid out as in [`Cued`].
struct Condition {
    check: Check,
    cued: u16,
}

enum Check {
    /// An exact cue: these bytes are the ones written, standing where
    /// `edges` ask.
    Written { bytes: Box<[u8]>, edges: Edges },
    /// A caseless cue this many bytes long stands where `edges` ask.
    Word { len: usize, edges: Edges },
}

/// The automaton, and for each of its states what reaching it adds.
struct Automaton {
    dfa: DFA,
    /// Where every search starts.
    start: StateID,
    /// By state id shifted right by `shift`: read flat when a search
    /// reaches a match state, instead of going from the state to its
    /// patterns and from each pattern to its spellings. Empty for states
    /// that match nothing.
    reached: Vec<Reached>,
    shift: u32,
    conditions: Vec<Condition>,
    /// Extractors whose matches need a digit.
    need_digit: u8,
}

static AUTOMATON: LazyLock<Automaton> = LazyLock::new(Automaton::new);

impl Automaton {
    /// One automaton ignoring ASCII case for both kinds of cue: a text is
    /// read once, and an exact cue is checked against its spellings only
    /// where its letters were found.
    fn new() -> Self {
        let mut keys: Vec<String> = Vec::new();
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut need_digit = 0;
        // The extractors with a caseless cue spelt with each letter of
        // ASCII_FOLDS.
        let mut folded = [0; ASCII_FOLDS.len()];
        for extractor in Extractor::ALL {
            let cues = extractor.cues();
            let bit = extractor.bit();
            let edges = cues.exact_edges;
            for word in cues.exact {
                let spellings = &mut pattern(&mut keys, &mut patterns, &word).exact;
                match spellings
                    .iter_mut()
                    .find(|(w, e, _)| *w == word && *e == edges)
                {
                    Some((_, _, bits)) => *bits |= bit,
                    None => spellings.push((word, edges, bit)),
                }
            }
            for word in cues.caseless {
                for ((_, letter), extractors) in ASCII_FOLDS.iter().zip(&mut folded) {
                    if word.bytes().any(|b| b.eq_ignore_ascii_case(letter)) {
                        *extractors |= bit;
                    }
                }
                let pattern = pattern(&mut keys, &mut patterns, &word);
                let edges = cues.caseless_edges;
                if edges == Edges::ANYWHERE {
                    pattern.caseless |= bit;
                } else if let Some((_, bits)) =
                    pattern.bounded.iter_mut().find(|(e, _)| *e == edges)
                {
                    *bits |= bit;
                } else {
                    pattern.bounded.push((edges, bit));
                }
            }
            if cues.needs_digit {
                need_digit |= bit;
            }
        }
        for ((fold, _), extractors) in ASCII_FOLDS.iter().zip(folded) {
            pattern(&mut keys, &mut patterns, fold).caseless |= extractors;
        }
        let dfa = build(&keys);
        let start = match dfa.start_state(Anchored::No) {
            Ok(start) => start,
            Err(error) => panic!("enrichment cues without an unanchored start: {error}"),
        };
        let states = reachable_states(&dfa, start);
        // State ids are multiples of the automaton's stride (a power of
        // two): shifted right by the largest power of two that divides them
        // all (the trailing zeros they share), they stay distinct and index
        // a table without gaps.
        let shift = states
            .iter()
            .fold(0, |any, sid| any | sid.as_usize())
            .trailing_zeros()
            .min(usize::BITS - 1);
        let last = states.iter().map(|sid| sid.as_usize() >> shift).max();
        let mut reached = vec![Reached::default(); last.map_or(0, |last| last + 1)];
        let mut conditions = Vec::new();
        for &sid in states.iter().filter(|&&sid| dfa.is_match(sid)) {
            let first = conditions.len();
            let mut caseless = 0;
            for index in 0..dfa.match_len(sid) {
                let id = dfa.match_pattern(sid, index);
                let Some(pattern) = patterns.get(id.as_usize()) else {
                    continue;
                };
                caseless |= u16::from(pattern.caseless) << 8;
                let len = dfa.pattern_len(id);
                conditions.extend(pattern.bounded.iter().map(|&(edges, bits)| Condition {
                    check: Check::Word { len, edges },
                    cued: u16::from(bits) << 8,
                }));
                conditions.extend(
                    pattern
                        .exact
                        .iter()
                        .map(|(spelling, edges, cued)| Condition {
                            check: Check::Written {
                                bytes: spelling.as_bytes().into(),
                                edges: *edges,
                            },
                            cued: u16::from(*cued),
                        }),
                );
            }
            if let Some(slot) = reached.get_mut(sid.as_usize() >> shift) {
                *slot = Reached {
                    caseless,
                    conditions: first..conditions.len(),
                };
            }
        }
        Automaton {
            dfa,
            start,
            reached,
            shift,
            conditions,
            need_digit,
        }
    }
}

/// Every state a search from `start` can reach.
fn reachable_states(dfa: &DFA, start: StateID) -> Vec<StateID> {
    let mut seen = std::collections::HashSet::from([start]);
    let mut pending = vec![start];
    while let Some(sid) = pending.pop() {
        for byte in 0..=u8::MAX {
            let next = dfa.next_state(Anchored::No, sid, byte);
            if seen.insert(next) {
                pending.push(next);
            }
        }
    }
    seen.into_iter().collect()
}

/// The pattern keyed by `word` in lower case, added when new.
fn pattern<'p>(
    keys: &mut Vec<String>,
    patterns: &'p mut Vec<Pattern>,
    word: &str,
) -> &'p mut Pattern {
    let key = word.to_ascii_lowercase();
    let at = match keys.iter().position(|k| *k == key) {
        Some(at) => at,
        None => {
            keys.push(key);
            patterns.push(Pattern::default());
            patterns.len() - 1
        }
    };
    &mut patterns[at]
}

/// Builds the automaton over constant patterns. Overlapping search needs
/// the standard match kind: a cue inside another extractor's cue ("SE" in
/// "SEP") must still be seen. Without a prefilter the special states are
/// the match states and the dead state. A failure is a bug in this module,
/// caught by every test that enriches, never a property of the input.
fn build(patterns: &[String]) -> DFA {
    match DFA::builder()
        .match_kind(MatchKind::Standard)
        .ascii_case_insensitive(true)
        .prefilter(false)
        .build(patterns)
    {
        Ok(dfa) => dfa,
        Err(error) => panic!("invalid enrichment cues: {error}"),
    }
}

/// How many texts [`Cued::of_each`] reads side by side.
const LANES: usize = 4;

impl Automaton {
    /// Reads `text` from `at` in state `sid`, adding the extractors of
    /// every cue found to `bits` (laid out as in [`Cued`]).
    fn scan(&self, text: &[u8], at: usize, mut sid: StateID, bits: &mut u16) {
        for (end, &byte) in text.iter().enumerate().skip(at) {
            sid = self.dfa.next_state(Anchored::No, sid, byte);
            if self.dfa.is_special(sid) {
                self.record(sid, text, end + 1, bits);
            }
        }
    }

    /// Adds the extractors of the cues that end at `end` (the match state
    /// `sid` names them) to `bits`, laid out as in [`Cued`]; an exact cue
    /// counts only where its spelling is the one written. The dead state
    /// is special too, and adds nothing.
    #[inline(never)]
    fn record(&self, sid: StateID, text: &[u8], end: usize, bits: &mut u16) {
        let Some(reached) = self.reached.get(sid.as_usize() >> self.shift) else {
            return;
        };
        *bits |= reached.caseless;
        let written = text.get(..end).unwrap_or_default();
        let conditions = self.conditions.get(reached.conditions.clone());
        for condition in conditions.unwrap_or_default() {
            let holds = match &condition.check {
                Check::Written { bytes, edges } => {
                    ends_with(written, bytes)
                        && end
                            .checked_sub(bytes.len())
                            .is_some_and(|start| edges.hold(text, start, end))
                }
                Check::Word { len, edges } => end
                    .checked_sub(*len)
                    .is_some_and(|start| edges.hold(text, start, end)),
            };
            if holds {
                *bits |= condition.cued;
            }
        }
    }

    /// What `bits`, found in `text`, leaves of `wanted`: extractors whose
    /// matches need a digit are dropped from a text without one.
    fn finish(&self, text: &[u8], mut bits: u16, wanted: Cued) -> Cued {
        let need_digit = u16::from(self.need_digit) * 0x0101;
        if bits & need_digit != 0 && !text.iter().any(u8::is_ascii_digit) {
            bits &= !need_digit;
        }
        Cued(bits & wanted.0)
    }
}

/// Whether `text` ends with `suffix`. Cue spellings are a few bytes long,
/// and a loop over them costs less than the call to `memcmp` that
/// `ends_with` makes.
fn ends_with(text: &[u8], suffix: &[u8]) -> bool {
    text.len() >= suffix.len()
        && text[text.len() - suffix.len()..]
            .iter()
            .zip(suffix)
            .all(|(a, b)| a == b)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Texts glued from up to `max` of `pieces`, with nothing between them:
/// cue words running into the letters around them, for the tests that
/// check each extractor's cues are necessary.
#[cfg(test)]
pub(super) fn glued(
    pieces: &'static [&'static str],
    max: usize,
) -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::strategy::Strategy as _;
    proptest::collection::vec(proptest::sample::select(pieces), 0..max)
        .prop_map(|pieces| pieces.concat())
}

/// The extractors a sentence holds cues of: one bit per extractor in the
/// low byte when it holds one of its exact cues as written, and the same
/// bit in the high byte when it holds one of its caseless cues. An
/// extractor with patterns of both kinds learns which kind of match the
/// sentence may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cued(u16);

impl Cued {
    /// No extractor.
    pub const NONE: Cued = Cued(0);

    /// A set of extractors to look for.
    pub fn only(extractors: impl IntoIterator<Item = Extractor>) -> Cued {
        Cued(
            extractors
                .into_iter()
                .fold(0, |bits, e| bits | e.cued_bits()),
        )
    }

    /// The extractors of `wanted` that `text` holds cues of, read in one
    /// pass (none when nothing is wanted).
    pub fn of(text: &str, wanted: Cued) -> Cued {
        if wanted == Cued::NONE {
            return Cued::NONE;
        }
        let automaton = &*AUTOMATON;
        let mut bits = 0;
        automaton.scan(text.as_bytes(), 0, automaton.start, &mut bits);
        automaton.finish(text.as_bytes(), bits, wanted)
    }

    /// [`Cued::of`] for each of `texts`, in order. The texts are read
    /// [`LANES`] at a time, a byte of each in turn: one text's automaton
    /// steps wait on each other (every state is read from the one before),
    /// while steps in different texts do not, so the processor overlaps
    /// them.
    pub fn of_each(texts: &[&str], wanted: Cued) -> Vec<Cued> {
        let mut cued = vec![Cued::NONE; texts.len()];
        if wanted == Cued::NONE {
            return cued;
        }
        let automaton = &*AUTOMATON;
        let dfa = &automaton.dfa;
        // Each lane: the index of its text, how far it is read, its state
        // and what it found so far.
        let mut index = [0usize; LANES];
        let mut at = [0usize; LANES];
        let mut sid = [automaton.start; LANES];
        let mut bits = [0u16; LANES];
        let mut reading = [false; LANES];
        let mut pending = (0..texts.len()).filter(|&i| !texts[i].is_empty());
        for lane in 0..LANES {
            if let Some(next) = pending.next() {
                index[lane] = next;
                reading[lane] = true;
            }
        }
        while reading.iter().all(|&r| r) {
            let text = index.map(|i| texts[i].as_bytes());
            let steps = (0..LANES)
                .map(|lane| text[lane].len() - at[lane])
                .min()
                .unwrap_or_default();
            let window: [&[u8]; LANES] =
                std::array::from_fn(|lane| &text[lane][at[lane]..at[lane] + steps]);
            // One byte of every lane per step: the lanes' windows are read
            // at the same index, which an iterator over one would hide.
            #[expect(clippy::needless_range_loop)]
            for step in 0..steps {
                for lane in 0..LANES {
                    sid[lane] = dfa.next_state(Anchored::No, sid[lane], window[lane][step]);
                    if dfa.is_special(sid[lane]) {
                        let end = at[lane] + step + 1;
                        automaton.record(sid[lane], text[lane], end, &mut bits[lane]);
                    }
                }
            }
            for lane in 0..LANES {
                at[lane] += steps;
                if at[lane] < text[lane].len() {
                    continue;
                }
                cued[index[lane]] = automaton.finish(text[lane], bits[lane], wanted);
                match pending.next() {
                    Some(next) => {
                        index[lane] = next;
                        at[lane] = 0;
                        sid[lane] = automaton.start;
                        bits[lane] = 0;
                    }
                    None => reading[lane] = false,
                }
            }
        }
        // Too few texts are left to fill the lanes: each is read alone.
        for lane in (0..LANES).filter(|&lane| reading[lane]) {
            let text = texts[index[lane]].as_bytes();
            automaton.scan(text, at[lane], sid[lane], &mut bits[lane]);
            cued[index[lane]] = automaton.finish(text, bits[lane], wanted);
        }
        cued
    }

    /// Whether `text` may hold a match of `extractor`.
    pub fn may_match(self, extractor: Extractor) -> bool {
        self.0 & extractor.cued_bits() != 0
    }

    /// Whether `text` holds one of the exact cues of `extractor` as
    /// written.
    pub fn has_exact_cue(self, extractor: Extractor) -> bool {
        self.0 & u16::from(extractor.bit()) != 0
    }

    /// Whether `text` holds one of the caseless cues of `extractor` (or a
    /// character that folds to a letter of one, see [`ASCII_FOLDS`]): an
    /// extractor whose patterns need a word as well as a quotation mark
    /// may skip them without it.
    pub fn has_caseless_cue(self, extractor: Extractor) -> bool {
        self.0 & (u16::from(extractor.bit()) << 8) != 0
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy as _;

    use super::*;

    fn every(text: &str) -> Cued {
        Cued::of(text, Cued::only(Extractor::ALL))
    }

    fn cued(text: &str) -> Vec<Extractor> {
        let cued = every(text);
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
    fn only_wanted_extractors_are_cued() {
        let text = "signed on March 3, 2020 by Acme Inc.";
        assert_eq!(Cued::of(text, Cued::NONE), Cued::NONE);
        let dates = Cued::of(text, Cued::only([Extractor::Dates]));
        assert!(dates.may_match(Extractor::Dates));
        assert!(!dates.may_match(Extractor::Organizations));
    }

    #[test]
    fn caseless_cues_are_told_from_exact_ones() {
        use Extractor::Definitions;
        let both = every("\u{201c}Affiliate\u{201d} MEANS any");
        assert!(both.has_exact_cue(Definitions) && both.has_caseless_cue(Definitions));
        let quoted = every("\u{201c}Affiliate\u{201d} shall be");
        assert!(quoted.may_match(Definitions));
        assert!(quoted.has_exact_cue(Definitions) && !quoted.has_caseless_cue(Definitions));
        let meaning = every("Affiliate MEANS any");
        assert!(meaning.may_match(Definitions));
        assert!(!meaning.has_exact_cue(Definitions) && meaning.has_caseless_cue(Definitions));
        // Only wanted extractors are answered for, in either byte.
        let unwanted = Cued::of("\"X\" means", Cued::only([Extractor::Dates]));
        assert!(!unwanted.has_exact_cue(Definitions));
        assert!(!unwanted.has_caseless_cue(Definitions));
    }

    /// Every cue, read through the automaton's table of reached states,
    /// cues its extractor: exact ones as written, caseless ones in any
    /// case.
    #[test]
    fn every_cue_cues_its_extractor() {
        for extractor in Extractor::ALL {
            let cues = extractor.cues();
            let wanted = Cued::only([extractor]);
            for word in &cues.exact {
                let cued = Cued::of(&format!("{word} 5"), wanted);
                assert!(cued.has_exact_cue(extractor), "{extractor:?} {word:?}");
            }
            for word in &cues.caseless {
                for written in [word.to_ascii_lowercase(), word.to_ascii_uppercase()] {
                    let cued = Cued::of(&format!("{written} 5"), wanted);
                    assert!(
                        cued.has_caseless_cue(extractor),
                        "{extractor:?} {written:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn digit_extractors_need_a_digit() {
        assert!(!every("in March").may_match(Extractor::Dates));
        assert!(!every("per cent").may_match(Extractor::Percentages));
    }

    #[test]
    fn exact_cues_keep_their_case() {
        // "sep" in lower case is no month; "fy" is no fiscal year.
        assert!(!every("a separate 2 satisfy").may_match(Extractor::Dates));
        assert!(!every("satisfy 2").may_match(Extractor::FiscalPeriods));
        assert!(!every("inc 5 gmbh").may_match(Extractor::Organizations));
    }

    #[test]
    fn words_that_must_stand_whole_do_not_cue_inside_others() {
        assert!(!every("Europe's 5 states").may_match(Extractor::Money));
        assert!(every("5 euro.").may_match(Extractor::Money));
        assert!(!every("a percentage of 5").may_match(Extractor::Percentages));
        assert!(!every("on behalf of 2024's quarterly").may_match(Extractor::FiscalPeriods));
        assert!(every("half 2024").may_match(Extractor::FiscalPeriods));
        assert!(!every("NASA's 5 USA GSAs").may_match(Extractor::Organizations));
        assert!(every("Acme Inc.").may_match(Extractor::Organizations));
    }

    #[test]
    fn a_cue_inside_another_cue_is_seen() {
        // "/1" (a numeric date) and "1H" (a half year) share their "1".
        let cued = every("due 3/1H 2020");
        assert!(cued.may_match(Extractor::Dates));
        assert!(cued.may_match(Extractor::FiscalPeriods));
        // "SE" (a suffix) and "SEP" (a month) start at the same place, and
        // "SE" is cued where it is a word of its own.
        assert!(!every("SEPT 5, 2020").may_match(Extractor::Organizations));
        assert!(every("SEPT 5, 2020 Acme SE").may_match(Extractor::Organizations));
    }

    /// Pieces of text around the cues: cues in several cases, digits,
    /// characters outside ASCII, plain words.
    const PIECES: &[&str] = &[
        "Sept", "SEP", "sep", "SE", "se", "ction", "Section ", "5", "2020", " ", "-", "/", "Inc.",
        "Inc", "GmbH", "\u{201c}", "\"", "means ", "per", "cent", "%", "$", "\u{20ac}", "FY", "Q3",
        "quarter", "\u{17f}", "\u{212a}", "\u{e9}", "the ", "crowd", "part", "annex", ".",
    ];

    proptest::proptest! {
        #[test]
        fn texts_read_side_by_side_are_cued_as_each_alone(
            texts in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(PIECES), 0..16)
                    .prop_map(|pieces| pieces.concat()),
                0..12,
            ),
            wanted in proptest::collection::vec(proptest::sample::select(&Extractor::ALL[..]), 0..4),
        ) {
            let wanted = Cued::only(wanted);
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let alone: Vec<Cued> = texts.iter().map(|text| Cued::of(text, wanted)).collect();
            proptest::prop_assert_eq!(Cued::of_each(&texts, wanted), alone);
        }
    }

    #[test]
    fn characters_that_fold_to_ascii_cue_the_extractors_spelt_with_their_letter() {
        // "ſection" matches `(?i:section)`; no ASCII-caseless cue sees it.
        assert!(every("ſection 5").may_match(Extractor::References));
        let caseless = regex::Regex::new("(?i:section)").expect("a valid pattern");
        assert!(caseless.is_match("ſection"));
        // Every caseless cue, with its "s" or "k" written as the character
        // that folds to it, is still cued.
        for extractor in Extractor::ALL {
            for word in extractor.cues().caseless {
                for (fold, letter) in ASCII_FOLDS {
                    let letters = [char::from(letter), char::from(letter.to_ascii_uppercase())];
                    let folded = word.replace(letters, fold);
                    let cued = every(&format!("{folded} 5"));
                    assert!(cued.has_caseless_cue(extractor), "{folded:?}");
                }
            }
        }
        // No stem of a verb of meaning holds an "s" or a "k": a long s cues
        // no explicit definition, a quotation mark still an inline one.
        let long_s = every("\"X\" \u{17f}aid");
        assert!(long_s.has_exact_cue(Extractor::Definitions));
        assert!(!long_s.has_caseless_cue(Extractor::Definitions));
    }
}
