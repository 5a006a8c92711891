//! The tokenizer of the streaming path (see `stream`): HTML text split into
//! tags, text, comments and doctypes, following the HTML Standard's
//! tokenizer for the forms it accepts and giving up ([`Unsupported`]) on
//! the rest, which html5ever then reads.
//!
//! Accepted: start and end tags with quoted, unquoted or missing attribute
//! values; text and attribute values with character references written in
//! full (`&amp;`, `&#8212;`, `&#x2014;`); a `&` that starts no reference;
//! a `<` that starts no tag; comments; doctypes; the raw text of `<script>`
//! and `<style>` and the escapable raw text of `<title>`.
//!
//! Given up: references without their `;` (whose decoding depends on what
//! follows and where), unknown or invalid references, bogus comments and
//! CDATA, `<!--` inside a script, a NUL anything, a tag cut off by the end
//! of the input, a byte order mark right after a `<meta>`. Line endings are normalised to LF first, as the Standard's
//! input stream does.

use std::borrow::Cow;

use markup5ever::data::NAMED_ENTITIES;
use memchr::{memchr, memmem};

/// The construct needs the full HTML parser: the streaming path steps
/// aside.
#[derive(Debug)]
pub(super) struct Unsupported;

/// One token.
#[derive(Debug, PartialEq)]
pub(super) enum Token<'a> {
    /// Character data, references decoded.
    Text(Cow<'a, str>),
    /// A start tag, its name in lower case; its attributes are in
    /// [`Tokens::attributes`] until the next token is read. A closing `/`
    /// (`<br/>`) is read and dropped: outside foreign content (left to
    /// html5ever) it changes nothing.
    Start {
        name: Cow<'a, str>,
    },
    /// An end tag (any attributes it carries are read and dropped, as the
    /// Standard does).
    End {
        name: Cow<'a, str>,
    },
    /// A comment or a doctype: nothing for the walk.
    Ignored,
    Eof,
}

/// How the content of a raw-text element is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RawText {
    /// `<script>`: taken as written; `<!--` inside it (which switches the
    /// Standard's escape states) is not accepted.
    Script,
    /// `<style>`: taken as written.
    Raw,
    /// `<title>`: character references decoded.
    Escapable,
}

/// The tokenizer over one document.
pub(super) struct Tokens<'a> {
    input: &'a str,
    pos: usize,
    /// The attributes of the last start tag, names in lower case, the
    /// first of each name only.
    pub(super) attributes: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Tokens<'a> {
    /// A tokenizer over `input`, which must hold no CR and no NUL (see
    /// [`prepare`]).
    pub(super) fn new(input: &'a str) -> Self {
        Self {
            input,
            pos: 0,
            attributes: Vec::new(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.input.as_bytes()
    }

    fn slice(&self, from: usize, to: usize) -> Result<&'a str, Unsupported> {
        self.input.get(from..to).ok_or(Unsupported)
    }

    /// The next token.
    pub(super) fn next(&mut self) -> Result<Token<'a>, Unsupported> {
        let bytes = self.bytes();
        let start = self.pos;
        let mut from = start;
        loop {
            let Some(lt) = bytes.get(from..).and_then(|rest| memchr(b'<', rest)) else {
                self.pos = bytes.len();
                if start == bytes.len() {
                    return Ok(Token::Eof);
                }
                return Ok(Token::Text(decode(self.slice(start, bytes.len())?)?));
            };
            let lt = from + lt;
            let opens_markup = bytes
                .get(lt + 1)
                .is_some_and(|&b| b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?'));
            if !opens_markup {
                // "a < b": the `<` is text.
                from = lt + 1;
                continue;
            }
            if lt > start {
                self.pos = lt;
                return Ok(Token::Text(decode(self.slice(start, lt)?)?));
            }
            return self.markup(lt);
        }
    }

    /// Reads the markup starting at the `<` at `lt`.
    fn markup(&mut self, lt: usize) -> Result<Token<'a>, Unsupported> {
        let bytes = self.bytes();
        let rest = bytes.get(lt + 1..).unwrap_or_default();
        match rest.first() {
            Some(b'/') if rest.get(1).is_some_and(u8::is_ascii_alphabetic) => {
                self.pos = lt + 2;
                let name = self.tag_name()?;
                self.attributes_until_end(false)?;
                Ok(Token::End { name })
            }
            Some(b'!') if rest.starts_with(b"!--") => {
                let body = lt + 4;
                let text = bytes.get(body..).unwrap_or_default();
                // `<!-->` and `<!--->` end at once, `--!>` ends a comment
                // too: both rare enough to leave to html5ever.
                if text.starts_with(b">") || text.starts_with(b"->") {
                    return Err(Unsupported);
                }
                let end = memmem::find(text, b"-->").ok_or(Unsupported)?;
                if memmem::find(text.get(..end + 3).unwrap_or_default(), b"--!>").is_some() {
                    return Err(Unsupported);
                }
                self.pos = body + end + 3;
                Ok(Token::Ignored)
            }
            Some(b'!')
                if rest
                    .get(1..8)
                    .is_some_and(|word| word.eq_ignore_ascii_case(b"doctype")) =>
            {
                let from = lt + 9;
                let text = bytes.get(from..).unwrap_or_default();
                let end = memchr(b'>', text).ok_or(Unsupported)?;
                // A quoted identifier may hold a `>`.
                if text
                    .get(..end)
                    .is_some_and(|d| d.contains(&b'"') || d.contains(&b'\''))
                {
                    return Err(Unsupported);
                }
                self.pos = from + end + 1;
                Ok(Token::Ignored)
            }
            Some(b) if b.is_ascii_alphabetic() => {
                self.pos = lt + 1;
                let name = self.tag_name()?;
                self.attributes_until_end(true)?;
                // html5ever stops after a `<meta>` naming an encoding, and
                // on resuming drops a byte order mark as if the input began
                // there; that is left to it.
                if name == "meta"
                    && self
                        .input
                        .get(self.pos..)
                        .is_some_and(|rest| rest.starts_with('\u{feff}'))
                {
                    return Err(Unsupported);
                }
                Ok(Token::Start { name })
            }
            // `</>`, `</3`, `<?…>`, `<!x…>`: bogus comments and the like.
            _ => Err(Unsupported),
        }
    }

    /// Reads a tag name (at a letter), lower-casing it.
    fn tag_name(&mut self) -> Result<Cow<'a, str>, Unsupported> {
        let bytes = self.bytes();
        let start = self.pos;
        let len = bytes
            .get(start..)
            .unwrap_or_default()
            .iter()
            .position(|&b| is_space(b) || b == b'/' || b == b'>')
            .ok_or(Unsupported)?;
        self.pos = start + len;
        Ok(lower(self.slice(start, start + len)?))
    }

    /// Reads attributes up to the end of the tag, keeping them if `keep`.
    fn attributes_until_end(&mut self, keep: bool) -> Result<(), Unsupported> {
        if keep {
            self.attributes.clear();
        }
        let bytes = self.bytes();
        loop {
            self.skip_spaces();
            match bytes.get(self.pos) {
                None => return Err(Unsupported),
                Some(b'>') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'/') => {
                    // `/>`, or a stray `/` between attributes: dropped.
                    self.pos += 1;
                    continue;
                }
                // `=x` as a name, `"x`, `'x`, `<x`: parse errors whose
                // recovery is left to html5ever.
                Some(b'=' | b'"' | b'\'' | b'<') => return Err(Unsupported),
                Some(_) => {}
            }
            let start = self.pos;
            let len = bytes
                .get(start..)
                .unwrap_or_default()
                .iter()
                .position(|&b| is_space(b) || matches!(b, b'/' | b'>' | b'='))
                .ok_or(Unsupported)?;
            let name = self.slice(start, start + len)?;
            if name.bytes().any(|b| matches!(b, b'"' | b'\'' | b'<')) {
                return Err(Unsupported);
            }
            self.pos = start + len;
            self.skip_spaces();
            let value = if bytes.get(self.pos) == Some(&b'=') {
                self.pos += 1;
                self.skip_spaces();
                self.attribute_value()?
            } else {
                Cow::Borrowed("")
            };
            if keep {
                let name = lower(name);
                if !self.attributes.iter().any(|(seen, _)| *seen == name) {
                    self.attributes.push((name, value));
                }
            }
        }
    }

    fn attribute_value(&mut self) -> Result<Cow<'a, str>, Unsupported> {
        let bytes = self.bytes();
        let start = self.pos;
        match bytes.get(start) {
            None => Err(Unsupported),
            Some(&quote @ (b'"' | b'\'')) => {
                let len = bytes
                    .get(start + 1..)
                    .and_then(|rest| memchr(quote, rest))
                    .ok_or(Unsupported)?;
                self.pos = start + 1 + len + 1;
                decode(self.slice(start + 1, start + 1 + len)?)
            }
            // `<a href=>`: an empty value, the `>` ends the tag.
            Some(b'>') => Ok(Cow::Borrowed("")),
            Some(_) => {
                let len = bytes
                    .get(start..)
                    .unwrap_or_default()
                    .iter()
                    .position(|&b| is_space(b) || b == b'>')
                    .ok_or(Unsupported)?;
                let value = self.slice(start, start + len)?;
                if value
                    .bytes()
                    .any(|b| matches!(b, b'"' | b'\'' | b'<' | b'=' | b'`'))
                {
                    return Err(Unsupported);
                }
                self.pos = start + len;
                decode(value)
            }
        }
    }

    fn skip_spaces(&mut self) {
        let rest = self.bytes().get(self.pos..).unwrap_or_default();
        self.pos += rest.iter().take_while(|&&b| is_space(b)).count();
    }

    /// Reads the content of the raw-text element `name` just opened, and
    /// its end tag.
    pub(super) fn raw_text(
        &mut self,
        name: &str,
        kind: RawText,
    ) -> Result<Cow<'a, str>, Unsupported> {
        let bytes = self.bytes();
        let start = self.pos;
        let mut from = start;
        let end = loop {
            let at = bytes
                .get(from..)
                .and_then(|rest| memmem::find(rest, b"</"))
                .ok_or(Unsupported)?;
            let at = from + at;
            let after = at + 2 + name.len();
            let closes = bytes
                .get(at + 2..after)
                .is_some_and(|word| word.eq_ignore_ascii_case(name.as_bytes()))
                && bytes
                    .get(after)
                    .is_some_and(|&b| is_space(b) || b == b'/' || b == b'>');
            if closes {
                break at;
            }
            from = at + 2;
        };
        let content = self.slice(start, end)?;
        if kind == RawText::Script && memmem::find(content.as_bytes(), b"<!--").is_some() {
            return Err(Unsupported);
        }
        self.pos = end + 2 + name.len();
        self.attributes_until_end(false)?;
        match kind {
            RawText::Escapable => decode(content),
            RawText::Script | RawText::Raw => Ok(Cow::Borrowed(content)),
        }
    }
}

/// Readies a document for [`Tokens`]: drops a leading byte order mark and
/// normalises CR LF and lone CR to LF, as the Standard's input stream
/// does. A NUL byte (which the Standard's states each treat differently)
/// is not accepted.
pub(super) fn prepare(html: &str) -> Result<Cow<'_, str>, Unsupported> {
    let html = html.strip_prefix('\u{feff}').unwrap_or(html);
    if memchr(0, html.as_bytes()).is_some() {
        return Err(Unsupported);
    }
    if memchr(b'\r', html.as_bytes()).is_none() {
        return Ok(Cow::Borrowed(html));
    }
    Ok(Cow::Owned(html.replace("\r\n", "\n").replace('\r', "\n")))
}

/// HTML's ASCII whitespace (a CR never reaches here: see [`prepare`]).
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b' ')
}

/// A name in lower case, borrowed when it already is.
fn lower(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Decodes the character references of text or an attribute value.
fn decode(raw: &str) -> Result<Cow<'_, str>, Unsupported> {
    let bytes = raw.as_bytes();
    let Some(first) = memchr(b'&', bytes) else {
        return Ok(Cow::Borrowed(raw));
    };
    let mut out = String::with_capacity(raw.len());
    let mut copied = 0;
    let mut at = first;
    loop {
        let rest = bytes.get(at + 1..).unwrap_or_default();
        let reference = match rest.first() {
            Some(b) if b.is_ascii_alphanumeric() => Some(named(raw, at)?),
            Some(b'#') => Some(numeric(rest)?),
            // A `&` before anything else is text.
            _ => None,
        };
        let mut next = at + 1;
        if let Some((chars, len)) = reference {
            out.push_str(raw.get(copied..at).ok_or(Unsupported)?);
            out.extend(chars.into_iter().flatten());
            copied = at + len;
            next = copied;
        }
        match bytes.get(next..).and_then(|rest| memchr(b'&', rest)) {
            Some(found) => at = next + found,
            None => break,
        }
    }
    out.push_str(raw.get(copied..).ok_or(Unsupported)?);
    Ok(Cow::Owned(out))
}

/// The characters a reference stands for (at most two) and its length.
type Decoded = ([Option<char>; 2], usize);

/// `&name;` at `at`: the name must be known and end with its `;` (without
/// it, the Standard's decoding depends on what follows).
fn named(raw: &str, at: usize) -> Result<Decoded, Unsupported> {
    let rest = raw.as_bytes().get(at + 1..).unwrap_or_default();
    let len = rest
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    if rest.get(len) != Some(&b';') {
        return Err(Unsupported);
    }
    let key = raw.get(at + 1..at + len + 2).ok_or(Unsupported)?;
    let &(first, second) = NAMED_ENTITIES.get(key).ok_or(Unsupported)?;
    let second = if second == 0 {
        None
    } else {
        Some(char::from_u32(second).ok_or(Unsupported)?)
    };
    Ok((
        [Some(char::from_u32(first).ok_or(Unsupported)?), second],
        len + 2,
    ))
}

/// `&#…;` (`rest` starts at the `#`): digits and `;` required, and a value
/// the Standard keeps as it is (not NUL, a surrogate, out of range, or a
/// C1 control it remaps).
fn numeric(rest: &[u8]) -> Result<Decoded, Unsupported> {
    let (radix, skip) = match rest.get(1) {
        Some(b'x' | b'X') => (16, 2),
        _ => (10, 1),
    };
    let digits = rest.get(skip..).unwrap_or_default();
    let len = digits
        .iter()
        .position(|&b| !(b as char).is_digit(radix))
        .unwrap_or(digits.len());
    if len == 0 || len > 8 || digits.get(len) != Some(&b';') {
        return Err(Unsupported);
    }
    let text =
        std::str::from_utf8(digits.get(..len).unwrap_or_default()).map_err(|_| Unsupported)?;
    let value = u32::from_str_radix(text, radix).map_err(|_| Unsupported)?;
    if value == 0 || (0x80..=0x9f).contains(&value) {
        return Err(Unsupported);
    }
    let ch = char::from_u32(value).ok_or(Unsupported)?;
    Ok(([Some(ch), None], 1 + skip + len + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(html: &str) -> Vec<String> {
        let mut tokens = Tokens::new(html);
        let mut out = Vec::new();
        loop {
            match tokens.next() {
                Ok(Token::Eof) => return out,
                Ok(Token::Start { name }) => {
                    let attrs: Vec<String> = tokens
                        .attributes
                        .iter()
                        .map(|(n, v)| format!("{n}={v}"))
                        .collect();
                    out.push(format!("<{name} {}>", attrs.join(" ")));
                }
                Ok(Token::End { name }) => out.push(format!("</{name}>")),
                Ok(Token::Text(text)) => out.push(format!("{text:?}")),
                Ok(Token::Ignored) => out.push("#".into()),
                Err(Unsupported) => {
                    out.push("unsupported".into());
                    return out;
                }
            }
        }
    }

    #[test]
    fn tags_attributes_and_text() {
        assert_eq!(
            tokens(
                "<!DOCTYPE html><P Class=\"a&amp;b\" id=x hidden CLASS='no'>a < b &amp; c<BR/></p>"
            ),
            [
                "#",
                "<p class=a&b id=x hidden=>",
                "\"a < b & c\"",
                "<br >",
                "</p>"
            ]
        );
    }

    #[test]
    fn references() {
        assert_eq!(decode("&lt;&#8212;&#x2014;&notin;& x").unwrap(), "<——∉& x");
        assert_eq!(decode("&NotEqualTilde;").unwrap(), "\u{2242}\u{338}");
        for unsupported in [
            "&amp",
            "&foo;",
            "&#0;",
            "&#x80;",
            "&#xD800;",
            "&#;",
            "&#1234567890;",
        ] {
            assert!(decode(unsupported).is_err(), "{unsupported}");
        }
    }

    #[test]
    fn raw_text_ends_at_its_own_end_tag() {
        let mut tokens = Tokens::new("a</b>&amp;</TITLE >x");
        assert_eq!(
            tokens.raw_text("title", RawText::Escapable).unwrap(),
            "a</b>&"
        );
        assert_eq!(tokens.next().unwrap(), Token::Text("x".into()));
        let mut script = Tokens::new("if (a<!--b) {}</script>");
        assert!(script.raw_text("script", RawText::Script).is_err());
    }

    #[test]
    fn comments_and_what_is_left_to_html5ever() {
        assert_eq!(tokens("a<!-- x -- y -->b"), ["\"a\"", "#", "\"b\""]);
        for unsupported in [
            "<!-->",
            "<!--x--!>",
            "<?xml?>",
            "</>",
            "<p",
            "<a b=\"c>",
            "<![CDATA[x]]>",
            "<meta charset=utf-8>\u{feff}x",
        ] {
            assert_eq!(
                tokens(unsupported).last().map(String::as_str),
                Some("unsupported"),
                "{unsupported}"
            );
        }
        assert_eq!(prepare("\u{feff}a\r\nb\rc").unwrap(), "a\nb\nc");
        assert!(prepare("a\0b").is_err());
    }
}
