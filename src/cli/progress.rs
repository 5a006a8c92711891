//! Progress bars on stderr for the long runs (`ingest`, `eval`).

use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// One progress bar per stage of a long run (parse, embed, …, query),
/// each replacing the last when its stage begins.
pub struct StageBars {
    bars: MultiProgress,
    style: ProgressStyle,
    current: Mutex<Option<(String, ProgressBar)>>,
}

impl StageBars {
    pub fn new() -> Self {
        Self {
            bars: MultiProgress::new(),
            style: ProgressStyle::with_template("{prefix:>6} [{bar:30}] {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            current: Mutex::new(None),
        }
    }

    pub fn update(&self, stage: &str, done: u64, total: u64) {
        let Ok(mut slot) = self.current.lock() else {
            return;
        };
        if slot.as_ref().is_none_or(|(s, _)| s != stage) {
            if let Some((_, bar)) = slot.take() {
                bar.finish();
            }
            let bar = self
                .bars
                .add(ProgressBar::new(total).with_style(self.style.clone()));
            bar.set_prefix(stage.to_string());
            *slot = Some((stage.to_string(), bar));
        }
        if let Some((_, bar)) = slot.as_ref() {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    pub fn finish(&self) {
        if let Ok(mut slot) = self.current.lock()
            && let Some((_, bar)) = slot.take()
        {
            bar.finish();
        }
    }
}
