//! `trellis segment`: text on stdin split into sentences.

use std::io::{BufWriter, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::ProfileArgs;

#[derive(clap::Args)]
pub struct SegmentArgs {
    /// Print a JSON array of sentences instead.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    profile: ProfileArgs,
}

impl SegmentArgs {
    pub fn run(&self) -> Result<ExitCode> {
        let pipeline = self.profile.pipeline()?;
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin (it must be UTF-8 text)")?;
        let sentences: Vec<String> = pipeline
            .segmenter()
            .split(&text)
            .into_iter()
            .map(|range| trellis::parse::collapse_whitespace(&text[range]))
            .collect();
        let stdout = std::io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        if self.json {
            serde_json::to_writer(&mut out, &sentences)?;
            writeln!(out)?;
        } else {
            for sentence in &sentences {
                writeln!(out, "{sentence}")?;
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}
