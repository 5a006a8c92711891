//! Arbitrary bytes through the DOCX parser: a tree or a `ParseFailure`,
//! never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trellis::parse::{Format, parse_bytes};

fuzz_target!(|bytes: &[u8]| {
    let _ = parse_bytes(bytes, Format::Docx, &trellis_fuzz::spec());
});
