//! Reading Trellis manifests: multi-document YAML files, or directories of
//! them, dispatched on `apiVersion` and `kind`.
//!
//! Core `v1` ConfigMaps are kept too: a Corpus' `configMap` source reads
//! its documents from one in the same manifest set. Objects of other API
//! groups (a `Namespace` in the same GitOps folder, say) are skipped; an object of the `trellis.dev` group with an unknown kind or
//! version, or one that does not match its schema, is an error that names
//! the file and the document's position in it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Corpus, IndexProfile, RetrievalRoute};

/// The API group and version every Trellis resource uses.
pub const API_VERSION: &str = "trellis.dev/v1alpha1";
const API_GROUP: &str = "trellis.dev";

/// One Trellis resource read from a manifest.
#[derive(Clone, Debug)]
pub enum Manifest {
    // Boxed: each is large (the cluster settings embed Kubernetes types)
    // and lists of manifests move them around.
    IndexProfile(Box<IndexProfile>),
    Corpus(Box<Corpus>),
    RetrievalRoute(Box<RetrievalRoute>),
    /// A core `v1` ConfigMap, for `configMap` sources.
    ConfigMap(Box<k8s_openapi::api::core::v1::ConfigMap>),
}

impl Manifest {
    /// The resource's kind, as written in manifests.
    pub fn kind(&self) -> &'static str {
        match self {
            Manifest::IndexProfile(_) => "IndexProfile",
            Manifest::Corpus(_) => "Corpus",
            Manifest::RetrievalRoute(_) => "RetrievalRoute",
            Manifest::ConfigMap(_) => "ConfigMap",
        }
    }

    /// The resource as an `IndexProfile`, if it is one.
    pub fn as_index_profile(&self) -> Option<&IndexProfile> {
        match self {
            Manifest::IndexProfile(p) => Some(p),
            _ => None,
        }
    }

    /// The resource as a `Corpus`, if it is one.
    pub fn as_corpus(&self) -> Option<&Corpus> {
        match self {
            Manifest::Corpus(c) => Some(c),
            _ => None,
        }
    }

    /// The resource as a `RetrievalRoute`, if it is one.
    pub fn as_route(&self) -> Option<&RetrievalRoute> {
        match self {
            Manifest::RetrievalRoute(r) => Some(r),
            _ => None,
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        let metadata = match self {
            Manifest::IndexProfile(p) => &p.metadata,
            Manifest::Corpus(c) => &c.metadata,
            Manifest::RetrievalRoute(r) => &r.metadata,
            Manifest::ConfigMap(c) => &c.metadata,
        };
        metadata.name.as_deref().unwrap_or_default()
    }
}

/// A resource together with where it was read from.
#[derive(Clone, Debug)]
pub struct LoadedManifest {
    /// The file it came from.
    pub path: PathBuf,
    /// Its position among the YAML documents of that file, from 0.
    pub document: usize,
    pub manifest: Manifest,
}

/// Everything that can go wrong reading manifests.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: YAML document {document}: {source}")]
    Yaml {
        path: PathBuf,
        document: usize,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("{path}: YAML document {document}: {message}")]
    Invalid {
        path: PathBuf,
        document: usize,
        message: String,
    },
    #[error(
        "{path}: line {line}: collections nest deeper than {MAX_NESTING} levels; \
         no manifest needs that many, and reading them is slow"
    )]
    TooDeep { path: PathBuf, line: usize },
    #[error("{path}: no {kind} found")]
    Missing { path: PathBuf, kind: &'static str },
    #[error("{path}: {count} {kind} resources found; name the one to use")]
    Ambiguous {
        path: PathBuf,
        kind: &'static str,
        count: usize,
    },
}

/// Deepest nesting of collections a manifest may have. The YAML reader
/// refuses more than 128 levels itself, but only after reading all of the
/// text, in time that grows with the square of the depth: 100,000
/// brackets took 34 s of CPU. Manifests nest a dozen levels.
pub const MAX_NESTING: usize = 100;

/// The line on which `text`'s collections first nest deeper than
/// [`MAX_NESTING`], found in one pass without recursion, before the YAML
/// reader sees it. Counted: flow collections (`[`, `{`; inside one, every
/// bracket; in block context only one that starts a value), and block
/// nesting, which needs a column of indentation or an indicator (`- `,
/// `? `) per level, so a line's first content column bounds it. Quoted
/// scalars and comments are skipped. An over-estimate at worst, which
/// only a manifest far past any real one's nesting can meet.
fn too_deep(text: &str) -> Option<usize> {
    let mut flow = 0usize;
    for (number, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut i = 0;
        // Block nesting: indentation plus sequence and key indicators.
        let mut block = 0;
        while i < bytes.len() {
            match bytes[i] {
                b' ' => block += 1,
                b'-' | b'?' if bytes.get(i + 1).is_none_or(|b| *b == b' ') => block += 1,
                _ => break,
            }
            i += 1;
        }
        if flow == 0 && block > MAX_NESTING * 2 {
            return Some(number + 1);
        }
        let mut previous = b' ';
        // The previous byte opened a flow collection (a bracket inside a
        // plain scalar does not).
        let mut opened = false;
        while i < bytes.len() {
            let b = bytes[i];
            let at_token = opened || matches!(previous, b' ' | b'\t' | b',' | b':');
            opened = false;
            match b {
                b'#' if at_token => break,
                b'\'' | b'"' if at_token || flow > 0 => {
                    // A quoted scalar, to its closing quote on this line
                    // (`''` and `\"` escape one; a multi-line one is
                    // rare in manifests and counted, not skipped).
                    i += 1;
                    while i < bytes.len() {
                        if bytes[i] == b'\\' && b == b'"' {
                            i += 1;
                        } else if bytes[i] == b {
                            if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                                i += 1;
                            } else {
                                break;
                            }
                        }
                        i += 1;
                    }
                }
                b'[' | b'{' if flow > 0 || at_token => {
                    flow += 1;
                    opened = true;
                    if flow > MAX_NESTING {
                        return Some(number + 1);
                    }
                }
                b']' | b'}' if flow > 0 => flow -= 1,
                _ => {}
            }
            previous = bytes.get(i).copied().unwrap_or(b' ');
            i += 1;
        }
        if line.trim_end() == "---" {
            flow = 0;
        }
    }
    None
}

/// Loads every Trellis resource from a file, or from every `.yaml`/`.yml`
/// file under a directory (recursively, in path order).
pub fn load_path(path: &Path) -> Result<Vec<LoadedManifest>, ManifestError> {
    let mut files = Vec::new();
    if path.is_dir() {
        for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
            let entry = entry.map_err(|e| ManifestError::Io {
                path: e.path().unwrap_or(path).to_path_buf(),
                source: e.into(),
            })?;
            let is_yaml = entry
                .path()
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml");
            if entry.file_type().is_file() && is_yaml {
                files.push(entry.into_path());
            }
        }
    } else {
        files.push(path.to_path_buf());
    }
    let mut loaded = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| ManifestError::Io {
            path: file.clone(),
            source,
        })?;
        loaded.extend(parse_str(&text, &file)?);
    }
    Ok(loaded)
}

/// Reads one resource, refusing fields this build does not know: a typo in
/// a manifest is an error here, as `kubectl apply --validate=strict` makes
/// it. (The operator reads the same types leniently, so that a newer CRD's
/// fields do not stop an older operator.)
fn strict<T: serde::de::DeserializeOwned>(
    value: serde_yaml::Value,
    kind: &str,
) -> Result<T, String> {
    let mut unknown = Vec::new();
    let parsed = serde_ignored::deserialize(value, |path| {
        let path = path.to_string();
        // The derived resource types check these two themselves.
        if path != "apiVersion" && path != "kind" {
            unknown.push(path);
        }
    })
    .map_err(|e| format!("{kind}: {e}"))?;
    if unknown.is_empty() {
        Ok(parsed)
    } else {
        Err(format!("{kind}: unknown field {}", unknown.join(", ")))
    }
}

/// The path of the first NaN or infinite number in `value`, if any.
fn non_finite(value: &serde_yaml::Value, path: &str) -> Option<String> {
    match value {
        serde_yaml::Value::Number(n) if n.is_nan() || n.is_infinite() => {
            Some(path.trim_start_matches('.').to_string())
        }
        serde_yaml::Value::Mapping(map) => map.iter().find_map(|(key, v)| {
            let key = key
                .as_str()
                .map_or_else(|| format!("{key:?}"), str::to_string);
            non_finite(v, &format!("{path}.{key}"))
        }),
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite(v, &format!("{path}[{i}]"))),
        serde_yaml::Value::Tagged(tagged) => non_finite(&tagged.value, path),
        _ => None,
    }
}

/// Parses the Trellis resources of one multi-document YAML text; `path` is
/// only used in errors and in the result.
pub fn parse_str(text: &str, path: &Path) -> Result<Vec<LoadedManifest>, ManifestError> {
    if let Some(line) = too_deep(text) {
        return Err(ManifestError::TooDeep {
            path: path.to_path_buf(),
            line,
        });
    }
    let mut loaded = Vec::new();
    for (document, de) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = serde_yaml::Value::deserialize(de).map_err(|source| ManifestError::Yaml {
            path: path.to_path_buf(),
            document,
            source,
        })?;
        if value.is_null() {
            continue; // an empty document, e.g. after a trailing `---`
        }
        let invalid = |message: String| ManifestError::Invalid {
            path: path.to_path_buf(),
            document,
            message,
        };
        let api_version = value
            .get("apiVersion")
            .and_then(|v| v.as_str())
            .ok_or_else(|| invalid("missing apiVersion".into()))?
            .to_string();
        let kind = value
            .get("kind")
            .and_then(|v| v.as_str())
            .ok_or_else(|| invalid("missing kind".into()))?
            .to_string();
        if api_version == "v1" && kind == "ConfigMap" {
            let config_map: k8s_openapi::api::core::v1::ConfigMap =
                serde_yaml::from_value(value).map_err(|e| invalid(format!("ConfigMap: {e}")))?;
            if config_map
                .metadata
                .name
                .as_deref()
                .unwrap_or_default()
                .is_empty()
            {
                return Err(invalid("ConfigMap has no metadata.name".into()));
            }
            loaded.push(LoadedManifest {
                path: path.to_path_buf(),
                document,
                manifest: Manifest::ConfigMap(Box::new(config_map)),
            });
            continue;
        }
        let group = api_version.split_once('/').map_or("", |(group, _)| group);
        if group != API_GROUP {
            tracing::debug!(path = %path.display(), document, %api_version, %kind, "skipping non-Trellis resource");
            continue;
        }
        if api_version != API_VERSION {
            return Err(invalid(format!(
                "unsupported apiVersion {api_version:?} (this build reads {API_VERSION})"
            )));
        }
        let mut value = value;
        if let Some(map) = value.as_mapping_mut()
            && !map.contains_key("spec")
        {
            // Every field of every spec has a default: `spec` may be left out.
            map.insert("spec".into(), serde_yaml::Mapping::new().into());
        }
        // YAML can say `.nan` and `.inf`, which JSON (and so the API server)
        // cannot: refused here, or a NaN threshold would publish a version
        // that no query can use.
        if let Some(at) = non_finite(&value, "") {
            return Err(invalid(format!("{kind}: {at} is not a finite number")));
        }
        // The ranges the engine can honour, the same the CRDs declare.
        super::bounds::check(&kind, &value).map_err(|e| invalid(format!("{kind}: {e}")))?;
        let manifest = match kind.as_str() {
            "IndexProfile" => {
                Manifest::IndexProfile(Box::new(strict(value, &kind).map_err(invalid)?))
            }
            "Corpus" => {
                let corpus: super::Corpus = strict(value, &kind).map_err(invalid)?;
                // The CRD's rule that each source names one kind.
                for (at, source) in corpus.spec.sources.iter().enumerate() {
                    source
                        .kind()
                        .map_err(|e| invalid(format!("Corpus: spec.sources[{at}]: {e}")))?;
                    // And that an s3 source says where its credentials are.
                    if let Some(problem) = source.s3.as_ref().and_then(|s| s.credentials_problem())
                    {
                        return Err(invalid(format!("Corpus: spec.sources[{at}].s3: {problem}")));
                    }
                }
                Manifest::Corpus(Box::new(corpus))
            }
            "RetrievalRoute" => {
                let mut route: super::RetrievalRoute = strict(value, &kind).map_err(invalid)?;
                // The reranker's files are named relative to the manifest.
                if let Some(dir) = path.parent() {
                    route.spec.reranker.resolve_paths(dir);
                    route.spec.generation.resolve_paths(dir);
                }
                route.spec.generation.check().map_err(invalid)?;
                Manifest::RetrievalRoute(Box::new(route))
            }
            other => {
                return Err(invalid(format!(
                    "unknown kind {other:?} in {API_VERSION} \
                     (known: IndexProfile, Corpus, RetrievalRoute)"
                )));
            }
        };
        if manifest.name().is_empty() {
            return Err(invalid(format!("{} has no metadata.name", manifest.kind())));
        }
        loaded.push(LoadedManifest {
            path: path.to_path_buf(),
            document,
            manifest,
        });
    }
    Ok(loaded)
}

/// The documents of every ConfigMap among `manifests`, by name: each key
/// of `data` and `binaryData` with its bytes.
pub fn config_maps(
    manifests: &[LoadedManifest],
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<u8>>> {
    manifests
        .iter()
        .filter_map(|m| match &m.manifest {
            Manifest::ConfigMap(c) => Some(c),
            _ => None,
        })
        .map(|c| {
            let mut files = std::collections::BTreeMap::new();
            for (key, text) in c.data.iter().flatten() {
                files.insert(key.clone(), text.clone().into_bytes());
            }
            for (key, bytes) in c.binary_data.iter().flatten() {
                files.insert(key.clone(), bytes.0.clone());
            }
            (c.metadata.name.clone().unwrap_or_default(), files)
        })
        .collect()
}

/// The one `IndexProfile` among `manifests` (or the one called `name`),
/// with the file it was read from (relative paths in it resolve against
/// that file's directory).
pub fn select_profile<'a>(
    manifests: &'a [LoadedManifest],
    name: Option<&str>,
    origin: &Path,
) -> Result<(&'a IndexProfile, &'a Path), ManifestError> {
    select(
        manifests,
        name,
        origin,
        "IndexProfile",
        Manifest::as_index_profile,
    )
}

/// The one `Corpus` among `manifests` (or the one called `name`), with the
/// file it was read from (relative source paths resolve against it).
pub fn select_corpus<'a>(
    manifests: &'a [LoadedManifest],
    name: Option<&str>,
    origin: &Path,
) -> Result<(&'a Corpus, &'a Path), ManifestError> {
    select(manifests, name, origin, "Corpus", Manifest::as_corpus)
}

/// The one `RetrievalRoute` among `manifests` (or the one called `name`),
/// with the file it was read from.
pub fn select_route<'a>(
    manifests: &'a [LoadedManifest],
    name: Option<&str>,
    origin: &Path,
) -> Result<(&'a RetrievalRoute, &'a Path), ManifestError> {
    select(
        manifests,
        name,
        origin,
        "RetrievalRoute",
        Manifest::as_route,
    )
}

fn select<'a, T>(
    manifests: &'a [LoadedManifest],
    name: Option<&str>,
    origin: &Path,
    kind: &'static str,
    view: fn(&Manifest) -> Option<&T>,
) -> Result<(&'a T, &'a Path), ManifestError> {
    let found: Vec<(&T, &Path)> = manifests
        .iter()
        .filter(|m| name.is_none_or(|n| m.manifest.name() == n))
        .filter_map(|m| view(&m.manifest).map(|r| (r, m.path.as_path())))
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(ManifestError::Missing {
            path: origin.to_path_buf(),
            kind,
        }),
        many => Err(ManifestError::Ambiguous {
            path: origin.to_path_buf(),
            kind,
            count: many.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_refused_before_the_yaml_reader_sees_it() {
        let path = Path::new("deep.yaml");
        let started = std::time::Instant::now();
        for text in [
            format!("a: {}", "[".repeat(100_000)),
            format!("a: {}1{}", "{b: ".repeat(150), "}".repeat(150)),
            format!("a:\n{}x", "- ".repeat(150)),
            format!("a:\n{}x: 1", " ".repeat(300)),
        ] {
            let error = parse_str(&text, path).unwrap_err();
            assert!(matches!(error, ManifestError::TooDeep { .. }), "{error}");
        }
        // Well inside a second however deep, where reading it took 34 s.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // Brackets in strings, comments and plain scalars do not count, and
        // a real nesting within the bound is read.
        let open = "[".repeat(500);
        let nested = format!("{}1{}", "[".repeat(20), "]".repeat(20));
        let text = format!("a: '{open}'\nb: \"{open}\" # {open}\nc: x{open}\nd: {nested}\n");
        assert_eq!(too_deep(&text), None);
    }
    use crate::spec::ChunkStrategy;

    fn parse(text: &str) -> Result<Vec<LoadedManifest>, ManifestError> {
        parse_str(text, Path::new("test.yaml"))
    }

    #[test]
    fn reads_multi_document_files_and_skips_foreign_kinds() {
        let text = r#"
apiVersion: v1
kind: Namespace
metadata: {name: rag}
---
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {name: contracts}
spec:
  chunking: {strategy: fixed, fixed: {sizeTokens: 128}}
---
"#;
        let loaded = parse(text).unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].document, 1);
        let p = loaded[0].manifest.as_index_profile().unwrap();
        assert_eq!(p.spec.chunking.strategy, ChunkStrategy::Fixed);
        assert_eq!(p.spec.chunking.fixed.size_tokens, 128);
        assert_eq!(
            p.spec.chunking.fixed.overlap_tokens, 64,
            "defaults fill the rest"
        );
        assert_eq!(p.spec.chunking.max_tokens, 800);
    }

    #[test]
    fn non_finite_numbers_are_refused_with_their_path() {
        for bad in [".nan", ".inf", "-.inf"] {
            let err = parse(&format!(
                "apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {{name: x}}\n\
                 spec: {{semanticLinks: {{threshold: {bad}}}}}\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("spec.semanticLinks.threshold is not a finite number"),
                "{err}"
            );
        }
    }

    #[test]
    fn empty_spec_takes_documented_defaults() {
        let loaded =
            parse("apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {name: d}\n")
                .unwrap();
        let p = loaded[0].manifest.as_index_profile().unwrap();
        assert_eq!(p.spec, crate::spec::IndexProfileSpec::default());
    }

    #[test]
    fn errors_name_the_file_and_document() {
        let err = parse("apiVersion: trellis.dev/v1alpha1\nkind: Gadget\nmetadata: {name: x}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("test.yaml") && err.contains("Gadget"), "{err}");

        let err = parse(
            "apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {name: x}\nspec: {chunking: {maxTokenz: 3}}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("unknown field spec.chunking.maxTokenz"),
            "typos are reported with their path: {err}"
        );
        let err = parse(
            "apiVersion: trellis.dev/v1alpha1\nkind: RetrievalRoute\nmetadata: {name: x}\nspec: {corpusRef: {name: c}, scoring: {weights: {dnese: 1}}}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("unknown field spec.scoring.weights.dnese"),
            "a signal's weight is a field like any other: {err}"
        );

        let err = parse("apiVersion: trellis.dev/v2\nkind: IndexProfile\nmetadata: {name: x}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unsupported apiVersion"), "{err}");

        let err = parse("apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("metadata.name") || err.contains("metadata"),
            "{err}"
        );
    }

    #[test]
    fn reads_corpus_and_route_and_selects_them_by_kind() {
        let text = r#"
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: contracts}
spec:
  profileRef: {name: default}
  sources:
    - path: ./docs
      acl: [legal]
  include: ["**/*.md"]
  storage: {retainVersions: 2}
---
apiVersion: trellis.dev/v1alpha1
kind: RetrievalRoute
metadata: {name: qa}
spec:
  corpusRef: {name: contracts}
  selection: {topK: 3}
"#;
        let loaded = parse(text).unwrap();
        let (corpus, from) = select_corpus(&loaded, None, Path::new("x")).unwrap();
        assert_eq!(from, Path::new("test.yaml"));
        assert_eq!(corpus.spec.profile_ref.name, "default");
        assert_eq!(
            corpus.spec.sources[0].acl.as_deref(),
            Some(&["legal".to_string()][..])
        );
        assert_eq!(corpus.spec.storage.retain_versions, 2);
        let (route, _) = select_route(&loaded, Some("qa"), Path::new("x")).unwrap();
        assert_eq!(route.spec.selection.top_k, 3);
        assert_eq!(route.spec.fusion.k, 60);
        assert!(select_profile(&loaded, None, Path::new("x")).is_err());
    }

    #[test]
    fn a_corpus_without_sources_names_the_missing_field() {
        let text = "apiVersion: trellis.dev/v1alpha1\nkind: Corpus\nmetadata: {name: c}\nspec: {profileRef: {name: p}}\n";
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains("sources"), "{err}");
    }
}
