//! Organisations named with a legal suffix: "Hanover Direct, Inc.",
//! "Contoso Ltd.", "Acme GmbH", "Wells Fargo Bank, N.A.".
//!
//! A name is a run of capitalised words (joined by "&", "of", "the", "de",
//! "van", …) followed by one or two legal suffixes, with or without a comma
//! before them ("Samsung Electronics Co., Ltd."). Runs pick up the words before the
//! name in running text, so they are trimmed:
//!
//! * the run is cut after its last *boundary word* — function words,
//!   document words and the roles of signatories and parties that open
//!   sentences, headings and signature lines but never sit inside a company
//!   name ("Between", "By", "This", "Agreement", "Counsel", "Licensee",
//!   …): "AGREEMENT BETWEEN HANOVER DIRECT, INC." yields "HANOVER DIRECT,
//!   INC.";
//! * a capitalised "The" that starts what is left is kept, since many legal
//!   names carry it ("The Deerskin Companies, Inc."); a name must have at
//!   least one word besides "The" ("The Company" is a defined term, not a
//!   name). At the start of a sentence "The" is kept too: there is no way
//!   to tell "The Acme Corp." from "The" + "Acme Corp." there, and keeping it
//!   is the rarer error;
//! * a run stops at a word that ends another name ("Inc.", "COMPANY"):
//!   signature blocks whose line breaks were lost run names together;
//! * the generic suffixes "Company", "Corporation", "Limited" and "Co." are
//!   ordinary words too, and a phrase ending in one is dropped when it
//!   reads as a description or a defined term: after a determiner ("a New
//!   Jersey Corporation", "the Operating Company"), after a comma
//!   ("Contractor, Company"), after a run-in upper-case heading
//!   ("INDEMNITY Company"), or with no other word ("Company LLC");
//! * two-letter suffixes that double as state codes ("NV", "AB") are not
//!   read after a comma ("Carson City, NV").

use std::sync::LazyLock;

use regex::Regex;

use super::cues::{Cues, Edges};
use super::{compile, dedup_in_order};

/// Legal suffixes as written. Title-case and upper-case spellings are both
/// accepted for the word-like ones.
const SUFFIXES: &[&str] = &[
    "Incorporated",
    "Inc.",
    "Inc",
    "Corporation",
    "Corp.",
    "Corp",
    "Company",
    "Co.",
    "Limited",
    "Ltd.",
    "Ltd",
    "Pty. Ltd.",
    "Pty Ltd.",
    "Pty Ltd",
    "L.L.C.",
    "LLC",
    "L.L.P.",
    "LLP",
    "L.P.",
    "LP",
    "PLC",
    "plc",
    "P.L.C.",
    "GmbH",
    "AG",
    "S.A.",
    "SA",
    "S.A.S.",
    "SAS",
    "S.p.A.",
    "SpA",
    "S.r.l.",
    "N.V.",
    "B.V.",
    "BV",
    "N.A.",
    "K.K.",
    "KK",
    "Oy",
    "AB",
    "A/S",
    "ASA",
    "SE",
];

/// Bare two-letter suffixes that double as state or province codes in
/// addresses ("Carson City, NV" is not an organisation; "Calgary, AB"
/// neither): after a comma they are not read as suffixes. ("NV" is left
/// out entirely: Nevada is far more frequent in English documents than a
/// Dutch "NV" without periods.)
const PLACE_LIKE_SUFFIXES: &[&str] = &["AB", "AG", "SA", "SE", "BV", "KK", "LP"];

/// Suffixes that are ordinary English words too; after a determiner they
/// describe ("a Delaware Corporation") rather than name.
const GENERIC_SUFFIXES: &[&str] = &["company", "corporation", "limited", "co."];

/// Words of legal forms; a name needs a word that is not one of these
/// ("Limited Liability Company" alone names no one).
const LEGAL_FORM_WORDS: &[&str] = &[
    "company",
    "companies",
    "corporation",
    "limited",
    "co.",
    "liability",
    "partnership",
];

/// Words that never sit inside a company name but often precede one in
/// running text, headings and signature blocks (compared case-insensitively).
const BOUNDARY_WORDS: &[&str] = &[
    "a",
    "about",
    "affiliate",
    "affiliates",
    "after",
    "agreement",
    "all",
    "also",
    "amended",
    "amendment",
    "among",
    "an",
    "and",
    "any",
    "as",
    "at",
    "attention",
    "attn",
    "be",
    "before",
    "between",
    "but",
    "buyer",
    "both",
    "by",
    "ceo",
    "cfo",
    "chairman",
    "chief",
    "contractor",
    "coo",
    "counsel",
    "customer",
    "dated",
    "dear",
    "director",
    "distributor",
    "during",
    "each",
    "either",
    "except",
    "executive",
    "exhibit",
    "for",
    "from",
    "furthermore",
    "however",
    "hereby",
    "if",
    "in",
    "including",
    "into",
    "its",
    "licensee",
    "licensor",
    "manager",
    "name",
    "neither",
    "no",
    "not",
    "notwithstanding",
    "now",
    "on",
    "or",
    "officer",
    "our",
    "parties",
    "party",
    "per",
    "president",
    "purchaser",
    "pursuant",
    "re",
    "reseller",
    "restated",
    "schedule",
    "secretary",
    "section",
    "seller",
    "shall",
    "should",
    "signed",
    "subject",
    "subsidiaries",
    "subsidiary",
    "such",
    "supplier",
    "that",
    "their",
    "therefore",
    "these",
    "this",
    "those",
    "title",
    "to",
    "treasurer",
    "under",
    "unless",
    "upon",
    "vendor",
    "via",
    "vice",
    "when",
    "whereas",
    "where",
    "while",
    "with",
    "within",
    "witnesseth",
    "your",
];

/// Lower-case words that may join capitalised words inside a name.
const CONNECTORS: &str = r"&|of|the|de|du|des|la|le|van|von|der|den|und|y";

/// One capitalised word of a name: initials ("U.S.", "J."), ordinary words
/// with inner punctuation ("Coca-Cola", "Xoom.com", "Macy's", "I/II"),
/// words capitalised on their second letter ("eGain", "iVillage"), and
/// words opening with a digit that contain a letter ("3M", "1-800-Flowers").
const NAME_WORD: &str = r"(?:\p{Lu}\.(?:\p{Lu}\.)*|\p{Ll}?\p{Lu}[\p{L}\p{N}'’&/\-]*(?:\.[\p{L}\p{N}]+)*|\p{N}[\p{N}\-]*\p{L}[\p{L}\p{N}\-]*(?:\.\p{L}+)*)";

/// Every spelling of every suffix, longest first, so that "Inc." wins over
/// "Inc" and "L.L.C." over "LLC".
fn suffix_spellings() -> Vec<String> {
    let mut spellings: Vec<String> = Vec::new();
    for suffix in SUFFIXES {
        spellings.push((*suffix).to_string());
        // Upper-case variants of the word-like suffixes: "INC.", "COMPANY".
        if suffix.chars().any(|c| c.is_ascii_lowercase()) {
            spellings.push(suffix.to_ascii_uppercase());
        }
    }
    spellings.sort_by_key(|s| std::cmp::Reverse(s.len()));
    spellings.dedup();
    spellings
}

/// What every match of [`SUFFIX_RUN`] contains: one of the suffixes'
/// spellings, matched case for case, a word of its own: whitespace stands
/// before it, and a word boundary after it where it ends in a letter
/// ([`suffix_alternation`]).
pub(super) fn cues() -> Cues {
    Cues {
        exact: suffix_spellings(),
        exact_edges: Edges::WHOLE,
        ..Cues::default()
    }
}

fn suffix_alternation() -> String {
    suffix_spellings()
        .iter()
        .map(|s| {
            // A suffix ending in a period needs no word boundary after it;
            // one ending in a letter does ("Inc" must not match "Income").
            let escaped = regex::escape(s);
            if s.ends_with('.') {
                escaped
            } else {
                format!(r"{escaped}(?-u:\b)")
            }
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// Legal suffixes with the separator before them: ", Inc.", " LLC",
/// " Co., Ltd.". The name is read backwards from each match.
static SUFFIX_RUN: LazyLock<Regex> = LazyLock::new(|| {
    let suffix = suffix_alternation();
    compile(&format!(
        r"(?P<joint>,?\s+)(?P<suffix>(?:{suffix})(?:,?\s+(?:{suffix}))?)"
    ))
});

static NAME_WORD_ALONE: LazyLock<Regex> = LazyLock::new(|| compile(&format!("^{NAME_WORD}$")));

/// Most name words a run takes before a suffix.
const MAX_NAME_WORDS: usize = 8;

/// The organisations a sentence names, in order of appearance, each once.
///
/// Suffixes are found first (a literal search); the name is then read
/// backwards word by word from each, so that the cost stays linear and
/// proportional to the number of suffixes, not to the sentence's length
/// times the length of a name.
pub fn find_organizations(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for caps in SUFFIX_RUN.captures_iter(text) {
        let (Some(joint), Some(suffix)) = (caps.name("joint"), caps.name("suffix")) else {
            continue;
        };
        let Some(start) = name_run_start(text, joint.start()) else {
            continue;
        };
        if let Some(organization) = accept(text, start, joint.start(), suffix.range()) {
            found.push(organization.to_string());
        }
    }
    dedup_in_order(&mut found);
    found
}

/// Where the run of name words that ends at `end` starts: capitalised
/// words, joined by at most two connectors in a row, at most
/// [`MAX_NAME_WORDS`] of them. The run stops at a word that ends another
/// name ("PHL VARIABLE INSURANCE COMPANY PHOENIX EQUITY PLANNING
/// CORPORATION" is two names whose line break was lost).
fn name_run_start(text: &str, end: usize) -> Option<usize> {
    let mut start = None;
    let (mut names, mut connectors) = (0, 0);
    for (offset, word) in words_before(text, end) {
        if ends_another_name(word) {
            break;
        }
        if NAME_WORD_ALONE.is_match(word) {
            start = Some(offset);
            names += 1;
            connectors = 0;
            if names == MAX_NAME_WORDS {
                break;
            }
        } else if names > 0 && connectors < 2 && CONNECTORS.split('|').any(|c| c == word) {
            connectors += 1;
        } else {
            break;
        }
    }
    start
}

/// The whitespace-separated words of `text[..end]`, last first, with
/// their byte offsets.
fn words_before(text: &str, end: usize) -> impl Iterator<Item = (usize, &str)> {
    let mut cursor = end;
    std::iter::from_fn(move || {
        let head = text.get(..cursor)?.trim_end();
        if head.is_empty() {
            return None;
        }
        let start = head
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        cursor = start;
        Some((start, head.get(start..)?))
    })
}

/// The organisation made of the name run `text[start..end]` and the suffix
/// at `suffix`, after trimming, or `None` when the rules of this module
/// reject it.
fn accept(text: &str, start: usize, end: usize, suffix: std::ops::Range<usize>) -> Option<&str> {
    let run = text.get(start..end)?;
    let kept = trim_name(run)?;
    let name_start = end - kept.len();
    let suffix_text = text.get(suffix.clone())?;
    let joint = text.get(end..suffix.start)?;
    let after_comma = joint.contains(',');
    if after_comma && PLACE_LIKE_SUFFIXES.contains(&suffix_text) {
        return None;
    }
    let generic = GENERIC_SUFFIXES
        .iter()
        .any(|g| suffix_text.eq_ignore_ascii_case(g));
    if generic
        && !generic_name_is_plausible(
            text.get(..name_start)?,
            kept,
            suffix_text,
            text.get(suffix.end..)?,
            after_comma,
        )
    {
        return None;
    }
    text.get(name_start..suffix.end)
}

/// The rules for names ending in a word that is also ordinary English
/// ("Company", "Corporation", "Limited"): such a phrase is a description
/// or a defined term unless
/// * it follows no determiner, inside or before the run ("a New Jersey
///   Corporation", "COVENANTS OF THE COMPANY"), and no connector directly
///   ("SERVICES OF COMPANY");
/// * no comma parts it from the name ("Contractor, Company");
/// * its words are not long upper-case words before a title-case suffix
///   (a run-in heading: "INDEMNITY Company");
/// * a title-case suffix is not followed by another capitalised word, which
///   makes it part of a longer proper name ("the Investment Company Act").
fn generic_name_is_plausible(
    before: &str,
    name: &str,
    suffix: &str,
    after: &str,
    after_comma: bool,
) -> bool {
    let words: Vec<&str> = name.split_whitespace().collect();
    let determiner_before = follows_determiner(before)
        || words.last().is_some_and(|w| {
            is_determiner(w) || CONNECTORS.split('|').any(|c| c.eq_ignore_ascii_case(w))
        });
    let title_suffix = suffix.chars().skip(1).any(|c| c.is_lowercase());
    let continued = title_suffix
        && after.starts_with(' ')
        && after
            .split_whitespace()
            .next()
            .is_some_and(|w| w.starts_with(char::is_uppercase));
    if continued {
        return false;
    }
    let shouting = title_suffix
        && words.iter().any(|w| {
            w.chars().filter(|c| c.is_alphabetic()).count() > 4
                && w.chars()
                    .filter(|c| c.is_alphabetic())
                    .all(char::is_uppercase)
        });
    !determiner_before && !after_comma && !shouting
}

/// Whether a word closes a name, so that a run read backwards stops
/// before it: a legal suffix other than the ones that also open names
/// ("Limited Brands, Inc.") or are two-letter codes ("SA", "AB").
fn ends_another_name(word: &str) -> bool {
    let bare = word.trim_end_matches(',');
    bare.len() > 2
        && !bare.eq_ignore_ascii_case("limited")
        && SUFFIXES.iter().filter(|s| !s.contains(' ')).any(|s| {
            // `bare` is `s` as written or `s` in capitals, compared
            // byte by byte without building the capitalised copy.
            *s == bare || bare.bytes().eq(s.bytes().map(|b| b.to_ascii_uppercase()))
        })
}

/// The part of a name run after its last boundary word, without leading
/// connectors, or `None` when nothing but "The" and words of legal forms
/// is left ("The Company", "Company" in "Company LLC", "Limited Liability
/// Company").
fn trim_name(run: &str) -> Option<&str> {
    // The last boundary word, read from the end.
    let start = words_before(run, run.len())
        .find(|(_, word)| {
            let bare = word.trim_end_matches([',', '.']);
            BOUNDARY_WORDS.iter().any(|b| b.eq_ignore_ascii_case(bare))
        })
        .map_or(0, |(offset, word)| offset + word.len());
    let mut kept = run.get(start..)?.trim_start();
    // "of Diamond State …" after a cut at a boundary word.
    while let Some((first, rest)) = kept.split_once(char::is_whitespace) {
        if CONNECTORS.split('|').any(|c| c == first) {
            kept = rest.trim_start();
        } else {
            break;
        }
    }
    let substantive = kept.split_whitespace().any(|w| {
        !w.eq_ignore_ascii_case("the")
            && !LEGAL_FORM_WORDS.iter().any(|g| w.eq_ignore_ascii_case(g))
    });
    substantive.then_some(kept)
}

fn is_determiner(word: &str) -> bool {
    ["a", "an", "the", "any", "such", "each", "another", "said"]
        .iter()
        .any(|d| d.eq_ignore_ascii_case(word))
}

/// Whether the text before a name ends with a determiner ("a", "an",
/// "the", "any", "such", "each").
fn follows_determiner(before: &str) -> bool {
    before
        .split_whitespace()
        .next_back()
        .is_some_and(is_determiner)
}

#[cfg(test)]
mod tests {
    use super::super::cues::{Cued, Extractor, glued};
    use super::*;

    #[test]
    fn names_with_legal_suffixes() {
        let text = "This Agreement is made between Hanover Direct, Inc. (\"HDI\"), a New Jersey \
                    Corporation, and The Deerskin Companies, Inc. (the \"Company\").";
        assert_eq!(
            find_organizations(text),
            ["Hanover Direct, Inc.", "The Deerskin Companies, Inc."]
        );
        for (text, name) in [
            ("Contoso Ltd. is at P.O. Box 123.", "Contoso Ltd."),
            ("sold to Acme GmbH last year", "Acme GmbH"),
            ("Foo LLC shall pay", "Foo LLC"),
            ("Bar Corp. agrees", "Bar Corp."),
            ("Baz S.A. agrees", "Baz S.A."),
            ("Qux plc agrees", "Qux plc"),
            (
                "paid to Wells Fargo Bank, N.A. as agent",
                "Wells Fargo Bank, N.A.",
            ),
            (
                "Samsung Electronics Co., Ltd. supplies",
                "Samsung Electronics Co., Ltd.",
            ),
            (
                "Bank of America Corporation lends",
                "Bank of America Corporation",
            ),
            ("Ernst & Young LLP audits", "Ernst & Young LLP"),
            ("Ford Motor Company builds", "Ford Motor Company"),
            ("Affiliate of Mehetia Inc.", "Mehetia Inc."),
            ("3M Company sells", "3M Company"),
            ("Société Générale S.A. lends", "Société Générale S.A."),
            (
                "by eGain Communications Corporation",
                "eGain Communications Corporation",
            ),
            (
                "and Blackstone Holdings I/II GP L.L.C.",
                "Blackstone Holdings I/II GP L.L.C.",
            ),
            (
                "General Counsel Phoenix Life Insurance Company",
                "Phoenix Life Insurance Company",
            ),
            (
                "Agreement of Diamond State Generation Holdings, LLC",
                "Diamond State Generation Holdings, LLC",
            ),
        ] {
            assert_eq!(find_organizations(text), [name], "{text}");
        }
    }

    #[test]
    fn names_run_together_are_cut_at_the_inner_suffix() {
        assert_eq!(
            find_organizations(
                "PHL VARIABLE INSURANCE COMPANY PHOENIX EQUITY PLANNING CORPORATION"
            ),
            [
                "PHL VARIABLE INSURANCE COMPANY",
                "PHOENIX EQUITY PLANNING CORPORATION"
            ]
        );
    }

    #[test]
    fn upper_case_blocks_are_trimmed() {
        assert_eq!(
            find_organizations("AGREEMENT BETWEEN HANOVER DIRECT, INC. AND ACME CORP."),
            ["HANOVER DIRECT, INC.", "ACME CORP."]
        );
        assert_eq!(find_organizations("By: Contoso Ltd."), ["Contoso Ltd."]);
    }

    #[test]
    fn defined_terms_and_descriptions_are_not_names() {
        assert!(find_organizations("The Company shall pay HDI.").is_empty());
        assert!(find_organizations("HDI and the Company agree.").is_empty());
        assert!(find_organizations("Affiliates of the Company agree.").is_empty());
        assert!(find_organizations("a Nevada Limited Liability Company").is_empty());
        assert!(find_organizations("the Operating Company shall").is_empty());
        assert!(find_organizations("Each Company shall").is_empty());
        assert!(find_organizations("Income Tax applies").is_empty());
        assert!(find_organizations("no capitals here inc.").is_empty());
        assert!(
            find_organizations("located at 2500 Arrowhead Drive, Carson City, NV 89706").is_empty()
        );
        assert!(find_organizations("offices in Calgary, AB and Basel").is_empty());
        assert!(find_organizations("Furthermore, Company shall").is_empty());
        assert!(find_organizations("INDEMNITY Company shall indemnify").is_empty());
        assert!(find_organizations("COVENANTS OF THE COMPANY").is_empty());
        assert!(find_organizations("under the Company LLC Agreement").is_empty());
        assert!(find_organizations("Products, Company shall").is_empty());
        assert!(find_organizations("LIABILITY SHALL BE LIMITED TO").is_empty());
        assert!(
            find_organizations("the Amended and Restated Limited Liability Company Agreement")
                .is_empty()
        );
        assert!(find_organizations("SERVICES OF COMPANY").is_empty());
        assert!(find_organizations("under the Investment Company Act").is_empty());
    }

    proptest::proptest! {
        /// The cues are necessary where a suffix's spelling runs into the
        /// word before it ("Including", "NASA"): a text the screen passes
        /// over names no organisation.
        #[test]
        fn organisations_among_running_words_are_cued(
            text in glued(
                &[
                    "Acme", "Beta", " ", ", ", ",", "Inc", "Inc.", "luding", "Co.", "Ltd",
                    "GmbH", "AG", "SA", "NA", "S.A.", "x", "_", "5", "é", "\u{a0}", "\n",
                ],
                12,
            ),
        ) {
            let cued = Cued::of(&text, Cued::only([Extractor::Organizations]));
            if !find_organizations(&text).is_empty() {
                proptest::prop_assert!(cued.may_match(Extractor::Organizations), "{:?}", text);
            }
        }
    }
}
