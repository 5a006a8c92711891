//! What the fuzz targets share.

use std::sync::Once;

use trellis::spec::ParsingSpec;

/// The parsing bounds under fuzzing: the defaults, with a time bound short
/// enough that a hang shows up as a `TimedOut` error well inside
/// libFuzzer's own `-timeout`, which the fuzz script sets above it.
pub fn spec() -> ParsingSpec {
    ParsingSpec {
        max_seconds_per_document: 10,
        ..ParsingSpec::default()
    }
}

/// Installs, once, a panic hook that ignores panics on the PDF parser's
/// guarded thread (the parser turns them into errors, as users see them)
/// and aborts on every other panic, as libFuzzer's own hook does, so that
/// those are reported as crashes.
pub fn quiet_guarded_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if std::thread::current().name() == Some("pdf") {
                return;
            }
            eprintln!("{info}");
            std::process::abort();
        }));
    });
}
