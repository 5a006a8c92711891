//! Which words before a period are abbreviations, and which capitalised
//! words typically open a sentence.
//!
//! Lookups run only at candidate boundaries (a period followed by
//! whitespace and a capitalised word), on words of at most
//! [`MAX_WORD`] bytes lowercased into a stack buffer, and compile to
//! `match`es on short byte strings: no allocation, no hashing.

/// Longest word (in bytes) looked up; longer words are never abbreviations
/// or sentence starters.
pub(super) const MAX_WORD: usize = 16;

/// How the period after an abbreviation behaves before a capitalised word.
/// (Before a lowercase word or a digit no period ends a sentence, so that
/// needs no category.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AbbreviationKind {
    /// Titles and connectives ("Mr.", "Dr.", "Sen.", "e.g.", "vs."): they
    /// stand before what they qualify, so their period never ends a
    /// sentence. ("Dr. He" is Dr. He Jiankui, not two sentences.)
    Never,
    /// Abbreviations that announce a number ("No.", "Fig.", "Sec.",
    /// "Art.", "p."): before a numeral, a roman numeral or a single letter
    /// ("Art. IV", "Exhibit No. A") the period does not end a sentence;
    /// before any other capitalised word the abbreviation is more likely
    /// the ordinary word it spells ("modern art. Picasso …") and the period
    /// ends the sentence.
    BeforeNumber,
    /// Abbreviations that may close a sentence ("Inc.", "Co.", "U.S.",
    /// initials): the period ends a sentence only before a typical sentence
    /// starter ("… & Co. It closed", but "the U.S. Government", "Jonas E.
    /// Smith").
    Ambiguous,
    /// "a.m." and "p.m.". After a number they close a time of day, and
    /// nothing they qualify follows them: any capitalised word after them
    /// opens a sentence ("at 6 P.M. Travelers who …") unless it continues
    /// the time, a time zone, a weekday or a month ("6:00 p.m. Pacific
    /// time", "4:30 p.m. Monday"). After a word they are initials ("an
    /// A.M. Best rating") and behave as [`Ambiguous`](Self::Ambiguous).
    Time,
}

/// Classifies the word before a period (leading quotes and brackets already
/// stripped). `extra` holds the profile's own abbreviations, ASCII
/// lowercased, without their final period. `None`: not an abbreviation.
pub(super) fn classify(word: &[u8], extra: &[Box<[u8]>]) -> Option<AbbreviationKind> {
    if word.is_empty() || word.len() > MAX_WORD {
        return None;
    }
    let mut buf = [0u8; MAX_WORD];
    let lower = lowercase(word, &mut buf)?;
    let builtin = if word.contains(&b'.') {
        classify_dotted(lower)
    } else {
        classify_plain(word, lower)
    };
    builtin.or_else(|| {
        extra
            .iter()
            .any(|e| **e == *lower)
            .then_some(AbbreviationKind::Ambiguous)
    })
}

/// Words written with inner periods: "e.g", "U.S", "a.m", "Ph.D", "P.O".
fn classify_dotted(lower: &[u8]) -> Option<AbbreviationKind> {
    if matches!(lower, b"e.g" | b"i.e" | b"n.b" | b"et.al") {
        return Some(AbbreviationKind::Never);
    }
    if matches!(lower, b"a.m" | b"p.m") {
        return Some(AbbreviationKind::Time);
    }
    // Runs of one or two letters joined by periods are abbreviations
    // ("U.S.A", "Ph.D", "a.m"); anything else with inner periods is a
    // domain, a file name or a number ("example.com", "5.1").
    let mut segments = 0;
    for segment in lower.split(|&b| b == b'.') {
        if segment.is_empty() || segment.len() > 2 || !segment.iter().all(u8::is_ascii_alphabetic) {
            return None;
        }
        segments += 1;
    }
    (segments >= 2).then_some(AbbreviationKind::Ambiguous)
}

/// Words without inner periods.
fn classify_plain(word: &[u8], lower: &[u8]) -> Option<AbbreviationKind> {
    if !word.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let capitalised = word.first().is_some_and(u8::is_ascii_uppercase);
    if capitalised && is_title(lower) {
        return Some(AbbreviationKind::Never);
    }
    // "v." (versus, "Smith v. Jones") and "p." (page) only in lowercase:
    // capital "V." and "P." are initials.
    match word {
        b"v" => return Some(AbbreviationKind::Never),
        b"p" => return Some(AbbreviationKind::BeforeNumber),
        _ => {}
    }
    if is_connective(lower) {
        Some(AbbreviationKind::Never)
    } else if is_number_prefix(lower) {
        Some(AbbreviationKind::BeforeNumber)
    } else if word.len() == 1 || is_ambiguous(lower) {
        // A lone letter is an initial ("Jonas E. Smith") or a letter
        // closing a sentence ("you and I. Did you …").
        Some(AbbreviationKind::Ambiguous)
    } else {
        None
    }
}

/// Titles written before a name. Matched only when capitalised, so that
/// "sales rep." or "the gen." stay ordinary words.
fn is_title(lower: &[u8]) -> bool {
    matches!(
        lower,
        b"mr"
            | b"mrs"
            | b"ms"
            | b"mx"
            | b"messrs"
            | b"mmes"
            | b"dr"
            | b"prof"
            | b"gen"
            | b"sen"
            | b"rep"
            | b"gov"
            | b"pres"
            | b"rev"
            | b"hon"
            | b"rt"
            | b"capt"
            | b"col"
            | b"lt"
            | b"lieut"
            | b"sgt"
            | b"maj"
            | b"adm"
            | b"cmdr"
            | b"cdr"
            | b"cpl"
            | b"pvt"
            | b"brig"
            | b"supt"
            | b"insp"
            | b"atty"
            | b"amb"
            | b"fr"
    )
}

/// Connectives whose period never ends a sentence, in any case.
fn is_connective(lower: &[u8]) -> bool {
    matches!(lower, b"vs" | b"cf" | b"viz" | b"incl" | b"esp" | b"resp")
}

/// Abbreviations written before a number. Being listed here costs nothing
/// before an ordinary capitalised word, so the list can be generous.
fn is_number_prefix(lower: &[u8]) -> bool {
    matches!(
        lower,
        b"no"
            | b"nos"
            | b"fig"
            | b"figs"
            | b"sec"
            | b"secs"
            | b"sect"
            | b"art"
            | b"arts"
            | b"ch"
            | b"chs"
            | b"chap"
            | b"vol"
            | b"vols"
            | b"pp"
            | b"pg"
            | b"pgs"
            | b"para"
            | b"paras"
            | b"cl"
            | b"cls"
            | b"sch"
            | b"sched"
            | b"ex"
            | b"exh"
            | b"exs"
            | b"pt"
            | b"pts"
            | b"eq"
            | b"eqs"
            | b"tab"
            | b"ref"
            | b"refs"
            | b"op"
            | b"apt"
            | b"ste"
            | b"rm"
            | b"tel"
            | b"fax"
            | b"ext"
            | b"ph"
            // Units and ranges written before or after a number.
            | b"max"
            | b"min"
            | b"lb"
            | b"lbs"
            | b"oz"
            | b"sq"
            | b"yd"
            | b"yds"
            | b"mi"
            | b"ff"
            | b"vv"
            | b"ser"
            | b"rs"
            // Books of the Bible cited by chapter and verse ("Ps. 31:5").
            | b"ps"
            | b"matt"
            | b"deut"
            | b"lev"
            | b"isa"
            | b"jer"
            | b"prov"
            | b"rom"
            | b"cor"
            | b"gal"
            | b"eph"
            | b"heb"
            | b"thess"
    )
}

/// Abbreviations that may end a sentence: company forms, Latin, dates,
/// places, legal citation forms.
fn is_ambiguous(lower: &[u8]) -> bool {
    matches!(
        lower,
        // Company and organisation forms.
        b"inc"
            | b"ltd"
            | b"co"
            | b"cos"
            | b"corp"
            | b"llc"
            | b"llp"
            | b"plc"
            | b"pty"
            | b"bros"
            | b"assn"
            | b"assoc"
            | b"dept"
            | b"univ"
            | b"govt"
            | b"intl"
            | b"natl"
            | b"mfg"
            | b"esq"
            // Latin and scholarly.
            | b"etc"
            | b"al"
            | b"seq"
            | b"ibid"
            | b"id"
            | b"cit"
            | b"approx"
            | b"appx"
            | b"est"
            | b"ca"
            | b"ed"
            | b"eds"
            | b"misc"
            | b"avg"
            // Names and places.
            | b"jr"
            | b"sr"
            | b"st"
            | b"mt"
            | b"ft"
            | b"ave"
            | b"blvd"
            | b"rd"
            | b"hwy"
            | b"bldg"
            | b"calif"
            | b"fla"
            | b"tex"
            | b"conn"
            | b"ariz"
            | b"colo"
            | b"okla"
            | b"minn"
            | b"mich"
            | b"tenn"
            | b"wis"
            | b"wyo"
            | b"neb"
            | b"nev"
            | b"penn"
            // Months and durations.
            | b"jan"
            | b"feb"
            | b"mar"
            | b"apr"
            | b"jun"
            | b"jul"
            | b"aug"
            | b"sep"
            | b"sept"
            | b"oct"
            | b"nov"
            | b"dec"
            | b"yr"
            | b"yrs"
            | b"mos"
            | b"hrs"
            // Legal citation forms ("F. Supp.", "9th Cir.", "Fed. R. Civ. P.").
            | b"supp"
            | b"cir"
            | b"ct"
            | b"fed"
            | b"reg"
            | b"civ"
            | b"crim"
            | b"evid"
            | b"stat"
            | b"ann"
            | b"dist"
    )
}

/// Whether a capitalised word (letters and apostrophes, as it appears in the
/// text) typically opens a sentence: pronouns, determiners, conjunctions,
/// conjunctive adverbs, prepositions, auxiliaries, and the titles that open
/// narrative sentences ("Mr. Smith then went …"). Names never are, so
/// "the U.S. Government" and "St. Michael's" are not split. Deliberately
/// left out: words that are also names or months ("May", "Will", "Rose").
pub(super) fn is_sentence_starter(word: &[u8]) -> bool {
    let mut buf = [0u8; MAX_WORD];
    let Some(lower) = lowercase(word, &mut buf) else {
        return false;
    };
    matches!(
        lower,
        // Pronouns and determiners.
        b"i"
            | b"i'm"
            | b"i'll"
            | b"i've"
            | b"i'd"
            | b"a"
            | b"an"
            | b"the"
            | b"this"
            | b"that"
            | b"these"
            | b"those"
            | b"there"
            | b"here"
            | b"it"
            | b"it's"
            | b"its"
            | b"he"
            | b"his"
            | b"him"
            | b"she"
            | b"her"
            | b"we"
            | b"our"
            | b"they"
            | b"their"
            | b"them"
            | b"you"
            | b"your"
            | b"my"
            | b"each"
            | b"every"
            | b"all"
            | b"some"
            | b"any"
            | b"many"
            | b"most"
            | b"more"
            | b"several"
            | b"both"
            | b"neither"
            | b"either"
            | b"another"
            | b"other"
            | b"such"
            | b"no"
            | b"not"
            | b"only"
            | b"even"
            | b"millions"
            | b"nobody"
            | b"everyone"
            | b"everybody"
            | b"someone"
            | b"somebody"
            | b"nothing"
            | b"everything"
            | b"something"
            | b"none"
            // Conjunctions and conjunctive adverbs.
            | b"and"
            | b"but"
            | b"or"
            | b"so"
            | b"yet"
            | b"nor"
            | b"however"
            | b"moreover"
            | b"furthermore"
            | b"therefore"
            | b"thus"
            | b"hence"
            | b"also"
            | b"although"
            | b"though"
            | b"because"
            | b"since"
            | b"while"
            | b"whereas"
            | b"if"
            | b"unless"
            | b"then"
            | b"nevertheless"
            | b"nonetheless"
            | b"notwithstanding"
            | b"accordingly"
            | b"consequently"
            | b"additionally"
            | b"meanwhile"
            | b"instead"
            | b"otherwise"
            | b"finally"
            | b"still"
            | b"indeed"
            | b"today"
            | b"now"
            | b"later"
            // Question words.
            | b"what"
            | b"when"
            | b"where"
            | b"why"
            | b"how"
            | b"who"
            | b"whom"
            | b"whose"
            | b"which"
            | b"whether"
            // Prepositions opening a sentence.
            | b"in"
            | b"on"
            | b"at"
            | b"for"
            | b"from"
            | b"to"
            | b"by"
            | b"with"
            | b"without"
            | b"as"
            | b"after"
            | b"before"
            | b"during"
            | b"upon"
            | b"under"
            | b"once"
            | b"until"
            // Auxiliaries opening a question or an imperative.
            | b"do"
            | b"does"
            | b"did"
            | b"is"
            | b"are"
            | b"was"
            | b"were"
            | b"be"
            | b"being"
            | b"has"
            | b"have"
            | b"had"
            | b"can"
            | b"could"
            | b"would"
            | b"should"
            | b"shall"
            | b"might"
            | b"must"
            | b"let"
            | b"let's"
            | b"please"
            // Titles opening a narrative sentence.
            | b"mr"
            | b"mrs"
            | b"ms"
            | b"dr"
            | b"prof"
    )
}

/// Whether a capitalised word after a time of day continues it: a time
/// zone ("Pacific", "EST", "UTC"), a weekday or a month ("4:30 p.m.
/// Monday", "9 a.m. March 3").
pub(super) fn continues_time(word: &[u8]) -> bool {
    let mut buf = [0u8; MAX_WORD];
    let Some(lower) = lowercase(word, &mut buf) else {
        return false;
    };
    matches!(
        lower,
        // Time zones, spelt out and abbreviated.
        b"eastern"
            | b"central"
            | b"mountain"
            | b"pacific"
            | b"atlantic"
            | b"alaska"
            | b"hawaii"
            | b"greenwich"
            | b"universal"
            | b"coordinated"
            | b"gmt"
            | b"utc"
            | b"bst"
            | b"cet"
            | b"cest"
            | b"eet"
            | b"ist"
            | b"jst"
            | b"aest"
            | b"et"
            | b"ct"
            | b"mt"
            | b"pt"
            | b"est"
            | b"edt"
            | b"cst"
            | b"cdt"
            | b"mst"
            | b"mdt"
            | b"pst"
            | b"pdt"
            | b"hst"
            | b"akst"
            // Weekdays and months.
            | b"monday"
            | b"tuesday"
            | b"wednesday"
            | b"thursday"
            | b"friday"
            | b"saturday"
            | b"sunday"
            | b"january"
            | b"february"
            | b"march"
            | b"april"
            | b"may"
            | b"june"
            | b"july"
            | b"august"
            | b"september"
            | b"october"
            | b"november"
            | b"december"
    )
}

/// ASCII-lowercases `word` into `buf`; `None` if it does not fit.
pub(super) fn lowercase<'b>(word: &[u8], buf: &'b mut [u8; MAX_WORD]) -> Option<&'b [u8]> {
    let out = buf.get_mut(..word.len())?;
    for (o, &b) in out.iter_mut().zip(word) {
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_builtin_abbreviations() {
        use AbbreviationKind::*;
        let cases: &[(&str, Option<AbbreviationKind>)] = &[
            ("Mr", Some(Never)),
            ("MRS", Some(Never)),
            ("Sen", Some(Never)),
            ("rep", None),
            ("e.g", Some(Never)),
            ("vs", Some(Never)),
            ("v", Some(Never)),
            ("V", Some(Ambiguous)),
            ("p", Some(BeforeNumber)),
            ("P", Some(Ambiguous)),
            ("No", Some(BeforeNumber)),
            ("Figs", Some(BeforeNumber)),
            ("Inc", Some(Ambiguous)),
            ("co", Some(Ambiguous)),
            ("U.S.A", Some(Ambiguous)),
            ("Ph.D", Some(Ambiguous)),
            ("a.m", Some(Time)),
            ("P.M", Some(Time)),
            ("etc", Some(Ambiguous)),
            ("E", Some(Ambiguous)),
            ("example.com", None),
            ("5.1", None),
            ("Jane.Doe@example", None),
            ("house", None),
            ("", None),
        ];
        for &(word, expected) in cases {
            assert_eq!(classify(word.as_bytes(), &[]), expected, "{word}");
        }
    }

    #[test]
    fn honours_extra_abbreviations() {
        assert_eq!(classify(b"Annex", &[]), None);
        let extra: Vec<Box<[u8]>> = vec![b"annex".to_vec().into(), b"dir.gen".to_vec().into()];
        assert_eq!(
            classify(b"Annex", &extra),
            Some(AbbreviationKind::Ambiguous)
        );
        assert_eq!(
            classify(b"ANNEX", &extra),
            Some(AbbreviationKind::Ambiguous)
        );
        assert_eq!(
            classify(b"Dir.Gen", &extra),
            Some(AbbreviationKind::Ambiguous)
        );
    }

    #[test]
    fn recognises_sentence_starters() {
        for word in ["The", "How", "It", "I", "Mr", "However", "THEY"] {
            assert!(is_sentence_starter(word.as_bytes()), "{word}");
        }
        for word in ["Government", "Smith", "Michael's", "Fuji", "May", ""] {
            assert!(!is_sentence_starter(word.as_bytes()), "{word}");
        }
    }
}
