//! `trellis parse`: one document's tree, canonical text or skeleton.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::ValueEnum;

use super::ProfileArgs;

#[derive(clap::Args)]
pub struct ParseArgs {
    file: PathBuf,
    /// What to print.
    #[arg(long, value_enum, default_value_t = ParseOutput::Json)]
    format: ParseOutput,
    #[command(flatten)]
    profile: ProfileArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum ParseOutput {
    /// The DocumentTree as JSON.
    Json,
    /// The canonical text every offset points into.
    Markdown,
    /// The sentence skeleton as JSON.
    Skeleton,
}

impl ParseArgs {
    pub fn run(&self) -> Result<ExitCode> {
        let file = &self.file;
        let pipeline = self.profile.pipeline()?;
        let tree = trellis::parse::parse_file(file, &pipeline.spec().parsing)?;
        for warning in &tree.warnings {
            tracing::warn!(file = %file.display(), "{warning}");
        }
        let stdout = std::io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        match self.format {
            ParseOutput::Json => {
                serde_json::to_writer_pretty(&mut out, &tree)?;
                writeln!(out)?;
            }
            ParseOutput::Markdown => out.write_all(tree.text.as_bytes())?,
            ParseOutput::Skeleton => {
                let document = pipeline.process_tree(&file.display().to_string(), tree);
                serde_json::to_writer_pretty(&mut out, &document.skeleton)?;
                writeln!(out)?;
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}
