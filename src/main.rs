//! The `trellis` command line.
//!
//! Exit status: 0 when everything succeeded, 1 on a fatal error, 2 on a
//! usage error, 3 when some documents failed and the others were processed.

use std::process::ExitCode;

use clap::Parser;

mod cli;

/// Counts each thread's live memory, for `parsing.maxMemoryBytesPerDocument`.
#[global_allocator]
static ALLOCATOR: trellis::memory::CountingAllocator = trellis::memory::CountingAllocator;

fn main() -> ExitCode {
    // A write past the file-size limit (`ulimit -f`, a container's
    // limit) ends the process with SIGXFSZ, without a word. Ignored, the
    // write fails with EFBIG instead, and the error names the file.
    #[cfg(unix)]
    // SAFETY: installs SIG_IGN, no handler code, before any thread starts.
    if let Err(e) = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGXFSZ,
            nix::sys::signal::SigHandler::SigIgn,
        )
    } {
        eprintln!("warning: cannot ignore SIGXFSZ: {e}");
    }
    let cli = cli::Cli::parse();
    cli::logging::init(cli.log_format, cli.verbose);
    match cli.command.run() {
        Ok(code) => code,
        // The reader went away (`| head`): done, as Unix tools are.
        Err(e) if cli::errors::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", cli::errors::error_chain(&e));
            ExitCode::FAILURE
        }
    }
}
