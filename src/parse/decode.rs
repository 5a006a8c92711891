//! Text decoding for the text formats (Markdown, HTML, plain text).
//!
//! A byte-order mark decides first (UTF-8, UTF-16 LE/BE); then UTF-8 is
//! tried; bytes that are not UTF-8 but look like text are decoded as
//! Windows-1252 (a superset of Latin-1 for printable text) with a warning.
//! Content that looks binary is refused rather than decoded into noise.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

use super::ParseFailure;

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
    // Plain counting loops over bytes vectorise; the rare non-ASCII cases
    // are found with memchr.
    // `&`, not `&&`: no branches, so the loops vectorise.
    let is_c0 = |b: u8| {
        ((b < 0x20) & (b != b'\t') & (b != b'\n') & (b != b'\r') & (b != 0x0c)) | (b == 0x7f)
    };
    // Counted in arrays of 128 bytes into a u8 (which cannot overflow): a
    // length the compiler knows lets it unroll the loop into whole vectors,
    // 1.6 times as fast here as slices of a length it does not.
    let (blocks, tail) = bytes.as_chunks::<128>();
    let c0 = blocks
        .iter()
        .map(|block| usize::from(block.iter().fold(0u8, |n, &b| n + u8::from(is_c0(b)))))
        .sum::<usize>()
        + tail.iter().filter(|&&b| is_c0(b)).count();
    let c1 = memchr::memchr_iter(0xc2, bytes)
        .filter(|&i| matches!(bytes.get(i + 1), Some(0x80..=0x9f)))
        .count();
    let replacement = memchr::memmem::find_iter(bytes, "\u{fffd}".as_bytes()).count();
    let control = c0 + c1 + replacement;
    if control == 0 {
        return Ok(());
    }
    let total = bytes.iter().filter(|&&b| b & 0xc0 != 0x80).count();
    if total > 0 && control * 100 > total {
        return Err(ParseFailure::Binary(format!(
            "{control} of the first {total} characters are control characters"
        )));
    }
    Ok(())
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
