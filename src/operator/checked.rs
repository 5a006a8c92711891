//! Trellis resources as the operator reads them from the API: leniently.
//!
//! A list or watch of a kind deserialises every object in one response; a
//! typed `Api<Corpus>` fails the whole response when one object does not
//! fit the Rust type (a field written under an older, looser CRD; a value a
//! rolled-back operator does not know), and the kind then stops
//! reconciling, cluster-wide. [`Checked`] never fails on the spec or
//! status: it keeps the metadata and the raw object, and the typed object
//! or the reason it could not be read. The reconciler marks an unreadable
//! object on itself and goes on with the others.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One object of kind `K`, read whatever its spec holds.
#[derive(Clone, Debug)]
pub struct Checked<K> {
    pub metadata: ObjectMeta,
    /// The typed object, or the raw one and why it does not fit.
    pub object: Result<K, Unreadable>,
}

/// An object that does not fit its Rust type.
#[derive(Clone, Debug)]
pub struct Unreadable {
    /// The field's path and the reason, e.g.
    /// `spec.ingest.ttlSecondsAfterFinished: invalid value: integer
    /// `5000000000`, expected u32`.
    pub reason: String,
    /// The object as the API server returned it.
    pub raw: Value,
}

impl Unreadable {
    /// A string of the raw object by JSON pointer (`/spec/corpusRef/name`).
    pub fn str_at(&self, pointer: &str) -> Option<&str> {
        self.raw.pointer(pointer).and_then(Value::as_str)
    }
}

impl<K: DeserializeOwned> Checked<K> {
    /// Reads `raw`, keeping the reason when it does not fit `K`. Fails only
    /// on unreadable metadata, which the API server never returns.
    pub fn from_raw(raw: Value) -> Result<Self, serde_json::Error> {
        let metadata = ObjectMeta::deserialize(raw.get("metadata").unwrap_or(&Value::Null))?;
        let object = match serde_path_to_error::deserialize(&raw) {
            Ok(object) => Ok(object),
            Err(e) => {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let reason = if path == "." {
                    inner.to_string()
                } else {
                    format!("{path}: {inner}")
                };
                Err(Unreadable { reason, raw })
            }
        };
        Ok(Self { metadata, object })
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Checked<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Self::from_raw(raw).map_err(serde::de::Error::custom)
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Checked<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Corpus, IndexProfile};
    use serde_json::json;

    fn corpus(spec: Value) -> Value {
        json!({
            "apiVersion": "trellis.dev/v1alpha1",
            "kind": "Corpus",
            "metadata": {"name": "docs", "namespace": "team"},
            "spec": spec,
        })
    }

    #[test]
    fn an_out_of_range_field_is_named_not_fatal() {
        let raw = corpus(json!({
            "profileRef": {"name": "p"},
            "sources": [{"path": "docs"}],
            "ingest": {"ttlSecondsAfterFinished": 5_000_000_000u64},
        }));
        let checked: Checked<Corpus> = serde_json::from_value(raw).unwrap();
        assert_eq!(checked.metadata.name.as_deref(), Some("docs"));
        let reason = checked.object.unwrap_err().reason;
        assert!(
            reason.starts_with("spec.ingest.ttlSecondsAfterFinished: ") && reason.contains("u32"),
            "{reason}"
        );
        assert_eq!(checked_list_len(), 2);
    }

    /// A list with one unreadable item still reads the others.
    fn checked_list_len() -> usize {
        let list = json!({
            "apiVersion": "v1",
            "items": [
                corpus(json!({"profileRef": {"name": "p"}, "sources": [{"path": "a"}], "ingest": {"shards": "many"}})),
                corpus(json!({"profileRef": {"name": "p"}, "sources": [{"path": "b"}]})),
            ],
            "kind": "List",
            "metadata": {},
        });
        let list: kube::core::ObjectList<Checked<Corpus>> = serde_json::from_value(list).unwrap();
        assert!(list.items[0].object.is_err());
        assert!(list.items[1].object.is_ok());
        list.items.len()
    }

    #[test]
    fn fields_of_a_newer_crd_are_ignored() {
        let raw = json!({
            "apiVersion": "trellis.dev/v1alpha1",
            "kind": "IndexProfile",
            "metadata": {"name": "p"},
            "spec": {"chunking": {"maxTokens": 256, "aFieldFromTheFuture": true}},
        });
        let checked: Checked<IndexProfile> = serde_json::from_value(raw).unwrap();
        let profile = checked.object.unwrap();
        assert_eq!(profile.spec.chunking.max_tokens, 256);
    }
}
