//! Documents nested as deep as the input says, through the PDF and DOCX
//! parsers: the nesting bound (`parsing.maxNestingDepth`) must refuse them
//! before any reader recurses, whatever the depth and wherever the nesting
//! sits. A stack overflow is not a panic: it aborts the process, and
//! libFuzzer reports it as a crash.
//!
//! The input's first byte picks the format and where the nesting goes,
//! the next two the depth (0–65,535), and the rest is the text at the
//! innermost level.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trellis::parse::{Format, parse_bytes};

fuzz_target!(|bytes: &[u8]| {
    trellis_fuzz::quiet_guarded_panics();
    let [choice, high, low, text @ ..] = bytes else {
        return;
    };
    let depth = usize::from(u16::from_be_bytes([*high, *low]));
    let text = String::from_utf8_lossy(text);
    let spec = trellis_fuzz::spec();
    if choice % 2 == 0 {
        let pdf = trellis_fuzz::nested_pdf(choice / 2, depth, &text);
        let _ = parse_bytes(&pdf, Format::Pdf, &spec);
    } else {
        let docx = trellis_fuzz::nested_docx(choice / 2, depth, &text);
        let _ = parse_bytes(&docx, Format::Docx, &spec);
    }
});
