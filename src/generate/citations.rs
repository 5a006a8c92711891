//! The answer's sentences and the `[n]` markers each carries.
//!
//! Models put markers after the sentence's period as often as before it
//! ("… Delaware. [2]"), and the segmenter then reads the marker as the
//! start of the next sentence: markers that open a sentence belong to the
//! one before, and a "sentence" of markers alone is no sentence. Markers
//! may list several sources (`[1, 3]`, `[1][3]`) or a range (`[2-4]`).

use std::sync::LazyLock;

use regex::Regex;

use crate::segment::Segmenter;

use super::{AnswerSentence, Flag, Support};

/// A marker: one or more source numbers, separated by commas, semicolons
/// or a range dash, in square brackets.
static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[\s*\d{1,4}(?:\s*(?:[,;]|[-–])\s*\d{1,4})*\s*\]").expect("a valid pattern")
});

/// Most sources one range marker may name: `[1-9999]` names no sources
/// worth checking.
const MOST_IN_RANGE: usize = 64;

/// The sentences of `text`, each with the sources it cites; a cited
/// number outside `1..=sources` is flagged, not kept.
pub(super) fn sentences(text: &str, sources: usize) -> Vec<AnswerSentence> {
    let text = text.trim();
    let mut pieces: Vec<String> = Vec::new();
    for range in Segmenter::default().split(text) {
        let piece = &text[range];
        // Leading markers go back to the sentence before.
        let lead = leading_markers(piece);
        if lead > 0
            && let Some(last) = pieces.last_mut()
        {
            last.push(' ');
            last.push_str(piece[..lead].trim());
        }
        let rest = if pieces.is_empty() {
            piece
        } else {
            &piece[lead..]
        };
        if !rest.trim().is_empty() {
            pieces.push(rest.trim().to_string());
        }
    }
    pieces
        .into_iter()
        .map(|text| {
            let (cited, unknown) = cited(&text, sources);
            let mut flags = Vec::new();
            if cited.is_empty() && !unknown {
                flags.push(Flag::NoCitation);
            }
            if unknown {
                flags.push(Flag::UnknownSource);
            }
            AnswerSentence {
                text,
                sources: cited,
                support: Support {
                    supported: false,
                    similarity: 0.0,
                    best_sentence_id: None,
                    best_source: None,
                    missing: Vec::new(),
                    flags,
                },
            }
        })
        .collect()
}

/// Bytes of `piece` taken by markers (and the space between them) at its
/// start.
fn leading_markers(piece: &str) -> usize {
    let mut at = 0;
    loop {
        let rest = &piece[at..];
        let trimmed = rest.trim_start();
        match MARKER.find(trimmed) {
            Some(m) if m.start() == 0 => at += rest.len() - trimmed.len() + m.end(),
            _ => return at,
        }
    }
}

/// The sources `sentence` cites, in order, each once; and whether it
/// cites a number no source has.
fn cited(sentence: &str, sources: usize) -> (Vec<usize>, bool) {
    let mut cited = Vec::new();
    let mut unknown = false;
    for marker in MARKER.find_iter(sentence) {
        for number in numbers(marker.as_str()) {
            if (1..=sources).contains(&number) {
                if !cited.contains(&number) {
                    cited.push(number);
                }
            } else {
                unknown = true;
            }
        }
    }
    (cited, unknown)
}

/// The numbers a marker names, ranges expanded.
fn numbers(marker: &str) -> Vec<usize> {
    let inner = marker.trim_start_matches('[').trim_end_matches(']');
    let mut out = Vec::new();
    for part in inner.split([',', ';']) {
        let mut ends = part.split(['-', '–']).map(|n| n.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => out.push(a),
            (Some(Ok(a)), Some(Ok(b))) if a <= b && b - a < MOST_IN_RANGE => out.extend(a..=b),
            // A reversed or huge range names a number no source has.
            _ => out.push(0),
        }
    }
    out
}

/// `text` without its `[n]` markers and the spaces before them: the
/// answer as prose, for the grounding check and for answer metrics.
pub fn strip_markers(text: &str) -> String {
    let stripped = MARKER.replace_all(text, "");
    let mut out = String::with_capacity(stripped.len());
    for (i, word) in stripped.split_whitespace().enumerate() {
        let glued = word.starts_with(['.', ',', ';', ':', '!', '?']);
        if i > 0 && !glued {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_after_the_period_belong_to_the_sentence_before() {
        let answer = "The agreement is governed by California law. [2] It runs for two \
                      years [1][3]. Payment is due monthly.";
        let s = sentences(answer, 3);
        let texts: Vec<&str> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "The agreement is governed by California law. [2]",
                "It runs for two years [1][3].",
                "Payment is due monthly.",
            ]
        );
        assert_eq!(s[0].sources, [2]);
        assert_eq!(s[1].sources, [1, 3]);
        assert!(s[2].sources.is_empty());
        assert_eq!(s[2].support.flags, [Flag::NoCitation]);
    }

    #[test]
    fn lists_ranges_and_unknown_numbers() {
        let s = sentences("Both say so [1, 2]. All of them agree [1-3]. See [7].", 3);
        assert_eq!(s[0].sources, [1, 2]);
        assert_eq!(s[1].sources, [1, 2, 3]);
        assert!(s[2].sources.is_empty());
        assert_eq!(s[2].support.flags, [Flag::UnknownSource]);
        let huge = sentences("Everything [1-9999].", 3);
        assert_eq!(huge[0].support.flags, [Flag::UnknownSource]);
    }

    #[test]
    fn markers_alone_are_no_sentence() {
        let s = sentences("[1] [2]", 2);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].sources, [1, 2]);
        assert!(sentences("  ", 2).is_empty());
    }

    #[test]
    fn stripping_leaves_prose() {
        assert_eq!(
            strip_markers("Governed by California law [2]. It runs [1][3], they say."),
            "Governed by California law. It runs, they say."
        );
    }
}
