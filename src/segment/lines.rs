//! Blocks of short lines that are items, not wrapped prose.
//!
//! A single newline is usually whitespace: a hard-wrapped sentence ("It
//! was a cold\nnight in the city.") or a PDF line break. But a menu, a
//! list of features or a label block ("Home\nAbout us\nContact", "Name:
//! John Smith\nTitle: Director") puts one item on each line and no
//! punctuation at all. A block of lines (the text between blank lines) is
//! read as items when nothing in it looks like a wrapped sentence:
//!
//! * no line ends with a sentence terminator, a comma, a semicolon or a
//!   hyphen (a sentence ending or going on);
//! * no line ends with a word that cannot end a phrase ("the", "of",
//!   "and", "to" …: "revenue of\n2.5 million");
//! * every line is short (at most [`MAX_ITEM_WORDS`] words): wrapped prose
//!   fills its lines.

use super::abbreviations::{MAX_WORD, lowercase};

/// Most words on one line of an item block; a wrapped line of prose
/// (60–80 characters) holds more.
const MAX_ITEM_WORDS: usize = 8;

/// A block of lines and whether its lines are items.
#[derive(Clone, Copy, Debug)]
pub(super) struct ItemBlock {
    start: usize,
    end: usize,
    /// Whether each line break inside the block ends a sentence.
    pub(super) items: bool,
}

impl ItemBlock {
    /// The block around the newline at `i`: from the line after the last
    /// blank line before it (or the text start) to the next blank line (or
    /// the text end).
    pub(super) fn around(bytes: &[u8], i: usize) -> Self {
        let start = block_start(bytes, i);
        let end = block_end(bytes, i);
        let items = bytes.get(start..end).is_some_and(is_item_block);
        Self { start, end, items }
    }

    /// Whether the byte at `i` lies in this block.
    pub(super) fn contains(&self, i: usize) -> bool {
        (self.start..self.end).contains(&i)
    }
}

/// Start of the block holding the newline at `i`: just after the last
/// blank line before it, or the text start.
fn block_start(bytes: &[u8], i: usize) -> usize {
    let mut line_end = i.min(bytes.len());
    loop {
        let before = bytes.get(..line_end).unwrap_or_default();
        let Some(newline) = memchr::memrchr(b'\n', before) else {
            return 0;
        };
        if is_blank(before.get(newline + 1..).unwrap_or_default()) {
            return line_end + 1;
        }
        line_end = newline;
    }
}

/// End of the block holding the newline at `i`: the newline before the
/// next blank line, or the text end.
fn block_end(bytes: &[u8], i: usize) -> usize {
    let mut line_start = i + 1;
    loop {
        let rest = bytes.get(line_start..).unwrap_or_default();
        let line_end = memchr::memchr(b'\n', rest).map_or(bytes.len(), |at| line_start + at);
        if is_blank(bytes.get(line_start..line_end).unwrap_or_default()) {
            return line_start - 1;
        }
        if line_end == bytes.len() {
            return line_end;
        }
        line_start = line_end + 1;
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Whether every line of `block` reads as an item (see the module docs).
fn is_item_block(block: &[u8]) -> bool {
    let mut lines = 0;
    for line in block.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        let Some(&last) = line.last() else {
            continue;
        };
        lines += 1;
        if matches!(last, b'.' | b'!' | b'?' | b',' | b';' | b'-' | b'&' | b'/') || !last.is_ascii()
        {
            return false;
        }
        let mut words = line
            .split(u8::is_ascii_whitespace)
            .filter(|w| !w.is_empty());
        let count = words.clone().count();
        if count > MAX_ITEM_WORDS || words.next_back().is_some_and(is_joining_word) {
            return false;
        }
    }
    lines >= 2
}

/// Words that do not end a phrase: a line ending with one is continued on
/// the next.
fn is_joining_word(word: &[u8]) -> bool {
    let mut buf = [0u8; MAX_WORD];
    let Some(lower) = lowercase(word, &mut buf) else {
        return false;
    };
    matches!(
        lower,
        b"the"
            | b"a"
            | b"an"
            | b"of"
            | b"to"
            | b"and"
            | b"or"
            | b"nor"
            | b"but"
            | b"in"
            | b"on"
            | b"at"
            | b"for"
            | b"with"
            | b"by"
            | b"as"
            | b"from"
            | b"into"
            | b"than"
            | b"that"
            | b"which"
            | b"who"
            | b"whose"
            | b"if"
            | b"is"
            | b"are"
            | b"was"
            | b"were"
            | b"be"
            | b"been"
            | b"has"
            | b"have"
            | b"had"
            | b"will"
            | b"shall"
            | b"would"
            | b"should"
            | b"may"
            | b"can"
            | b"could"
            | b"not"
            | b"its"
            | b"their"
            | b"his"
            | b"her"
            | b"our"
            | b"your"
            | b"this"
            | b"these"
            | b"those"
            | b"such"
            | b"when"
            | b"where"
            | b"while"
            | b"because"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str) -> bool {
        let i = text.find('\n').unwrap_or(0);
        ItemBlock::around(text.as_bytes(), i).items
    }

    #[test]
    fn tells_items_from_wrapped_prose() {
        assert!(items("features\ncontact manager\nevents, activities\n"));
        assert!(items("Home\nAbout us\nProducts\nContact"));
        assert!(items(
            "Name: John Smith\nTitle: Director\nDate: May 1, 2020"
        ));
        assert!(!items(
            "This is a sentence\ncut off in the middle because pdf."
        ));
        assert!(!items("revenue of\n2.5 million dollars"));
        assert!(!items("a rate of -\n5 points"));
        assert!(!items(
            "This Agreement shall be governed by the laws of the\nState of New York without regard to"
        ));
    }

    #[test]
    fn finds_the_block_around_a_newline() {
        let text = "Intro.\n\nHome\nAbout\n\nEnd";
        let block = ItemBlock::around(text.as_bytes(), 12);
        assert_eq!((block.start, block.end), (8, 18));
        assert!(block.items);
        assert!(block.contains(12) && !block.contains(19));
    }
}
