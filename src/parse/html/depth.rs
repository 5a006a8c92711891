//! The nesting guard: a linear pre-scan of the raw HTML text that estimates
//! how deeply its elements nest, run before html5ever builds a tree.
//!
//! html5ever's tree builder walks its stack of open elements for many
//! tokens, so its cost grows with the square of the nesting depth: 100,000
//! nested `<div>`s take close to a minute. Deep nesting never carries
//! meaning in a real document, so the scan refuses it up front, in time
//! linear in the input, with [`ParseFailure::TooDeep`].
//!
//! The estimate follows the tokenizer closely enough to be cheap and hard to
//! fool: it keeps a stack of open element names, pops to the matching element
//! on an end tag (as the tree builder does for misnested or unclosed inline
//! elements), skips comments, doctypes and the raw text of `<script>`,
//! `<style>` and their kin, and leaves out void elements and elements whose
//! end tag is optional (`p`, `li`, `td`, …), since those close implicitly and
//! cannot pile up. A self-closing `<x/>` only closes inside SVG or MathML,
//! where it does for the real parser too.

use std::collections::HashMap;

use memchr::{memchr, memmem};

use crate::parse::ParseFailure;

/// Fails with [`ParseFailure::TooDeep`] when the estimated element nesting
/// of `html` goes past `limit`.
pub(super) fn check_nesting(html: &str, limit: u32) -> Result<(), ParseFailure> {
    let mut scan = Scan::new(html.as_bytes());
    let limit_depth = usize::try_from(limit).unwrap_or(usize::MAX);
    while let Some(tag) = scan.next_tag() {
        match tag {
            Tag::Start { name, self_closing } => {
                if RAW_TEXT.contains(&name.as_str()) {
                    scan.skip_raw_text(&name);
                    continue;
                }
                if name == "plaintext" {
                    // Everything after `<plaintext>` is text.
                    break;
                }
                if VOID.contains(&name.as_str()) || OPTIONAL_END.contains(&name.as_str()) {
                    continue;
                }
                if self_closing && scan.open.in_foreign_content() {
                    continue;
                }
                if SELF_NESTING_CLOSES.contains(&name.as_str()) {
                    // A second `<a>` closes the first; they never nest.
                    scan.open.close(&name);
                }
                scan.open.push(&name);
                if scan.open.depth() > limit_depth {
                    return Err(ParseFailure::TooDeep { limit });
                }
            }
            Tag::End { name } => {
                if !VOID.contains(&name.as_str()) && !OPTIONAL_END.contains(&name.as_str()) {
                    scan.open.close(&name);
                }
            }
        }
    }
    Ok(())
}

/// Elements without content or end tag.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// Elements whose end tag may be left out: the parser closes them when a
/// sibling or the parent ends, so unclosed ones do not deepen the tree.
const OPTIONAL_END: &[&str] = &[
    "html", "head", "body", "p", "li", "dt", "dd", "rb", "rt", "rtc", "rp", "optgroup", "option",
    "colgroup", "caption", "thead", "tbody", "tfoot", "tr", "td", "th",
];

/// Elements whose content is raw text up to their own end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// Elements that close an open element of the same name instead of
/// nesting inside it.
const SELF_NESTING_CLOSES: &[&str] = &["a", "button", "nobr", "form"];

/// A tag found by the scan, its name lower-cased.
enum Tag {
    Start { name: String, self_closing: bool },
    End { name: String },
}

/// The scanner over the raw bytes.
struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
    open: OpenElements,
    /// Reused for every tag name, so the scan does not allocate per tag.
    name: String,
}

impl<'a> Scan<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            pos: 0,
            open: OpenElements::default(),
            name: String::new(),
        }
    }

    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    /// Advances to the next start or end tag, skipping text, comments,
    /// doctypes, processing instructions and CDATA sections.
    fn next_tag(&mut self) -> Option<Tag> {
        loop {
            let lt = memchr(b'<', self.rest())?;
            self.pos += lt + 1;
            let rest = self.rest();
            match rest.first() {
                Some(b'!') => {
                    if rest.starts_with(b"!--") {
                        self.skip_comment();
                    } else if rest.starts_with(b"![CDATA[") && self.open.in_foreign_content() {
                        self.skip_past(b"]]>");
                    } else {
                        self.skip_past(b">");
                    }
                }
                Some(b'?') => self.skip_past(b">"),
                Some(b'/') if rest.get(1).is_some_and(u8::is_ascii_alphabetic) => {
                    self.pos += 1;
                    self.read_name();
                    self.skip_attributes();
                    return Some(Tag::End {
                        name: std::mem::take(&mut self.name),
                    });
                }
                Some(c) if c.is_ascii_alphabetic() => {
                    self.read_name();
                    let self_closing = self.skip_attributes();
                    return Some(Tag::Start {
                        name: std::mem::take(&mut self.name),
                        self_closing,
                    });
                }
                // A literal `<` in text.
                _ => {}
            }
        }
    }

    /// Reads a tag name at the cursor into `self.name`, lower-cased.
    fn read_name(&mut self) {
        let rest = self.rest();
        let len = rest
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
            .unwrap_or(rest.len());
        self.name.clear();
        let raw = rest.get(..len).unwrap_or_default();
        self.name
            .extend(raw.iter().map(|&b| char::from(b.to_ascii_lowercase())));
        self.pos += len;
    }

    /// Skips a tag's attributes up to and past its `>`, honouring quoted
    /// values (a `>` inside quotes does not end the tag). Returns whether the
    /// tag ended with `/>`.
    fn skip_attributes(&mut self) -> bool {
        let mut after_equals = false;
        let mut last = 0u8;
        while let Some(&b) = self.bytes.get(self.pos) {
            self.pos += 1;
            match b {
                b'>' => return last == b'/',
                b'=' => after_equals = true,
                b'"' | b'\'' if after_equals => {
                    match memchr(b, self.rest()) {
                        Some(end) => self.pos += end + 1,
                        None => self.pos = self.bytes.len(),
                    }
                    after_equals = false;
                }
                b if b.is_ascii_whitespace() => continue,
                _ => after_equals = false,
            }
            last = b;
        }
        false
    }

    /// Skips a comment whose `<!--` starts at the cursor (after the `<`).
    fn skip_comment(&mut self) {
        self.pos += 3;
        // `<!-->` and `<!--->` are complete (empty) comments.
        let rest = self.rest();
        if rest.starts_with(b">") {
            self.pos += 1;
        } else if rest.starts_with(b"->") {
            self.pos += 2;
        } else {
            self.skip_past(b"-->");
        }
    }

    /// Moves the cursor past the next occurrence of `needle`, or to the end.
    fn skip_past(&mut self, needle: &[u8]) {
        match memmem::find(self.rest(), needle) {
            Some(at) => self.pos += at + needle.len(),
            None => self.pos = self.bytes.len(),
        }
    }

    /// Skips the raw text of a `<script>`-like element up to its end tag
    /// (`</name` followed by whitespace, `/` or `>`, in any case).
    fn skip_raw_text(&mut self, name: &str) {
        let name = name.as_bytes();
        loop {
            let Some(at) = memmem::find(self.rest(), b"</") else {
                self.pos = self.bytes.len();
                return;
            };
            self.pos += at + 2;
            let rest = self.rest();
            let matches = rest.len() > name.len()
                && rest
                    .get(..name.len())
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
                && rest
                    .get(name.len())
                    .is_some_and(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>');
            if matches {
                self.pos += name.len();
                self.skip_attributes();
                return;
            }
        }
    }
}

/// The estimated stack of open elements.
///
/// Names are kept as hashes with a count per hash, so that an end tag finds
/// out in constant time whether its element is open at all; popping to it is
/// then amortised over the pushes. A hash collision can only make the
/// estimate pop early or late, never loop or fail.
#[derive(Default)]
struct OpenElements {
    stack: Vec<u64>,
    open_count: HashMap<u64, u32>,
    /// Stack depth at which the outermost open `<svg>` or `<math>` sits.
    foreign_root: Option<usize>,
}

impl OpenElements {
    fn depth(&self) -> usize {
        self.stack.len()
    }

    fn in_foreign_content(&self) -> bool {
        self.foreign_root.is_some()
    }

    fn push(&mut self, name: &str) {
        let key = name_key(name);
        if self.foreign_root.is_none() && (name == "svg" || name == "math") {
            self.foreign_root = Some(self.stack.len());
        }
        self.stack.push(key);
        *self.open_count.entry(key).or_default() += 1;
    }

    /// Pops elements up to and including the innermost open `name`; does
    /// nothing when no such element is open (a stray end tag).
    fn close(&mut self, name: &str) {
        let key = name_key(name);
        if self.open_count.get(&key).is_none_or(|&n| n == 0) {
            return;
        }
        while let Some(top) = self.stack.pop() {
            if let Some(n) = self.open_count.get_mut(&top) {
                *n = n.saturating_sub(1);
            }
            if self
                .foreign_root
                .is_some_and(|root| self.stack.len() <= root)
            {
                self.foreign_root = None;
            }
            if top == key {
                break;
            }
        }
    }
}

/// FNV-1a over the (already lower-cased) name.
fn name_key(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(html: &str, limit: u32) -> bool {
        check_nesting(html, limit).is_ok()
    }

    #[test]
    fn counts_nested_elements() {
        assert!(depth_ok("<div><div><div>x</div></div></div>", 3));
        assert!(!depth_ok(
            "<div><div><div><div>x</div></div></div></div>",
            3
        ));
    }

    #[test]
    fn siblings_do_not_add_up() {
        let html = "<div>a</div>".repeat(10_000);
        assert!(depth_ok(&html, 2));
    }

    #[test]
    fn optional_end_and_void_elements_are_not_counted() {
        let html = format!(
            "<ul>{}</ul>",
            "<li>item<br><img src=x><p>para".repeat(5_000)
        );
        assert!(depth_ok(&html, 2));
    }

    #[test]
    fn unclosed_inline_elements_close_with_their_parent() {
        let html = "<div><span><b>text</div>".repeat(2_000);
        assert!(depth_ok(&html, 4));
    }

    #[test]
    fn unclosed_elements_pile_up() {
        let html = "<b>".repeat(1_000);
        assert!(!depth_ok(&html, 512));
        let html = "<div/>".repeat(1_000);
        assert!(!depth_ok(&html, 512), "`/>` does not close an HTML div");
    }

    #[test]
    fn self_closing_tags_close_in_svg() {
        let html = format!("<svg>{}</svg>", "<path d='M0 0'/>".repeat(1_000));
        assert!(depth_ok(&html, 2));
    }

    #[test]
    fn comments_scripts_and_quoted_attributes_are_skipped() {
        let noise = "<div><div><div>";
        let html = format!(
            "<!-- {noise} --><script>if (a <b) {{ '{noise}' }}</script>\
             <style>p > a {{}}</style><a title='x > {noise}'>link</a>\
             <textarea>{noise}</textarea><div>ok</div>"
        );
        assert!(depth_ok(&html, 1));
    }

    #[test]
    fn malformed_input_does_not_panic() {
        for html in [
            "",
            "<",
            "</",
            "<!",
            "<!--",
            "<a",
            "<a href='",
            "<script>",
            "</script",
            "<div\u{0}>",
            "<<<>>>",
            "<a =\"b",
            "<svg><![CDATA[",
            "<plaintext><div>",
        ] {
            let _ = check_nesting(html, 4);
        }
    }
}
