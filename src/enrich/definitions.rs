//! Defined terms, and which sentences define them.
//!
//! Two forms of definition are told apart, because retrieval weighs them
//! differently:
//!
//! * **explicit**: the sentence states what a term means — `"Net Sales"
//!   shall mean …`, `“Affiliate” or “Affiliates” means …`, `"Term" has the
//!   meaning …`, `As used herein, "Site" refers to …`, and the unquoted
//!   `Confidential Information means …` at the start of a sentence;
//! * **inline**: the sentence introduces a label for something it names —
//!   `(the "Agreement")`, `(hereinafter "HDI")`, `("Site")`, `(each, a
//!   "Party")`, `shall be referred to as a "Party"`.
//!
//! A quoted word alone is not a definition: `items branded "Deerskin"`
//! uses a word, it defines nothing. A parenthesis counts only when every
//! word in it outside the quotes is a labelling word ("the", "each",
//! "collectively", "hereinafter", …), so `(see "Pricing" below)` does not.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::cues::{Cued, Cues, Edges, Extractor};
use super::{compile, dedup_in_order};

/// How a sentence defines its terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DefinitionForm {
    /// The sentence states the meaning of a term ("X" means …).
    Explicit,
    /// The sentence introduces a label in passing ((the "Agreement")).
    Inline,
}

/// The terms one sentence defines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Definitions {
    pub terms: Vec<String>,
    /// The strongest form among the sentence's definitions (explicit over
    /// inline), `None` when it defines nothing.
    pub form: Option<DefinitionForm>,
}

/// A quoted stretch: straight or curly double quotes, or curly single
/// quotes (straight single quotes are apostrophes far too often). The
/// quoted text neither starts nor ends with a space, so that the gap
/// between two quoted words (`"include," "includes"`) is not read as a
/// quotation of its own.
const QUOTED: &str = r#"(?:"(?:[^\s"“”]|[^\s"“”][^"“”\n]{0,78}[^\s"“”])"|“(?:[^\s"“”]|[^\s"“”][^"“”\n]{0,78}[^\s"“”])”|‘(?:[^\s‘’]|[^\s‘’][^‘’\n]{0,78}[^\s‘’])’)"#;

const MEANING_VERB: &str = r"(?i:shall\s+mean|means|mean|shall\s+have\s+the\s+meanings?|ha(?:s|ve)\s+the\s+meanings?|shall\s+refer\s+to|refers?\s+to|(?:is|are|shall\s+be)\s+defined\s+as|shall\s+include|includes)(?-u:\b)";

static EXPLICIT: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r"(?P<terms>{QUOTED}(?:\s*(?:,|(?:,\s*)?(?:and/or|and|or))\s*{QUOTED})*)\s*,?\s*(?:\([^()]{{0,60}}\)\s*)?(?:(?i:as\s+used\s+(?:herein|in\s+this\s+\w+)),?\s*)?{MEANING_VERB}"
    ))
});

/// An unquoted capitalised term that opens a sentence and is followed by
/// "means"/"shall mean": "Confidential Information means …".
static EXPLICIT_UNQUOTED: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^(?:(?i:the\s+term)\s+)?(?P<term>\p{Lu}[\p{L}\p{N}'’\-]*(?:\s+\p{Lu}[\p{L}\p{N}'’\-]*){0,5})\s+(?i:shall\s+mean|means)(?-u:\b)",
    )
});

/// The stems of every verb in [`MEANING_VERB`]. None is spelt with an "s"
/// or a "k", so under `(?i)` only their ASCII spellings match them.
const MEANING_STEMS: [&str; 4] = ["mean", "refer", "defined", "includ"];

/// The marks that open [`QUOTED`].
const QUOTATION_MARKS: [char; 3] = ['"', '“', '‘'];

static MEANING_HINT: LazyLock<Regex> =
    LazyLock::new(|| compile(&format!("(?i:{})", MEANING_STEMS.join("|"))));

static REFERRED_AS: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r"(?i:referred\s+to\s+(?:herein\s+|hereinafter\s+|below\s+)?as)\s+(?:(?i:the|a|an)\s+)?(?P<term>{QUOTED})"
    ))
});

static QUOTE: LazyLock<Regex> = LazyLock::new(|| compile(QUOTED));

/// Words that may stand beside the quoted label inside a defining
/// parenthesis.
const LABEL_WORDS: &[&str] = &[
    "a",
    "also",
    "an",
    "and",
    "and/or",
    "as",
    "being",
    "called",
    "collectively",
    "each",
    "hereafter",
    "hereinafter",
    "herein",
    "individually",
    "jointly",
    "known",
    "or",
    "referred",
    "respectively",
    "sometimes",
    "the",
    "to",
    "together",
];

/// Words that open sentences rather than name terms.
const NOT_TERMS: &[&str] = &[
    "the", "this", "that", "these", "those", "it", "such", "each", "which", "what", "who",
];

/// What a sentence that defines a term contains: one of the
/// [`QUOTATION_MARKS`] as written (the exact cues), or one of the
/// [`MEANING_STEMS`] in any case (the caseless ones). Explicit definitions
/// need both, unquoted ones a verb of meaning, inline ones a quotation.
/// The two kinds are exactly the two halves of [`Holds`], so the cue
/// screen answers both without a search.
pub(super) fn cues() -> Cues {
    Cues {
        exact: QUOTATION_MARKS.map(String::from).to_vec(),
        caseless: MEANING_STEMS.map(String::from).to_vec(),
        exact_edges: Edges::ANYWHERE,
        caseless_edges: Edges::ANYWHERE,
        needs_digit: false,
    }
}

/// Which halves of a definition a sentence holds; the full patterns run
/// only where theirs are there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Holds {
    /// One of the [`QUOTATION_MARKS`].
    pub quotation: bool,
    /// One of the [`MEANING_STEMS`], in any case.
    pub meaning: bool,
}

impl Holds {
    /// What the cue screen read: the exact cues of definitions are the
    /// quotation marks, the caseless ones the stems.
    pub(super) fn cued(cued: Cued) -> Holds {
        Holds {
            quotation: cued.has_exact_cue(Extractor::Definitions),
            meaning: cued.has_caseless_cue(Extractor::Definitions),
        }
    }
}

/// The terms a sentence defines and how.
pub fn find_definitions(text: &str) -> Definitions {
    let holds = Holds {
        quotation: text.contains(QUOTATION_MARKS),
        meaning: MEANING_HINT.is_match(text),
    };
    find_held_definitions(text, holds)
}

/// [`find_definitions`] for a sentence whose [`Holds`] are known, from the
/// enrichment cue screen: its exact and caseless cues of definitions.
pub(super) fn find_held_definitions(text: &str, holds: Holds) -> Definitions {
    let mut out = Definitions::default();
    let Holds {
        quotation: quoted,
        meaning,
    } = holds;
    if quoted && meaning {
        for caps in EXPLICIT.captures_iter(text) {
            if let Some(terms) = caps.name("terms")
                && push_quoted_terms(&mut out.terms, terms.as_str())
            {
                out.form = Some(DefinitionForm::Explicit);
            }
        }
    }
    if out.form.is_none()
        && meaning
        && holds_mean(text)
        && let Some(term) = EXPLICIT_UNQUOTED
            .captures(text)
            .and_then(|caps| caps.name("term"))
        && !term
            .as_str()
            .split_whitespace()
            .next()
            .is_some_and(|first| NOT_TERMS.iter().any(|n| n.eq_ignore_ascii_case(first)))
    {
        push_term(&mut out.terms, term.as_str());
        out.form = Some(DefinitionForm::Explicit);
    }
    if !quoted {
        return out;
    }
    let mut inline = false;
    // The inside is read off each match, without the captures engine.
    for inside in parentheses(text) {
        if is_label_parenthesis(inside) {
            inline |= push_quoted_terms(&mut out.terms, inside);
        }
    }
    // "referred to as" holds "refer", a stem of a verb of meaning.
    let referred = meaning.then(|| REFERRED_AS.captures_iter(text));
    for caps in referred.into_iter().flatten() {
        if let Some(term) = caps.name("term") {
            inline |= push_quoted_terms(&mut out.terms, term.as_str());
        }
    }
    if inline && out.form.is_none() {
        out.form = Some(DefinitionForm::Inline);
    }
    dedup_in_order(&mut out.terms);
    out
}

/// Whether `text` holds "mean" in any case, as both verbs of
/// [`EXPLICIT_UNQUOTED`] do. No letter of it has a spelling outside ASCII
/// under `(?i)`.
fn holds_mean(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr2_iter(b'm', b'M', bytes).any(|at| {
        bytes
            .get(at + 1..at + 4)
            .is_some_and(|rest| rest.eq_ignore_ascii_case(b"ean"))
    })
}

/// Longest text, in characters, a parenthesis may hold to be read.
const MAX_PARENTHESIS: usize = 200;

/// What the parentheses of `text` hold, left to right: each `(` whose next
/// bracket is a `)`, with one to [`MAX_PARENTHESIS`] characters between.
/// A nested or unclosed one yields nothing, and the search goes on from
/// the next `(`.
fn parentheses(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let open = from + memchr::memchr(b'(', bytes.get(from..)?)?;
            let inner = open + 1;
            let close = inner + memchr::memchr2(b'(', b')', bytes.get(inner..)?)?;
            from = if bytes.get(close) == Some(&b')') {
                close + 1
            } else {
                close
            };
            let inside = text.get(inner..close)?;
            let fits = inside.len() <= MAX_PARENTHESIS || inside.chars().count() <= MAX_PARENTHESIS;
            if bytes.get(close) == Some(&b')') && !inside.is_empty() && fits {
                return Some(inside);
            }
        }
    })
}

/// Whether a parenthesis holds a quoted label and otherwise only labelling
/// words.
fn is_label_parenthesis(inside: &str) -> bool {
    // Every quotation opens with one of the marks; most parentheses hold
    // none, and a scan for them costs less than the pattern.
    if !inside.contains(QUOTATION_MARKS) || !QUOTE.is_match(inside) {
        return false;
    }
    QUOTE.split(inside).all(|outside| {
        outside
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':'))
            .filter(|w| !w.is_empty())
            .all(|w| LABEL_WORDS.iter().any(|l| l.eq_ignore_ascii_case(w)))
    })
}

/// Adds every quoted term of `text`; returns whether any was added.
fn push_quoted_terms(terms: &mut Vec<String>, text: &str) -> bool {
    let mut added = false;
    for quoted in QUOTE.find_iter(text) {
        let inner = quoted
            .as_str()
            .trim_start_matches(QUOTATION_MARKS)
            .trim_end_matches(['"', '”', '’']);
        added |= push_term(terms, inner);
    }
    added
}

/// Adds a cleaned term unless it is empty or too long to be a term
/// (duplicates are removed once the sentence is read).
fn push_term(terms: &mut Vec<String>, raw: &str) -> bool {
    // American style puts the comma inside the quotes: `"Agreement,"`.
    let term = raw.trim().trim_end_matches([',', '.', ';', ':']).trim();
    let plausible = term.chars().next().is_some_and(char::is_alphanumeric)
        && term.split_whitespace().count() <= 10;
    if plausible {
        terms.push(term.to_string());
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines(text: &str) -> (Vec<String>, Option<DefinitionForm>) {
        let d = find_definitions(text);
        (d.terms, d.form)
    }

    #[test]
    fn explicit_definitions() {
        use DefinitionForm::Explicit;
        assert_eq!(
            defines(r#""Net Sales" shall mean all revenue."#),
            (vec!["Net Sales".into()], Some(Explicit))
        );
        assert_eq!(
            defines("“Affiliate” or “Affiliates” means any entity."),
            (
                vec!["Affiliate".into(), "Affiliates".into()],
                Some(Explicit)
            )
        );
        assert_eq!(
            defines(r#""Term" has the meaning given in Section 2."#),
            (vec!["Term".into()], Some(Explicit))
        );
        assert_eq!(
            defines(r#"As used herein, "Site" refers to the web site."#),
            (vec!["Site".into()], Some(Explicit))
        );
        assert_eq!(
            defines("Confidential Information means any data disclosed."),
            (vec!["Confidential Information".into()], Some(Explicit))
        );
        assert_eq!(
            defines(r#""Content," as used herein, means text."#).0,
            ["Content"]
        );
    }

    #[test]
    fn inline_definitions() {
        use DefinitionForm::Inline;
        let (terms, form) = defines(
            r#"This AGREEMENT (the "Agreement") is made between Hanover Direct, Inc. (hereinafter "HDI") and The Deerskin Companies, Inc. (each, a "Party") on the web ("Site")."#,
        );
        assert_eq!(terms, ["Agreement", "HDI", "Party", "Site"]);
        assert_eq!(form, Some(Inline));
        assert_eq!(
            defines(r#"Each of the parties shall be referred to as a "Party"."#),
            (vec!["Party".into()], Some(Inline))
        );
        assert_eq!(
            defines(r#"(individually a "Party" and collectively the "Parties")"#).0,
            ["Party", "Parties"]
        );
    }

    #[test]
    fn quoted_words_that_define_nothing() {
        assert_eq!(
            defines(r#"closeout merchandise identified as "Deerskin" branded items"#),
            (vec![], None)
        );
        assert_eq!(defines(r#"(see "Pricing" below)"#), (vec![], None));
        assert_eq!(defines("The Company means business."), (vec![], None));
        assert_eq!(defines("It means nothing."), (vec![], None));
        assert_eq!(defines("the meaning of life"), (vec![], None));
        assert_eq!(
            defines(r#"Reference to "include," "includes" and "including" shall be deemed"#),
            (vec![], None)
        );
        // Both forms in one sentence: explicit wins.
        assert_eq!(
            defines(r#""Products" (the "Goods") means the goods."#).1,
            Some(DefinitionForm::Explicit)
        );
    }

    proptest::proptest! {
        /// The parentheses are those the pattern `\([^()]{1,200}\)` finds,
        /// left to right, without overlaps.
        #[test]
        fn parentheses_are_those_the_pattern_finds(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "(", ")", "((", "))", "()", "x", "the \"Company\"", " ", "é",
                    "a".repeat(100).leak(), "é".repeat(60).leak(),
                ]),
                0..16,
            )
        ) {
            let text = pieces.concat();
            let pattern = regex::Regex::new(r"\(([^()]{1,200})\)").expect("a valid pattern");
            let expected: Vec<&str> = pattern
                .captures_iter(&text)
                .filter_map(|caps| caps.get(1).map(|m| m.as_str()))
                .collect();
            proptest::prop_assert_eq!(parentheses(&text).collect::<Vec<_>>(), expected);
        }

        /// "mean" is found as `(?i)mean` finds it.
        #[test]
        fn mean_is_found_in_any_case(text in "[mMeEaAnN xſK]{0,12}") {
            let pattern = regex::Regex::new("(?i)mean").expect("a valid pattern");
            proptest::prop_assert_eq!(holds_mean(&text), pattern.is_match(&text));
        }
    }
}
