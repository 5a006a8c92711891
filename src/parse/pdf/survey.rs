//! A survey of a PDF's bytes before the library reads any of it: how deep
//! its arrays and dictionaries nest, which of its streams are damaged,
//! whether one inflates like a bomb, and which objects the file holds.
//!
//! **Nesting.** `pdf_oxide` parses an object, and every operand of a
//! content stream, by recursion: one call per level of `[` or `<<`, with
//! no bound of its own. A file a few kilobytes long that nests 3,000 levels
//! overflows the reader's stack, and a stack overflow is not a panic that
//! can be caught: it ends the whole process, and the ingest with it. So the
//! nesting is measured first, here, by a loop rather than recursion, and a
//! document deeper than `parsing.maxNestingDepth` fails alone, named,
//! before the library sees it. Measured: the file's own syntax (streams'
//! data skipped), and the decoded data of every stream that the library
//! parses as PDF syntax: page and form content, object streams
//! (`/Type /ObjStm`, whose objects are read like any other), patterns and
//! plain streams without a type. Streams of binary data (images, fonts,
//! colour profiles, cross-reference streams, sampled functions, embedded
//! files) are not: their bytes are not syntax, and counting brackets in
//! them would refuse good files.
//!
//! **Damage.** The library recovers what it can of a Flate stream that
//! fails to inflate and says nothing: a flipped byte put content-stream
//! operators (`…pumTj ET B7Tj ET…`) into the index as text. Every Flate
//! stream is inflated here strictly; one that fails is recorded with its
//! object number, so that the pages drawn from it are flagged and their
//! sentences doubted ([`super::extract`]).
//!
//! **Bombs.** Inflating is streamed and counted, never held: a stream
//! that inflates past [`Survey::bomb_limit`] fails the document as a
//! compression bomb, in bounded memory, rather than being taken by the
//! library (which holds up to 256 MB of it, again for each attempt) for a
//! page without text.
//!
//! **Objects.** The object numbers the file holds (`N G obj`), so that a
//! page whose content stream is not in the file (a truncated download)
//! counts as lost, not as a scan without text.

use std::collections::{HashMap, HashSet};
use std::io::Read;

use super::super::{Format, ParseFailure};

/// Bytes of a stream's dictionary searched backwards from its `stream`
/// keyword for the `obj` that opens it.
const DICTIONARY_WINDOW: usize = 64 * 1024;

/// The most a stream may inflate to whatever the memory bound: the
/// library's own cap on one stream.
const MOST_INFLATED: u64 = 256 * 1024 * 1024;

/// What the survey found in a file that passed it.
#[derive(Debug, Default)]
pub(super) struct Survey {
    /// Object numbers of the file's top-level objects.
    pub objects: HashSet<u32>,
    /// Streams that failed to decode, by object number, with the reason.
    pub damaged: HashMap<u32, String>,
}

impl Survey {
    /// The most one stream may inflate to: the library's cap, or a quarter
    /// of the document's memory bound when that is lower.
    pub fn bomb_limit(max_memory: u64) -> u64 {
        MOST_INFLATED.min(max_memory / 4).max(1024 * 1024)
    }
}

/// Surveys `bytes`: fails when an array or dictionary, in the file or in
/// a stream of PDF syntax inside it, nests deeper than `limit`, or when a
/// stream inflates past [`Survey::bomb_limit`]`(max_memory)`.
pub(super) fn survey(bytes: &[u8], limit: u32, max_memory: u64) -> Result<Survey, ParseFailure> {
    let too_deep = |deepest: u32, place: String| {
        if deepest > limit {
            Err(ParseFailure::Corrupt {
                format: Format::Pdf,
                detail: format!(
                    "arrays and dictionaries nest deeper than {limit} levels in {place} \
                     (parsing.maxNestingDepth)"
                ),
            })
        } else {
            Ok(())
        }
    };
    let bomb_limit = Survey::bomb_limit(max_memory);
    let mut found = Survey::default();
    let mut file = Scanner::new(limit);
    let mut at = 0;
    while at < bytes.len() {
        let Some(start) = file.feed_until_stream(bytes, at, &mut found.objects) else {
            break;
        };
        // `start` is just past the `stream` keyword's end of line.
        let end = find(bytes, start, b"endstream").unwrap_or(bytes.len());
        let data = &bytes[start..end];
        let opened = dictionary_start(bytes, start);
        let object = object_number(bytes, opened.saturating_sub(3));
        let dictionary = &bytes[opened..start];
        let place = || match object {
            Some(n) => format!("the stream of object {n}"),
            None => format!("the stream at byte {start}"),
        };
        let names = names(dictionary);
        let syntax = syntax_stream(&names);
        let mut stream = Scanner::new(limit);
        let flate_only = filters(&names) == ["FlateDecode"];
        if flate_only {
            let scanned = syntax.is_some();
            match inflate(data, bomb_limit, |chunk| {
                if scanned {
                    stream.feed(chunk);
                }
            }) {
                Ok(()) => {}
                Err(Inflated::Bomb) => {
                    return Err(ParseFailure::Corrupt {
                        format: Format::Pdf,
                        detail: format!(
                            "{} inflates past {} MB: a compression bomb, not read",
                            place(),
                            bomb_limit / (1024 * 1024)
                        ),
                    });
                }
                Err(Inflated::Damaged(reason)) => {
                    if let Some(n) = object {
                        found.damaged.insert(n, reason);
                    }
                    // What the library makes of it instead (it recovers in
                    // other ways than a prefix), measured as it will read it.
                    if scanned && let Some(decoded) = decode(data, &["FlateDecode".into()]) {
                        stream.feed(&decoded);
                    }
                }
            }
        } else if let Some(filters) = syntax
            && let Some(decoded) = decode(data, &filters)
        {
            stream.feed(&decoded);
        }
        too_deep(stream.deepest, place())?;
        at = end + b"endstream".len();
    }
    too_deep(file.deepest, "the file's objects".into())?;
    Ok(found)
}

/// Why a stream did not inflate.
enum Inflated {
    Bomb,
    Damaged(String),
}

/// Inflates a Flate stream's `data` strictly (a damaged stream is an
/// error, with what inflated before the damage handed on), a piece at a
/// time to `sink`, stopping past `limit` bytes.
fn inflate(data: &[u8], limit: u64, mut sink: impl FnMut(&[u8])) -> Result<(), Inflated> {
    let mut decoder = flate2::read::ZlibDecoder::new(data);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        match decoder.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                total += n as u64;
                if total > limit {
                    return Err(Inflated::Bomb);
                }
                sink(&buffer[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Inflated::Damaged(format!(
                    "its Flate data is damaged ({e})"
                )));
            }
        }
    }
}

/// The object number of the `N G obj` whose `obj` starts at `obj`.
fn object_number(bytes: &[u8], obj: usize) -> Option<u32> {
    if bytes.get(obj..obj + 3) != Some(b"obj") {
        return None;
    }
    let mut i = obj;
    let skip = |i: &mut usize, digits: bool| {
        let from = *i;
        while *i > 0
            && (bytes[*i - 1].is_ascii_digit() == digits)
            && (digits || bytes[*i - 1].is_ascii_whitespace())
        {
            *i -= 1;
        }
        *i < from
    };
    if !skip(&mut i, false) || !skip(&mut i, true) || !skip(&mut i, false) {
        return None;
    }
    let end = i;
    if !skip(&mut i, true) {
        return None;
    }
    std::str::from_utf8(&bytes[i..end]).ok()?.parse().ok()
}

/// Where a stream's dictionary starts: just after the `obj` keyword before
/// it, within [`DICTIONARY_WINDOW`] bytes.
fn dictionary_start(bytes: &[u8], stream: usize) -> usize {
    let from = stream.saturating_sub(DICTIONARY_WINDOW);
    bytes[from..stream]
        .windows(3)
        .rposition(|w| w == b"obj")
        .map_or(from, |i| from + i + 3)
}

/// The filters of a stream that holds PDF syntax, `None` for a stream of
/// binary data (see the module's doc); `names` are its dictionary's.
fn syntax_stream(names: &[String]) -> Option<Vec<String>> {
    let has = |name: &str| names.iter().any(|n| n == name);
    if has("ObjStm") {
        return Some(filters(names));
    }
    let binary_type = ["XRef", "EmbeddedFile", "Metadata", "XObject"]
        .iter()
        .any(|t| has(t))
        && !has("Form");
    let binary_subtype = names
        .windows(2)
        .any(|w| w[0] == "Subtype" && w[1] != "Form");
    let binary_keys = [
        "Length1",
        "Length2",
        "Length3",
        "FunctionType",
        "N",
        "BitsPerComponent",
    ]
    .iter()
    .any(|k| has(k));
    if binary_type || binary_subtype || binary_keys {
        return None;
    }
    Some(filters(names))
}

/// The filter names after `/Filter`, in order.
fn filters(names: &[String]) -> Vec<String> {
    names
        .iter()
        .skip_while(|n| n.as_str() != "Filter")
        .skip(1)
        .take_while(|n| n.ends_with("Decode") || KNOWN_ABBREVIATIONS.contains(&n.as_str()))
        .map(|n| full_filter_name(n).to_string())
        .collect()
}

/// Abbreviated filter names (inline images use them; some writers do in
/// streams too).
const KNOWN_ABBREVIATIONS: [&str; 5] = ["Fl", "AHx", "A85", "LZW", "RL"];

fn full_filter_name(name: &str) -> &str {
    match name {
        "Fl" => "FlateDecode",
        "AHx" => "ASCIIHexDecode",
        "A85" => "ASCII85Decode",
        "LZW" => "LZWDecode",
        "RL" => "RunLengthDecode",
        other => other,
    }
}

/// The stream's data through its filters, `None` when a filter is not one
/// that yields text (images' DCT, JBIG2, JPX, CCITT) or fails.
fn decode(data: &[u8], filters: &[String]) -> Option<Vec<u8>> {
    if filters.is_empty() {
        return Some(data.to_vec());
    }
    let text_filters = [
        "FlateDecode",
        "ASCIIHexDecode",
        "ASCII85Decode",
        "LZWDecode",
        "RunLengthDecode",
    ];
    if !filters.iter().all(|f| text_filters.contains(&f.as_str())) {
        return None;
    }
    pdf_oxide::decoders::decode_stream(data, filters).ok()
}

/// The `/Name`s of a dictionary's text, in order, `#xx` escapes left as
/// they are.
fn names(dictionary: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut i = 0;
    while i < dictionary.len() {
        if dictionary[i] == b'/' {
            let start = i + 1;
            let mut end = start;
            while end < dictionary.len() && !is_delimiter_or_space(dictionary[end]) {
                end += 1;
            }
            names.push(String::from_utf8_lossy(&dictionary[start..end]).into_owned());
            i = end;
        } else {
            i += 1;
        }
    }
    names
}

fn is_delimiter_or_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0 || b"()<>[]{}/%".contains(&b)
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| from + i)
}

/// Where the lexer is between two bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lex {
    Syntax,
    /// After `%`, to the end of the line.
    Comment,
    /// Inside `( … )`: parentheses nest, a backslash escapes.
    Literal {
        open: u32,
        escaped: bool,
    },
    /// After one `<`: a dictionary if another follows, else a hex string.
    Less,
    /// Inside `< … >`.
    Hex,
    /// After one `>`: a dictionary's end if another follows.
    Greater,
}

/// Measures nesting over bytes fed in order, without recursion.
struct Scanner {
    lex: Lex,
    depth: u32,
    deepest: u32,
    /// The last bytes of syntax seen, to find the `stream` keyword.
    tail: [u8; 7],
    /// Past this depth scanning stops: the answer is known.
    limit: u32,
}

impl Scanner {
    fn new(limit: u32) -> Self {
        Self {
            lex: Lex::Syntax,
            depth: 0,
            deepest: 0,
            tail: [0; 7],
            limit,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
            if self.deepest > self.limit {
                return;
            }
        }
    }

    /// Feeds `bytes[from..]` up to and including a `stream` keyword and
    /// its end of line, and returns where the stream's data starts;
    /// `None` when the bytes end first. The number of every `N G obj`
    /// met on the way joins `objects`.
    fn feed_until_stream(
        &mut self,
        bytes: &[u8],
        from: usize,
        objects: &mut HashSet<u32>,
    ) -> Option<usize> {
        let mut i = from;
        while i < bytes.len() {
            let b = bytes[i];
            i += 1;
            self.byte(b);
            if self.lex == Lex::Syntax
                && &self.tail[4..] == b"obj"
                && self.tail[3].is_ascii_whitespace()
                && bytes.get(i).is_none_or(|&next| is_delimiter_or_space(next))
                && let Some(number) = object_number(bytes, i - 3)
            {
                objects.insert(number);
            }
            if self.lex == Lex::Syntax
                && &self.tail[1..] == b"stream"
                && !self.tail[0].is_ascii_alphanumeric()
            {
                // The keyword ends a line: CR LF or LF (a lone CR is
                // tolerated, as readers do).
                match (bytes.get(i), bytes.get(i + 1)) {
                    (Some(b'\r'), Some(b'\n')) => return Some(i + 2),
                    (Some(b'\n'), _) | (Some(b'\r'), _) => return Some(i + 1),
                    _ => {}
                }
            }
        }
        None
    }

    fn byte(&mut self, b: u8) {
        self.lex = match self.lex {
            Lex::Syntax => self.syntax(b),
            Lex::Comment if b == b'\n' || b == b'\r' => Lex::Syntax,
            Lex::Comment => Lex::Comment,
            Lex::Literal {
                open,
                escaped: true,
            } => Lex::Literal {
                open,
                escaped: false,
            },
            Lex::Literal { open, .. } => match b {
                b'\\' => Lex::Literal {
                    open,
                    escaped: true,
                },
                b'(' => Lex::Literal {
                    open: open + 1,
                    escaped: false,
                },
                b')' if open <= 1 => Lex::Syntax,
                b')' => Lex::Literal {
                    open: open - 1,
                    escaped: false,
                },
                _ => Lex::Literal {
                    open,
                    escaped: false,
                },
            },
            Lex::Less if b == b'<' => {
                self.open();
                Lex::Syntax
            }
            Lex::Less | Lex::Hex if b == b'>' => Lex::Syntax,
            Lex::Less | Lex::Hex => Lex::Hex,
            Lex::Greater if b == b'>' => {
                self.depth = self.depth.saturating_sub(1);
                Lex::Syntax
            }
            Lex::Greater => self.syntax(b),
        };
        if self.lex == Lex::Syntax {
            self.tail.rotate_left(1);
            self.tail[6] = b;
        }
    }

    fn syntax(&mut self, b: u8) -> Lex {
        match b {
            b'%' => Lex::Comment,
            b'(' => Lex::Literal {
                open: 1,
                escaped: false,
            },
            b'<' => Lex::Less,
            b'>' => Lex::Greater,
            b'[' => {
                self.open();
                Lex::Syntax
            }
            b']' => {
                self.depth = self.depth.saturating_sub(1);
                Lex::Syntax
            }
            _ => Lex::Syntax,
        }
    }

    fn open(&mut self) {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[u8], limit: u32) -> Result<Survey, ParseFailure> {
        survey(bytes, limit, u64::MAX)
    }

    fn deepest(bytes: &[u8]) -> u32 {
        let mut scanner = Scanner::new(u32::MAX);
        scanner.feed(bytes);
        scanner.deepest
    }

    #[test]
    fn arrays_and_dictionaries_count_strings_and_comments_do_not() {
        assert_eq!(deepest(b"<< /A [1 [2] << /B 3 >>] >>"), 3);
        assert_eq!(deepest(b"(a [[[ string) <5B5B5B> % [[[[ comment\n[1]"), 1);
        assert_eq!(deepest(b"(nested (parens [[) still) [x]"), 1);
        assert_eq!(deepest(b"(escaped \\) [[[ ) [x]"), 1);
        assert_eq!(deepest(&[b'['; 5000]), 5000);
    }

    /// A one-object PDF whose stream has `dictionary` entries besides its
    /// length and `data`.
    fn with_stream(dictionary: &str, data: &[u8]) -> Vec<u8> {
        let mut pdf = format!(
            "%PDF-1.7\n4 0 obj\n<< {dictionary} /Length {} >>\nstream\n",
            data.len()
        )
        .into_bytes();
        pdf.extend(data);
        pdf.extend(b"\nendstream\nendobj\n");
        pdf
    }

    #[test]
    fn a_deep_content_stream_is_found_through_its_filter() {
        use std::io::Write;
        let content = [b"BT ".as_slice(), &[b'['; 3000], b" TJ ET"].concat();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&content).unwrap();
        let compressed = zlib.finish().unwrap();
        let error = check(&with_stream("/Filter /FlateDecode", &compressed), 512)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("deeper than 512 levels in the stream"),
            "{error}"
        );
        let error = check(
            &with_stream(
                "/Type /ObjStm /N 1 /First 4 /Filter [/FlateDecode]",
                &compressed,
            ),
            512,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("in the stream"), "{error}");
        assert!(check(&with_stream("/Filter /FlateDecode", &compressed), 4000).is_ok());
    }

    #[test]
    fn binary_streams_are_skipped() {
        let brackets = [b'['; 4000];
        assert!(check(&with_stream("", &brackets), 512).is_err());
        for binary in [
            "/Type /XObject /Subtype /Image /BitsPerComponent 8",
            "/Length1 4000",
            "/N 3",
            "/Type /XRef",
        ] {
            assert!(
                check(&with_stream(binary, &brackets), 512).is_ok(),
                "{binary}"
            );
        }
    }

    #[test]
    fn deep_objects_of_the_file_itself_are_refused() {
        let mut pdf = b"%PDF-1.7\n1 0 obj\n".to_vec();
        pdf.extend([b'['; 600]);
        pdf.extend([b']'; 600]);
        pdf.extend(b"\nendobj\n");
        let error = check(&pdf, 512).unwrap_err().to_string();
        assert!(error.contains("in the file's objects"), "{error}");
        assert!(check(&pdf, 600).is_ok());
    }

    #[test]
    fn objects_damage_and_bombs_are_found() {
        use std::io::Write;
        let deflate = |bytes: &[u8]| {
            let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            zlib.write_all(bytes).unwrap();
            zlib.finish().unwrap()
        };
        let content = b"BT /F1 12 Tf 72 720 Td (Hello there) Tj ET".repeat(50);
        let good = with_stream("/Filter /FlateDecode", &deflate(&content));
        let found = check(&good, 512).unwrap();
        assert_eq!(found.objects, HashSet::from([4]));
        assert!(found.damaged.is_empty());
        // One flipped byte in the middle of the compressed data.
        let mut flipped = deflate(&content);
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x10;
        let found = check(&with_stream("/Filter /FlateDecode", &flipped), 512).unwrap();
        assert!(found.damaged[&4].contains("damaged"), "{:?}", found.damaged);
        // 20 MB of zeros in 20 KB, under a 64 MiB memory bound (a quarter
        // of it per stream): refused as a bomb, in bounded memory.
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..20 {
            zlib.write_all(&zeros).unwrap();
        }
        let bomb = with_stream("/Filter /FlateDecode", &zlib.finish().unwrap());
        let error = survey(&bomb, 512, 64 << 20).unwrap_err().to_string();
        assert!(
            error.contains("inflates past 16 MB: a compression bomb"),
            "{error}"
        );
        assert_eq!(Survey::bomb_limit(2 << 30), 256 << 20);
        assert!(object_number(b"12 0 obj", 5) == Some(12));
        assert!(object_number(b"endobj", 3).is_none());
    }
}
