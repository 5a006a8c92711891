//! Arbitrary bytes through the PDF parser: it must answer with a tree or a
//! `ParseFailure`, never panic or hang.
//!
//! The PDF library runs on a guarded thread named "pdf", where a panic is
//! caught and becomes a parse error of that document (see
//! `trellis::parse::pdf`); libFuzzer's panic hook would count those as
//! crashes, so `trellis_fuzz::quiet_guarded_panics` lets them through to the
//! guard. A panic anywhere else is still a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trellis::parse::{Format, parse_bytes};

fuzz_target!(|bytes: &[u8]| {
    trellis_fuzz::quiet_guarded_panics();
    let _ = parse_bytes(bytes, Format::Pdf, &trellis_fuzz::spec());
});
