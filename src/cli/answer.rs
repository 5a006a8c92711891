//! `trellis answer`: a question answered in sentences, each citing the
//! passages it comes from, by the route's generation stage over the
//! embedded engine.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use trellis::generate::{GeneratedAnswer, Generator};

use super::query::{QueryArgs, Retrieved, console_bold};

#[derive(clap::Args)]
pub struct AnswerArgs {
    #[command(flatten)]
    query: QueryArgs,
}

impl AnswerArgs {
    pub fn run(&self) -> Result<ExitCode> {
        let Retrieved {
            loaded,
            route,
            answer,
        } = self.query.retrieve()?;
        let generator = Generator::from_spec(&route.generation)?;
        let json = self.query.json();
        // Text as the model writes it, unless the whole answer is printed
        // as JSON at the end.
        let mut streamed = false;
        let mut on_text = |piece: &str| {
            if !json {
                streamed = true;
                let mut stdout = std::io::stdout();
                // A closed stdout ends the command at the next full write.
                let _ = stdout.write_all(piece.as_bytes());
                let _ = stdout.flush();
            }
        };
        let written = generator
            .answer(
                self.query.question(),
                &answer,
                &loaded.index,
                loaded.embedder.as_ref(),
                &mut on_text,
            )
            .with_context(|| {
                format!(
                    "answering with provider {} (the retrieval itself succeeded: \
                     `trellis query` shows its results)",
                    generator.provider_name()
                )
            })?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&written)?)?;
            return Ok(ExitCode::SUCCESS);
        }
        if streamed {
            outln!("\n")?;
        } else {
            outln!("{}\n", written.answer)?;
        }
        print_checks(&written)?;
        print_sources(&written)?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The sentences the check did not support, and why.
fn print_checks(written: &GeneratedAnswer) -> Result<()> {
    for sentence in written.sentences.iter().filter(|s| !s.support.supported) {
        let flags: Vec<&str> = sentence.support.flags.iter().map(|f| f.as_str()).collect();
        let mut why = flags.join(", ");
        if !sentence.support.missing.is_empty() {
            why.push_str(&format!(
                "; not in its sources: {}",
                sentence.support.missing.join(", ")
            ));
        }
        outln!(
            "unsupported ({why}; similarity {:.2}): {}",
            sentence.support.similarity,
            sentence.text
        )?;
    }
    if written.dropped_sentences > 0 {
        outln!(
            "{} unsupported sentence(s) left out (generation.unsupported: drop)",
            written.dropped_sentences
        )?;
    }
    if written.unsupported > 0 || written.dropped_sentences > 0 {
        outln!()?;
    }
    Ok(())
}

/// The numbered sources, each passage with the sentences the answer cites
/// (or retrieval selected) in bold.
fn print_sources(written: &GeneratedAnswer) -> Result<()> {
    if written.sources.is_empty() {
        return Ok(());
    }
    let bold = console_bold();
    outln!("Sources:")?;
    for source in &written.sources {
        let cited: Vec<&str> = written
            .sentences
            .iter()
            .filter(|s| s.support.best_source == Some(source.number))
            .filter_map(|s| s.support.best_sentence_id.as_deref())
            .collect();
        let marked: Vec<String> = source
            .sentences
            .iter()
            .map(|s| {
                let id = s.sentence_id.as_str();
                if cited.contains(&id)
                    || (cited.is_empty() && source.selected.iter().any(|x| x == id))
                {
                    format!("{}{}{}", bold.0, s.text, bold.1)
                } else {
                    s.text.clone()
                }
            })
            .collect();
        let mut place = format!("[{}] {}", source.number, source.document);
        if !source.section_path.is_empty() {
            place.push_str(&format!(" › {}", source.section_path.join(" › ")));
        }
        if let Some(page) = source.page {
            place.push_str(&format!(" · p. {page}"));
        }
        outln!("{place}\n    {}\n", marked.join(" "))?;
    }
    if written.dropped_sources > 0 {
        outln!(
            "({} further result(s) left out to fit generation.maxContextTokens)",
            written.dropped_sources
        )?;
    }
    Ok(())
}
