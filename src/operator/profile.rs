//! The IndexProfile reconciler's pure half: validation beyond what the
//! CRD schema can say, and the canonical hash every index version of the
//! profile is keyed by.

use kube::ResourceExt;

use super::conditions::{self, Set};
use crate::spec::{
    ChunkStrategy, EmbeddingProvider, IndexProfile, IndexProfileSpec, IndexProfileStatus,
};

/// What is wrong with a profile that its schema lets through, one message
/// per problem; empty when it can be used.
pub fn validate(spec: &IndexProfileSpec) -> Vec<String> {
    let mut problems = Vec::new();
    let c = &spec.chunking;
    if c.min_tokens > c.max_tokens {
        problems.push(format!(
            "chunking.minTokens ({}) is above chunking.maxTokens ({})",
            c.min_tokens, c.max_tokens
        ));
    }
    if c.overlap_tokens > c.max_tokens / 2 {
        problems.push(format!(
            "chunking.overlapTokens ({}) is above half of chunking.maxTokens ({})",
            c.overlap_tokens, c.max_tokens
        ));
    }
    if c.strategy == ChunkStrategy::Fixed {
        if c.fixed.size_tokens == 0 || c.fixed.size_tokens > c.max_tokens {
            problems.push(format!(
                "chunking.fixed.sizeTokens ({}) must be between 1 and chunking.maxTokens ({})",
                c.fixed.size_tokens, c.max_tokens
            ));
        }
        if c.fixed.overlap_tokens > c.fixed.size_tokens / 2 {
            problems.push(format!(
                "chunking.fixed.overlapTokens ({}) is above half of sizeTokens ({})",
                c.fixed.overlap_tokens, c.fixed.size_tokens
            ));
        }
    }
    let e = &spec.embedding;
    if e.model.trim().is_empty() {
        problems.push("embedding.model is empty".into());
    }
    if e.provider == EmbeddingProvider::Tei && e.endpoint.is_none() {
        problems.push("embedding.endpoint is required for the tei provider".into());
    }
    if e.provider == EmbeddingProvider::Local && e.batch_tokens == 0 {
        problems.push("embedding.batchTokens must be at least 1".into());
    }
    if let Some(endpoint) = &e.endpoint
        && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
    {
        problems.push(format!(
            "embedding.endpoint {endpoint:?} is not an http(s) URL"
        ));
    }
    let i = &spec.index;
    if i.hnsw_m < 2 || i.hnsw_m > 256 {
        problems.push(format!(
            "index.hnswM ({}) must be between 2 and 256",
            i.hnsw_m
        ));
    }
    if i.hnsw_ef_construction < i.hnsw_m {
        problems.push(format!(
            "index.hnswEfConstruction ({}) is below index.hnswM ({})",
            i.hnsw_ef_construction, i.hnsw_m
        ));
    }
    problems
}

/// The status of `profile`: its hash, and `Valid` with the problems found.
pub fn plan_profile(profile: &IndexProfile, now: &str) -> IndexProfileStatus {
    let generation = profile.metadata.generation;
    let mut status = profile.status.clone().unwrap_or_default();
    if super::is_paused(&profile.metadata) {
        // Not acted on: observedGeneration stays where it was.
        conditions::set(&mut status.conditions, Set::paused(), generation, now);
        return status;
    }
    status.observed_generation = generation;
    conditions::remove(&mut status.conditions, "Paused");
    status.hash = Some(crate::ingest::profile_hash(&profile.spec));
    let problems = validate(&profile.spec);
    let change = if problems.is_empty() {
        Set::new(
            "Valid",
            true,
            "SpecValid",
            format!("profile {} can be used", profile.name_any()),
        )
    } else {
        Set::new("Valid", false, "SpecInvalid", problems.join("; "))
    };
    // kstatus' `Ready` says the same on every kind; an invalid profile
    // is `Stalled` until edited.
    let ready = Set {
        type_: "Ready",
        ..change.clone()
    };
    conditions::set(&mut status.conditions, change, generation, now);
    conditions::set(&mut status.conditions, ready, generation, now);
    conditions::abnormal_from_ready(&mut status.conditions, None, generation, now);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(spec: IndexProfileSpec) -> IndexProfile {
        let mut p = IndexProfile::new("default", spec);
        p.metadata.generation = Some(3);
        p
    }

    #[test]
    fn a_default_profile_is_valid_and_hashed() {
        let status = plan_profile(&profile(IndexProfileSpec::default()), "t");
        assert!(conditions::is_true(&status.conditions, "Valid"));
        assert_eq!(
            status.hash.as_deref(),
            Some(crate::ingest::profile_hash(&IndexProfileSpec::default()).as_str())
        );
        assert_eq!(status.observed_generation, Some(3));
    }

    #[test]
    fn problems_are_named() {
        let mut spec = IndexProfileSpec::default();
        spec.chunking.min_tokens = 900;
        spec.embedding.provider = EmbeddingProvider::Tei;
        let status = plan_profile(&profile(spec), "t");
        let valid = conditions::get(&status.conditions, "Valid").unwrap();
        assert_eq!(valid.status, "False");
        assert!(
            valid.message.contains("minTokens (900)"),
            "{}",
            valid.message
        );
        assert!(valid.message.contains("tei"), "{}", valid.message);
    }

    #[test]
    fn a_paused_profile_is_left_alone() {
        let mut p = profile(IndexProfileSpec::default());
        p.metadata.annotations = Some(
            [(
                super::super::PAUSED_ANNOTATION.to_string(),
                "true".to_string(),
            )]
            .into(),
        );
        let status = plan_profile(&p, "t");
        assert!(conditions::is_true(&status.conditions, "Paused"));
        assert!(status.hash.is_none());
    }
}
