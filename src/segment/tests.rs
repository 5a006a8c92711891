//! Domain cases of the segmenter, each a table of input → sentences.

use super::*;

fn sentences<'t>(segmenter: &Segmenter, text: &'t str) -> Vec<&'t str> {
    segmenter
        .split(text)
        .into_iter()
        .map(|range| text.get(range).unwrap_or("<not a char boundary>"))
        .collect()
}

fn check(cases: &[(&str, &[&str])]) {
    check_with(&Segmenter::default(), cases);
}

fn check_with(segmenter: &Segmenter, cases: &[(&str, &[&str])]) {
    for &(text, expected) in cases {
        assert_eq!(sentences(segmenter, text), expected, "splitting {text:?}");
    }
}

#[test]
fn company_forms_and_addresses() {
    check(&[
        (
            "Contoso Ltd. is at P.O. Box 123, FL.",
            &["Contoso Ltd. is at P.O. Box 123, FL."],
        ),
        (
            "They closed the deal with Pitt, Briggs & Co. at noon.",
            &["They closed the deal with Pitt, Briggs & Co. at noon."],
        ),
        (
            "They closed the deal with Pitt, Briggs & Co. It closed yesterday.",
            &[
                "They closed the deal with Pitt, Briggs & Co.",
                "It closed yesterday.",
            ],
        ),
        (
            "The buyer is Acme Corp. The seller is Widget LLC. Both are in Ohio.",
            &[
                "The buyer is Acme Corp.",
                "The seller is Widget LLC.",
                "Both are in Ohio.",
            ],
        ),
        (
            "Shares of Microsoft Corp. Chairman Bill Gates rose.",
            &["Shares of Microsoft Corp. Chairman Bill Gates rose."],
        ),
        (
            "This Agreement is made between Hanover Direct, Inc. (\"HDI\"), a New Jersey corporation, and The Deerskin Companies, Inc. (the \"Company\").",
            &[
                "This Agreement is made between Hanover Direct, Inc. (\"HDI\"), a New Jersey corporation, and The Deerskin Companies, Inc. (the \"Company\").",
            ],
        ),
    ]);
}

#[test]
fn titles_never_end_a_sentence_before_a_name() {
    check(&[
        (
            "Mr. Smith met Mrs. Jones and Ms. Lee.",
            &["Mr. Smith met Mrs. Jones and Ms. Lee."],
        ),
        (
            "Dr. He Jiankui spoke to Prof. Ng.",
            &["Dr. He Jiankui spoke to Prof. Ng."],
        ),
        (
            "Gen. Patton, Sen. Warren and Rep. Ocasio-Cortez attended.",
            &["Gen. Patton, Sen. Warren and Rep. Ocasio-Cortez attended."],
        ),
        (
            "I can see Mt. Fuji from here.",
            &["I can see Mt. Fuji from here."],
        ),
        (
            "St. Michael's Church is on 5th st. near the light.",
            &["St. Michael's Church is on 5th st. near the light."],
        ),
        ("That is JFK Jr.'s book.", &["That is JFK Jr.'s book."]),
        (
            "He met Martin Luther King Jr. He was impressed.",
            &["He met Martin Luther King Jr.", "He was impressed."],
        ),
    ]);
}

#[test]
fn initials() {
    check(&[
        (
            "My name is Jonas E. Smith.",
            &["My name is Jonas E. Smith."],
        ),
        (
            "We make a good team, you and I. Did you see Albert I. Jones yesterday?",
            &[
                "We make a good team, you and I.",
                "Did you see Albert I. Jones yesterday?",
            ],
        ),
        (
            "The author is J. R. R. Tolkien.",
            &["The author is J. R. R. Tolkien."],
        ),
    ]);
}

#[test]
fn reference_abbreviations_before_numbers() {
    check(&[
        ("Please turn to p. 55.", &["Please turn to p. 55."]),
        (
            "See pp. 10-12 and Fig. 3 for details.",
            &["See pp. 10-12 and Fig. 3 for details."],
        ),
        (
            "The claim is listed as No. 5 on the docket.",
            &["The claim is listed as No. 5 on the docket."],
        ),
        (
            "Nos. 4 and 5 were dismissed.",
            &["Nos. 4 and 5 were dismissed."],
        ),
        (
            "As set out in Sec. 12 and Art. 5 of the treaty.",
            &["As set out in Sec. 12 and Art. 5 of the treaty."],
        ),
        (
            "See Ch. IV and Vol. II of the report.",
            &["See Ch. IV and Vol. II of the report."],
        ),
        (
            "It is listed in Exhibit No. A hereto.",
            &["It is listed in Exhibit No. A hereto."],
        ),
        (
            "She studied modern art. Picasso was her favourite.",
            &["She studied modern art.", "Picasso was her favourite."],
        ),
        (
            "He said no. The deal was off.",
            &["He said no.", "The deal was off."],
        ),
    ]);
}

#[test]
fn latin_and_connectives() {
    check(&[
        (
            "Bring fruit, e.g. Apples or pears, i.e. Something fresh.",
            &["Bring fruit, e.g. Apples or pears, i.e. Something fresh."],
        ),
        (
            "Smith v. Jones was decided in 1990.",
            &["Smith v. Jones was decided in 1990."],
        ),
        ("It was Ali vs. Frazier.", &["It was Ali vs. Frazier."]),
        (
            "We sell pens, paper, etc. The store opens at nine.",
            &["We sell pens, paper, etc.", "The store opens at nine."],
        ),
        (
            "The area is approx. 5 km wide.",
            &["The area is approx. 5 km wide."],
        ),
        (
            "This was shown by Smith et al. in a later paper.",
            &["This was shown by Smith et al. in a later paper."],
        ),
        (
            "This was shown by Smith et al. They used mice.",
            &["This was shown by Smith et al.", "They used mice."],
        ),
    ]);
}

#[test]
fn multi_period_abbreviations() {
    check(&[
        (
            "I visited the U.S.A. last year.",
            &["I visited the U.S.A. last year."],
        ),
        (
            "I live in the E.U. How about you?",
            &["I live in the E.U.", "How about you?"],
        ),
        (
            "I live in the U.S. How about you?",
            &["I live in the U.S.", "How about you?"],
        ),
        (
            "I work for the U.S. Government in Virginia.",
            &["I work for the U.S. Government in Virginia."],
        ),
        (
            "I have lived in the U.S. for 20 years.",
            &["I have lived in the U.S. for 20 years."],
        ),
        (
            "She moved to the U.K. The weather was bad.",
            &["She moved to the U.K.", "The weather was bad."],
        ),
        (
            "At 5 a.m. Mr. Smith went to the bank. He left the bank at 6 P.M. Mr. Smith then went to the store.",
            &[
                "At 5 a.m. Mr. Smith went to the bank.",
                "He left the bank at 6 P.M.",
                "Mr. Smith then went to the store.",
            ],
        ),
        (
            "She holds a Ph.D. from Yale.",
            &["She holds a Ph.D. from Yale."],
        ),
    ]);
}

#[test]
fn legal_clause_numbering_and_citations() {
    check(&[
        (
            "Pursuant to Section 2.1(a) the Seller shall deliver the Goods.",
            &["Pursuant to Section 2.1(a) the Seller shall deliver the Goods."],
        ),
        (
            "The claim arises under 35 U.S.C. § 101 and is barred.",
            &["The claim arises under 35 U.S.C. § 101 and is barred."],
        ),
        (
            "The Company shall (i) pay the fee and (ii) deliver the report.",
            &["The Company shall (i) pay the fee and (ii) deliver the report."],
        ),
        (
            "The Buyer shall pay the price. (b) The Seller shall deliver the goods.",
            &[
                "The Buyer shall pay the price.",
                "(b) The Seller shall deliver the goods.",
            ],
        ),
        (
            "See Section 5.1 of the Agreement. Clause 5.1.2 applies as well.",
            &[
                "See Section 5.1 of the Agreement.",
                "Clause 5.1.2 applies as well.",
            ],
        ),
        (
            "This is governed by Section 2. The Company agrees.",
            &["This is governed by Section 2.", "The Company agrees."],
        ),
        (
            "See F. Supp. 2d 50 and the 9th Cir. ruling.",
            &["See F. Supp. 2d 50 and the 9th Cir. ruling."],
        ),
        (
            "1. Definitions. In this Agreement the following terms apply.",
            &[
                "1. Definitions.",
                "In this Agreement the following terms apply.",
            ],
        ),
    ]);
}

#[test]
fn money_percentages_and_decimals() {
    check(&[
        (
            "She has $100.00 in her bag.",
            &["She has $100.00 in her bag."],
        ),
        (
            "She has $100.00. It is in her bag.",
            &["She has $100.00.", "It is in her bag."],
        ),
        (
            "Revenue grew 5.1% to $3.2 million. Costs fell.",
            &["Revenue grew 5.1% to $3.2 million.", "Costs fell."],
        ),
        (
            "You can find it at N°. 1026.253.553. That is where the treasure is.",
            &[
                "You can find it at N°. 1026.253.553.",
                "That is where the treasure is.",
            ],
        ),
        (
            "The rate was 4.5 %. Rates rose later.",
            &["The rate was 4.5 %.", "Rates rose later."],
        ),
        (
            "Japan depended on Arab oil. 71% of its oil came from there.",
            &[
                "Japan depended on Arab oil.",
                "71% of its oil came from there.",
            ],
        ),
        (
            "The Duchy moved its capital in 1413. 14th-century trade grew.",
            &["The Duchy moved its capital in 1413. 14th-century trade grew."],
        ),
        (
            "The terraces rise (max. 6.5 m) above the river; see Ps. 31:5 and Figure 5. 3 samples died.",
            &[
                "The terraces rise (max. 6.5 m) above the river; see Ps. 31:5 and Figure 5. 3 samples died.",
            ],
        ),
    ]);
}

#[test]
fn ellipses() {
    check(&[
        (
            "I never meant that.... She left the store.",
            &["I never meant that....", "She left the store."],
        ),
        (
            "I never meant that... She left the store.",
            &["I never meant that...", "She left the store."],
        ),
        (
            "I never meant that\u{2026} She left.",
            &["I never meant that\u{2026}", "She left."],
        ),
        (
            "I was sleeping like one dead ... Suddenly the telephone rang \u{2026} Then silence.",
            &[
                "I was sleeping like one dead ... Suddenly the telephone rang \u{2026} Then silence.",
            ],
        ),
        (
            "He said \"I gave too much to my work ...\" There are many accounts.",
            &[
                "He said \"I gave too much to my work ...\"",
                "There are many accounts.",
            ],
        ),
        (
            "We are justified by faith. ... But when works are cut away, faith remains.",
            &[
                "We are justified by faith.",
                "... But when works are cut away, faith remains.",
            ],
        ),
        (
            "I wasn\u{2019}t really ... well, what I mean...see . . . what I'm saying, the thing is . . . I didn\u{2019}t mean it.",
            &[
                "I wasn\u{2019}t really ... well, what I mean...see . . . what I'm saying, the thing is . . . I didn\u{2019}t mean it.",
            ],
        ),
        (
            "\"Bohr [...] used the analogy of parallel stairways [...]\" (Smith 55).",
            &["\"Bohr [...] used the analogy of parallel stairways [...]\" (Smith 55)."],
        ),
        (
            "and then indicate the end of the sentence with a period . . . . Next sentence.",
            &[
                "and then indicate the end of the sentence with a period . . . .",
                "Next sentence.",
            ],
        ),
        (
            "It was weakened . . . was that of combining words into compounds. . . . The practice was not abandoned. . . .",
            &[
                "It was weakened . . . was that of combining words into compounds.",
                ". . . The practice was not abandoned. . . .",
            ],
        ),
    ]);
}

#[test]
fn inline_lists() {
    check(&[
        (
            "1.) The first item 2.) The second item",
            &["1.) The first item", "2.) The second item"],
        ),
        (
            "1.) The first item. 2.) The second item.",
            &["1.) The first item.", "2.) The second item."],
        ),
        (
            "1) The first item 2) The second item",
            &["1) The first item", "2) The second item"],
        ),
        (
            "1. The first item 2. The second item",
            &["1. The first item", "2. The second item"],
        ),
        (
            "1. The first item. 2. The second item.",
            &["1. The first item.", "2. The second item."],
        ),
        (
            "• 9. The first item • 10. The second item",
            &["• 9. The first item", "• 10. The second item"],
        ),
        (
            "\u{2043}9. The first item \u{2043}10. The second item",
            &["\u{2043}9. The first item", "\u{2043}10. The second item"],
        ),
        (
            "a. The first item b. The second item c. The third list item",
            &[
                "a. The first item",
                "b. The second item",
                "c. The third list item",
            ],
        ),
        (
            "i. Scope ii. Term iii. Fees",
            &["i. Scope", "ii. Term", "iii. Fees"],
        ),
        // Numbers that do not continue a list stay inside the sentence.
        (
            "1. He owns 3. Cats are not allowed.",
            &["1. He owns 3.", "Cats are not allowed."],
        ),
        (
            "A. Smith and B. Jones signed.",
            &["A. Smith and B. Jones signed."],
        ),
        (
            "Compensation: 1. Sales Commissions. Imprimis shall pay ten percent (\"GAAP\"). 2. Milestone Payments. a. Initial Payment. It is due.",
            &[
                "Compensation:",
                "1. Sales Commissions.",
                "Imprimis shall pay ten percent (\"GAAP\").",
                "2. Milestone Payments.",
                "a. Initial Payment.",
                "It is due.",
            ],
        ),
        (
            "See p. 5. The index follows.",
            &["See p. 5.", "The index follows."],
        ),
    ]);
}

#[test]
fn quotes_and_brackets() {
    check(&[
        (
            "He teaches science (He previously worked for 5 years as an engineer.) at the local University.",
            &[
                "He teaches science (He previously worked for 5 years as an engineer.) at the local University.",
            ],
        ),
        (
            "She turned to him, 'This is great.' she said.",
            &["She turned to him, 'This is great.' she said."],
        ),
        (
            "She turned to him, \"This is great.\" she said.",
            &["She turned to him, \"This is great.\" she said."],
        ),
        (
            "She turned to him, \"This is great.\" She held the book out to show him.",
            &[
                "She turned to him, \"This is great.\"",
                "She held the book out to show him.",
            ],
        ),
        (
            "He said \u{201c}Stop.\u{201d} Then he left.",
            &["He said \u{201c}Stop.\u{201d}", "Then he left."],
        ),
        (
            "It ended. \"Why?\" she asked.",
            &["It ended.", "\"Why?\" she asked."],
        ),
        (
            "The river is long.[12] It floods.",
            &["The river is long.[12]", "It floods."],
        ),
        (
            "Tesla left Colorado Springs.[citation needed] His lab was torn down.",
            &[
                "Tesla left Colorado Springs.[citation needed]",
                "His lab was torn down.",
            ],
        ),
        (
            "He had a photographic memory.:33 He was a polyglot.:43, 301 He slept little.",
            &[
                "He had a photographic memory.:33",
                "He was a polyglot.:43, 301",
                "He slept little.",
            ],
        ),
    ]);
}

#[test]
fn question_and_exclamation_runs() {
    check(&[
        (
            "What is your name? My name is Jonas.",
            &["What is your name?", "My name is Jonas."],
        ),
        (
            "Hello!! Long time no see.",
            &["Hello!!", "Long time no see."],
        ),
        ("Hello?? Who is there?", &["Hello??", "Who is there?"]),
        ("Hello!? Is that you?", &["Hello!?", "Is that you?"]),
        ("Hello?! Is that you?", &["Hello?!", "Is that you?"]),
        (
            "She works at Yahoo! in the accounting department.",
            &["She works at Yahoo! in the accounting department."],
        ),
    ]);
}

#[test]
fn emails_and_urls() {
    check(&[
        (
            "Her email is Jane.Doe@example.com. I sent her an email.",
            &["Her email is Jane.Doe@example.com.", "I sent her an email."],
        ),
        (
            "The site is: https://www.example.50.com/new-site/awesome_content.html. Please check it out.",
            &[
                "The site is: https://www.example.50.com/new-site/awesome_content.html.",
                "Please check it out.",
            ],
        ),
        (
            "Visit www.example.com today.",
            &["Visit www.example.com today."],
        ),
    ]);
}

#[test]
fn newlines() {
    check(&[
        (
            "First paragraph\n\nSecond paragraph",
            &["First paragraph", "Second paragraph"],
        ),
        (
            "First paragraph\n  \t\nSecond one",
            &["First paragraph", "Second one"],
        ),
        (
            "First paragraph\r\n\r\nSecond one",
            &["First paragraph", "Second one"],
        ),
        (
            "A line that wraps\nin the middle of a sentence.",
            &["A line that wraps\nin the middle of a sentence."],
        ),
        (
            "Terms:\n1. Scope\n2. Term\n(a) Fees",
            &["Terms:", "1. Scope", "2. Term", "(a) Fees"],
        ),
        (
            "Items\n- apples\n- pears\n* plums",
            &["Items", "- apples", "- pears", "* plums"],
        ),
        (
            "Options\n\u{2610} Yes\n\u{2610} No",
            &["Options", "\u{2610} Yes", "\u{2610} No"],
        ),
        (
            "1. HDI's Responsibilities.\n\n1.1 HDI shall host the Site.",
            &["1. HDI's Responsibilities.", "1.1 HDI shall host the Site."],
        ),
        (
            "revenue of\n2.5 million dollars",
            &["revenue of\n2.5 million dollars"],
        ),
        ("a rate of -\n5 points", &["a rate of -\n5 points"]),
    ]);
}

#[test]
fn cjk_full_stops() {
    check(&[(
        "今日は晴れ。明日は雨？そうです！",
        &["今日は晴れ。", "明日は雨？", "そうです！"],
    )]);
}

#[test]
fn extra_abbreviations_are_honoured() {
    let text = "See Annex. Schedule B for the prices.";
    check(&[(text, &["See Annex.", "Schedule B for the prices."])]);
    let segmenter = Segmenter::new(&SentenceSpec {
        extra_abbreviations: vec!["Annex.".into(), " ".into()],
        ..SentenceSpec::default()
    });
    check_with(
        &segmenter,
        &[
            (text, &[text]),
            (
                "We sell pens, Annex. The end.",
                &["We sell pens, Annex.", "The end."],
            ),
        ],
    );
}

#[test]
fn split_into_appends() {
    let segmenter = Segmenter::default();
    let mut out = vec![3..4, 5..6];
    segmenter.split_into("One here. Two here.", &mut out);
    assert_eq!(out, [3..4, 5..6, 0..9, 10..19]);
}

#[test]
fn degenerate_inputs() {
    check(&[
        ("", &[]),
        ("   \n\n ", &[]),
        (".", &["."]),
        ("...", &["..."]),
        ("? ! .", &["?", "!", "."]),
        ("\u{2022}", &["\u{2022}"]),
        ("word", &["word"]),
    ]);
}

/// A run of text longer than `sentences.maxChars` without a sentence end
/// is cut into sentences within the bound: after clause punctuation where
/// there is some, else after a word, else at the bound; nothing is lost.
#[test]
fn over_long_sentences_are_cut_within_the_bound() {
    let spec = SentenceSpec {
        max_chars: 40,
        ..SentenceSpec::default()
    };
    let segmenter = Segmenter::new(&spec);
    let clauses =
        "the first clause runs on, the second clause follows it; and the third one ends here";
    let pieces = sentences(&segmenter, clauses);
    assert_eq!(
        pieces,
        [
            "the first clause runs on,",
            "the second clause follows it;",
            "and the third one ends here"
        ]
    );
    let words = "word ".repeat(30);
    let pieces = sentences(&segmenter, &words);
    assert!(pieces.iter().all(|p| p.chars().count() <= 40), "{pieces:?}");
    assert_eq!(pieces.concat().replace(' ', ""), words.replace(' ', ""));
    // No space at all: cut at the bound, on a character boundary.
    let unbroken = "é".repeat(100);
    let pieces = sentences(&segmenter, &unbroken);
    assert_eq!(
        pieces.iter().map(|p| p.chars().count()).collect::<Vec<_>>(),
        [40, 40, 20]
    );
    // A 10 MB line without punctuation, at the default bound.
    let line = "lorem ipsum dolor sit amet ".repeat(400_000);
    let ranges = Segmenter::new(&SentenceSpec::default()).split(&line);
    assert!(ranges.len() > 2_000, "{}", ranges.len());
    assert!(
        ranges
            .iter()
            .all(|r| line[r.clone()].chars().count() <= SentenceSpec::DEFAULT_MAX_CHARS as usize)
    );
}
