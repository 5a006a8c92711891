//! `s3` sources: objects under a prefix of an S3 or S3-compatible bucket,
//! through the `object_store` crate.
//!
//! `object_store` is async; ingest is not. Each source owns a small Tokio
//! runtime and blocks on it, so listing and reads work from the ingest's
//! (rayon) threads. Ingest must therefore not be called from inside an
//! async task.

use std::path::Path;

use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::aws::{AmazonS3, AmazonS3Builder};

use crate::spec::S3Source;

/// One listed object: its key and its revision (ETag and size).
pub(super) struct ListedObject {
    pub key: String,
    pub revision: Option<String>,
}

/// The objects of one `s3` source.
pub(super) struct S3Objects {
    store: AmazonS3,
    prefix: String,
    runtime: tokio::runtime::Runtime,
}

impl S3Objects {
    /// Connects (lazily) to the source's bucket, with credentials from its
    /// Secret (mounted under `secret_root`) or, when the source asks for
    /// ambient credentials, from the environment.
    pub(super) fn new(spec: &S3Source, secret_root: &Path) -> Result<Self, String> {
        if spec.bucket.is_empty() {
            return Err("s3 source without a bucket".into());
        }
        if let Some(problem) = spec.credentials_problem() {
            return Err(problem);
        }
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&spec.bucket)
            .with_region(&spec.region);
        if let Some(endpoint) = &spec.endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"));
        }
        if let Some(secret) = &spec.credentials_secret {
            let dir = secret_root.join(&secret.name);
            let read = |key: &str| {
                std::fs::read_to_string(dir.join(key)).map(|text| text.trim().to_string())
            };
            let id = read("AWS_ACCESS_KEY_ID").map_err(|e| {
                format!(
                    "credentials Secret {:?}: AWS_ACCESS_KEY_ID not found under {}: {e}",
                    secret.name,
                    dir.display()
                )
            })?;
            let key = read("AWS_SECRET_ACCESS_KEY").map_err(|e| {
                format!(
                    "credentials Secret {:?}: AWS_SECRET_ACCESS_KEY not found under {}: {e}",
                    secret.name,
                    dir.display()
                )
            })?;
            builder = builder.with_access_key_id(id).with_secret_access_key(key);
            if let Ok(token) = read("AWS_SESSION_TOKEN") {
                builder = builder.with_token(token);
            }
        }
        let store = builder
            .build()
            .map_err(|e| format!("bucket {:?}: {e}", spec.bucket))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("trellis-s3")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start an async runtime: {e}"))?;
        Ok(Self {
            store,
            prefix: spec.prefix.clone(),
            runtime,
        })
    }

    /// Every object under the prefix, by key. Any failure fails the whole
    /// listing: a partial one would drop documents without a trace.
    pub(super) fn list(&self) -> Result<Vec<ListedObject>, String> {
        let prefix = object_store::path::Path::from(self.prefix.as_str());
        let prefix = (!self.prefix.is_empty()).then_some(&prefix);
        let metas: Vec<object_store::ObjectMeta> = self
            .runtime
            .block_on(self.store.list(prefix).try_collect())
            .map_err(|e| format!("listing {:?}: {e}", self.prefix))?;
        let mut objects: Vec<ListedObject> = metas
            .into_iter()
            .filter(|m| !m.location.as_ref().ends_with('/'))
            .map(|m| ListedObject {
                key: m.location.to_string(),
                revision: m.e_tag.map(|etag| format!("{etag}:{}", m.size)),
            })
            .collect();
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(objects)
    }

    /// An object's bytes.
    pub(super) fn get(&self, key: &str) -> Result<Vec<u8>, String> {
        let location = object_store::path::Path::from(key);
        self.runtime
            .block_on(async {
                let result = self.store.get(&location).await?;
                result.bytes().await
            })
            .map(|bytes| bytes.to_vec())
            .map_err(|e| e.to_string())
    }
}
