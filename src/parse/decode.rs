//! Text decoding for the text formats (Markdown, HTML, plain text).
//!
//! A byte-order mark decides first (UTF-8, UTF-16 LE/BE); then UTF-8 is
//! tried; bytes that are not UTF-8 but look like text are decoded as
//! Windows-1252 (a superset of Latin-1 for printable text) with a warning.
//! Content that looks binary is refused rather than decoded into noise.

use std::borrow::Cow;
use std::ops::ControlFlow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

use super::ParseFailure;
use crate::byteset::{count_chars, scan_blocks};

/// Decoded text and what the decoder had to say about it.
#[derive(Debug)]
pub struct Decoded<'a> {
    /// The text, borrowed from the file's bytes when they were UTF-8.
    pub text: Cow<'a, str>,
    pub encoding: &'static str,
    /// Set when the text was not what it claimed to be (not UTF-8, or
    /// containing malformed sequences that were replaced).
    pub warning: Option<String>,
}

/// Decodes a text file's bytes.
pub fn decode_text(bytes: &[u8]) -> Result<Decoded<'_>, ParseFailure> {
    if let Some((encoding, bom_len)) = Encoding::for_bom(bytes) {
        let body = &bytes[bom_len..];
        let (text, had_errors) = encoding.decode_without_bom_handling(body);
        check_not_binary(&text)?;
        let warning = had_errors.then(|| {
            format!(
                "malformed {} sequences replaced with U+FFFD",
                encoding.name()
            )
        });
        return Ok(Decoded {
            text,
            encoding: encoding.name(),
            warning,
        });
    }
    if looks_like_utf16(bytes) {
        return Err(ParseFailure::Binary(
            "looks like UTF-16 without a byte-order mark; add a BOM or convert to UTF-8".into(),
        ));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            check_not_binary(text)?;
            Ok(Decoded {
                text: Cow::Borrowed(text),
                encoding: UTF_8.name(),
                warning: None,
            })
        }
        Err(e) => {
            if bytes.contains(&0) {
                return Err(ParseFailure::Binary("contains NUL bytes".into()));
            }
            let (text, _) = WINDOWS_1252.decode_without_bom_handling(bytes);
            check_not_binary(&text)?;
            Ok(Decoded {
                text,
                encoding: WINDOWS_1252.name(),
                warning: Some(format!(
                    "not valid UTF-8 (first bad byte at offset {}); decoded as Windows-1252",
                    e.valid_up_to()
                )),
            })
        }
    }
}

/// NUL bytes at every other position in the first bytes: UTF-16 without BOM.
fn looks_like_utf16(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(512)];
    if head.len() < 8 {
        return false;
    }
    let even_nuls = head.iter().step_by(2).filter(|&&b| b == 0).count();
    let odd_nuls = head.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
    let half = head.len() / 2;
    even_nuls * 10 > half * 9 || odd_nuls * 10 > half * 9
}

/// Refuses text where control characters (other than tab, newline, carriage
/// return and form feed), NUL or U+FFFD replacement characters make up more
/// than 1% of the first 64 KiB. Works on bytes: every C0 control is one
/// byte, a C1 control is `C2 80..=9F` and U+FFFD is `EF BF BD` in UTF-8.
fn check_not_binary(text: &str) -> Result<(), ParseFailure> {
    let mut end = text.len().min(64 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let bytes = head.as_bytes();
    let control = count_controls(bytes);
    if control == 0 {
        return Ok(());
    }
    let total = count_chars(head);
    if total > 0 && control * 100 > total {
        return Err(ParseFailure::Binary(format!(
            "{control} of the first {total} characters are control characters"
        )));
    }
    Ok(())
}

/// The control characters of [`check_not_binary`] in `bytes` (UTF-8): C0
/// controls other than tab, newline, carriage return and form feed, DEL,
/// C1 controls and U+FFFD.
fn count_controls(bytes: &[u8]) -> usize {
    // One read of each block for all three kinds: the first set holds the
    // C0 controls and DEL with the four allowed controls among them, the
    // second those four and the lead bytes of a C1 control and of U+FFFD,
    // which are rare enough to be checked one by one.
    const ALLOWED: [u8; 4] = [b'\t', b'\n', b'\r', 0x0c];
    const ALLOWED_AND_LEADS: [u8; 6] = [ALLOWED[0], ALLOWED[1], ALLOWED[2], ALLOWED[3], 0xc2, 0xef];
    let (mut c0, mut c1, mut replacement) = (0, 0, 0);
    let _ = scan_blocks(
        bytes,
        (&[0x7f], 0x20),
        (&ALLOWED_AND_LEADS, 0),
        |start, controls, allowed_and_leads| -> ControlFlow<()> {
            c0 += (controls & !allowed_and_leads).count_ones() as usize;
            let mut leads = allowed_and_leads & !controls;
            while leads != 0 {
                let at = start + leads.trailing_zeros() as usize;
                match bytes.get(at..) {
                    Some([0xc2, 0x80..=0x9f, ..]) => c1 += 1,
                    Some([0xef, 0xbf, 0xbd, ..]) => replacement += 1,
                    _ => {}
                }
                leads &= leads - 1;
            }
            ControlFlow::Continue(())
        },
    );
    c0 + c1 + replacement
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_passes_through() {
        let d = decode_text("Grüße, Zürich".as_bytes()).unwrap();
        assert_eq!(d.text, "Grüße, Zürich");
        assert!(d.warning.is_none());
    }

    #[test]
    fn utf16_with_bom_is_decoded() {
        let mut le = vec![0xFF, 0xFE];
        for unit in "Café".encode_utf16() {
            le.extend_from_slice(&unit.to_le_bytes());
        }
        assert_eq!(decode_text(&le).unwrap().text, "Café");
        let mut be = vec![0xFE, 0xFF];
        for unit in "Café".encode_utf16() {
            be.extend_from_slice(&unit.to_be_bytes());
        }
        assert_eq!(decode_text(&be).unwrap().text, "Café");
    }

    #[test]
    fn latin1_falls_back_with_a_warning() {
        let d = decode_text(b"Caf\xe9 cr\xe8me \x93quoted\x94").unwrap();
        assert_eq!(d.text, "Café crème \u{201c}quoted\u{201d}");
        assert!(d.warning.unwrap().contains("Windows-1252"));
    }

    proptest::proptest! {
        /// The block count agrees with a count character by character.
        #[test]
        fn controls_are_counted_as_characters(
            text in "[a \t\n\r\x0c\x00\x01\x1f\x7f\u{80}\u{9f}\u{a0}\u{ff}\u{fffd}\u{fffc}\u{2014}é]{0,300}"
        ) {
            let expected = text
                .chars()
                .filter(|&c| {
                    (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c')) || c == '\u{fffd}'
                })
                .count();
            proptest::prop_assert_eq!(count_controls(text.as_bytes()), expected);
        }
    }

    #[test]
    fn binary_is_refused() {
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        assert!(matches!(
            decode_text(&garbage),
            Err(ParseFailure::Binary(_))
        ));
    }
}
