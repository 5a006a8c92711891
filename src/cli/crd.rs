//! `trellis crd`: the CustomResourceDefinitions of the spec types.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use trellis::spec;

#[derive(clap::Args)]
pub struct CrdArgs {
    /// Write `<plural>.<group>.yaml` files here instead of printing.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

impl CrdArgs {
    /// The CRDs on stdout, or one file each under `--out`.
    pub fn run(&self) -> Result<ExitCode> {
        let crds = spec::crds();
        match &self.out {
            None => {
                for crd in &crds {
                    out!("---\n{}", spec::crd_yaml(crd)?)?;
                }
            }
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                for crd in &crds {
                    let name = crd.metadata.name.as_deref().unwrap_or("crd");
                    let path = dir.join(format!("{name}.yaml"));
                    std::fs::write(&path, spec::crd_yaml(crd)?)
                        .with_context(|| format!("writing {}", path.display()))?;
                    outln!("{}", path.display())?;
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
