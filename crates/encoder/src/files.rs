//! Where a model's files are: the weights, in safetensors or ONNX, and the
//! directory holding `config.json` and the tokenizer.
//!
//! Models come in the layouts their publishers use: a Hugging Face or
//! sentence-transformers directory (`model.safetensors` beside
//! `config.json`), the same directory with an ONNX export (`model.onnx`),
//! Xenova's and Optimum's layout (`onnx/model.onnx` under the directory),
//! or a path to the `.onnx` file itself, whose `config.json` is beside it
//! or one directory up.

use std::path::{Path, PathBuf};

use crate::ModelError;

/// How the weights are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightsFormat {
    Safetensors,
    Onnx,
}

/// A located model.
#[derive(Clone, Debug)]
pub struct ModelFiles {
    /// The directory holding `config.json`, `tokenizer.json` and any
    /// sentence-transformers settings (`1_Pooling/`).
    pub dir: PathBuf,
    /// The weights file.
    pub weights: PathBuf,
    pub format: WeightsFormat,
}

/// Weights files looked for in a directory, in order: safetensors first,
/// as the format the publisher trained in.
const CANDIDATES: &[(&str, WeightsFormat)] = &[
    ("model.safetensors", WeightsFormat::Safetensors),
    ("model.onnx", WeightsFormat::Onnx),
    ("onnx/model.onnx", WeightsFormat::Onnx),
];

impl ModelFiles {
    /// Locates the model at `path`: a model directory or an `.onnx` file.
    pub fn locate(path: &Path) -> Result<Self, ModelError> {
        if path.is_file() {
            if path.extension().is_none_or(|e| e != "onnx") {
                return Err(ModelError::new(
                    path,
                    "a model file must be an ONNX export (.onnx); for safetensors give the \
                     model's directory",
                ));
            }
            let beside = path.parent().unwrap_or(Path::new("."));
            let dir = [Some(beside), beside.parent()]
                .into_iter()
                .flatten()
                .find(|dir| dir.join("config.json").is_file())
                .ok_or_else(|| {
                    ModelError::new(
                        path,
                        "no config.json beside the ONNX file or one directory up: the \
                         architecture (layers, heads, sizes) is read from it",
                    )
                })?;
            return Ok(Self {
                dir: dir.to_path_buf(),
                weights: path.to_path_buf(),
                format: WeightsFormat::Onnx,
            });
        }
        if !path.is_dir() {
            return Err(ModelError::new(path, "no such model directory or file"));
        }
        CANDIDATES
            .iter()
            .map(|&(name, format)| (path.join(name), format))
            .find(|(weights, _)| weights.is_file())
            .map(|(weights, format)| Self {
                dir: path.to_path_buf(),
                weights,
                format,
            })
            .ok_or_else(|| {
                let names: Vec<&str> = CANDIDATES.iter().map(|(name, _)| *name).collect();
                ModelError::new(
                    path,
                    format!("no model weights: looked for {}", names.join(", ")),
                )
            })
    }

    /// The architecture's settings.
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.json")
    }
}
