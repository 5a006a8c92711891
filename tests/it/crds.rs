//! The CustomResourceDefinitions: `crds/` is what the spec types generate,
//! and every example manifest is valid under the generated schemas (and an
//! invalid one is not).

use std::path::{Path, PathBuf};

use serde_json::Value;
use trellis::spec;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn crds_directory_matches_the_spec_types() {
    for crd in spec::crds() {
        let name = crd.metadata.name.clone().unwrap();
        let path = root().join("crds").join(format!("{name}.yaml"));
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run `trellis crd --out crds`", path.display()));
        assert!(
            committed == spec::crd_yaml(&crd).unwrap(),
            "{} is stale: the spec types changed; run `trellis crd --out crds`",
            path.display()
        );
    }
}

#[test]
fn the_chart_carries_the_same_crds() {
    for crd in spec::crds() {
        let name = crd.metadata.name.clone().unwrap();
        let path = root()
            .join("charts/trellis/files/crds")
            .join(format!("{name}.yaml"));
        let copy = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `trellis crd --out charts/trellis/files/crds`",
                path.display()
            )
        });
        assert!(
            copy == spec::crd_yaml(&crd).unwrap(),
            "{} is stale; run `trellis crd --out charts/trellis/files/crds`",
            path.display()
        );
    }
}

#[test]
fn the_chart_values_satisfy_their_schema() {
    let chart = root().join("charts/trellis");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(chart.join("values.schema.json")).unwrap())
            .unwrap();
    let values: Value =
        serde_yaml::from_str(&std::fs::read_to_string(chart.join("values.yaml")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&values)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // And the schema refuses what it should.
    let mut typo = values.clone();
    typo["replicaCount"] = "two".into();
    assert!(!validator.is_valid(&typo));
    let mut unknown = values;
    unknown["imag"] = serde_json::json!({});
    assert!(!validator.is_valid(&unknown));
}

#[test]
fn crds_have_short_names_status_and_columns() {
    let crds = spec::crds();
    let by_kind = |kind: &str| {
        crds.iter()
            .find(|c| c.spec.names.kind == kind)
            .unwrap_or_else(|| panic!("no CRD for {kind}"))
    };
    for (kind, short, column) in [
        ("Corpus", "corp", "Ready"),
        ("IndexProfile", "ixp", "Valid"),
        ("RetrievalRoute", "rr", "Available"),
    ] {
        let crd = by_kind(kind);
        assert_eq!(crd.spec.group, "trellis.dev");
        assert_eq!(crd.spec.names.short_names, Some(vec![short.to_string()]));
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(
            version
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some()),
            "{kind} has no status subresource"
        );
        let columns = version.additional_printer_columns.as_ref().unwrap();
        assert!(columns.iter().any(|c| c.name == column), "{kind}");
        assert!(columns.iter().any(|c| c.name == "Age"), "{kind}");
    }
}

/// Every integer of every CRD has both bounds, within what its format's
/// Rust type holds: an unbounded `uint32` lets the API server admit a
/// value the operator cannot read.
#[test]
fn every_integer_is_bounded_by_its_type() {
    fn walk(schema: &Value, path: &str, found: &mut Vec<String>, count: &mut usize) {
        if schema["type"] == "integer" {
            *count += 1;
            let (min, max) = (schema["minimum"].as_f64(), schema["maximum"].as_f64());
            let fits = match schema["format"].as_str() {
                Some("uint32") => (0.0, f64::from(u32::MAX)),
                Some("int32") => (f64::from(i32::MIN), f64::from(i32::MAX)),
                _ => (-9_007_199_254_740_991.0, 9_007_199_254_740_991.0),
            };
            match (min, max) {
                (Some(min), Some(max)) if min >= fits.0 && max <= fits.1 => {}
                _ => found.push(format!("{path}: {min:?}..{max:?} ({})", schema["format"])),
            }
        }
        for (key, child) in schema["properties"].as_object().into_iter().flatten() {
            walk(child, &format!("{path}.{key}"), found, count);
        }
        if schema["items"].is_object() {
            walk(&schema["items"], &format!("{path}[]"), found, count);
        }
        if schema["additionalProperties"].is_object() {
            walk(
                &schema["additionalProperties"],
                &format!("{path}{{}}"),
                found,
                count,
            );
        }
    }
    let (mut found, mut count) = (Vec::new(), 0);
    for crd in spec::crds() {
        let crd = serde_json::to_value(&crd).unwrap();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        walk(
            schema,
            crd["spec"]["names"]["kind"].as_str().unwrap(),
            &mut found,
            &mut count,
        );
    }
    assert!(count > 40, "only {count} integers found");
    assert!(found.is_empty(), "unbounded integers: {found:#?}");
}

/// Each CRD's schema by kind, as a compiled validator.
fn validators() -> Vec<(String, Value, jsonschema::Validator)> {
    spec::crds()
        .into_iter()
        .map(|crd| {
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
            let mut schema = schema["openAPIV3Schema"].clone();
            exclusive_bounds_as_numbers(&mut schema);
            let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| {
                panic!("{}: schema does not compile: {e}", crd.spec.names.kind)
            });
            (crd.spec.names.kind.clone(), schema, validator)
        })
        .collect()
}

/// OpenAPI 3.0 (the CRD dialect) says `exclusiveMinimum: true` beside a
/// `minimum`; JSON Schema 2020-12 (the validator's) gives the bound
/// itself as `exclusiveMinimum`.
fn exclusive_bounds_as_numbers(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("exclusiveMinimum") == Some(&Value::Bool(true))
                && let Some(min) = map.remove("minimum")
            {
                map.insert("exclusiveMinimum".into(), min);
            }
            map.values_mut().for_each(exclusive_bounds_as_numbers);
        }
        Value::Array(items) => items.iter_mut().for_each(exclusive_bounds_as_numbers),
        _ => {}
    }
}

/// Every document of a YAML file, as JSON.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            let value: serde_yaml::Value = serde::Deserialize::deserialize(doc).unwrap();
            serde_json::to_value(value).unwrap()
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// What the API server would refuse: schema violations, CEL rules
/// (`x-kubernetes-validations`, evaluated here as the server would), and
/// (as `kubectl apply`'s strict field validation does) fields the
/// structural schema does not declare, which it would otherwise prune
/// silently.
fn errors(validators: &[(String, Value, jsonschema::Validator)], doc: &Value) -> Vec<String> {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let (_, schema, validator) = validators
        .iter()
        .find(|(k, _, _)| k == kind)
        .unwrap_or_else(|| panic!("no CRD for kind {kind:?}"));
    let mut found: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if let Err(e) = kube::core::cel::Validator::new().validate(schema, doc, None) {
        found.push(e.to_string());
    }
    // apiVersion, kind and metadata are the API server's own.
    let mut body = doc.clone();
    if let Some(map) = body.as_object_mut() {
        for key in ["apiVersion", "kind", "metadata"] {
            map.remove(key);
        }
    }
    unknown_fields(schema, &body, "", &mut found);
    found
}

fn unknown_fields(schema: &Value, value: &Value, path: &str, found: &mut Vec<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema["properties"].as_object() {
                for (key, child) in map {
                    match properties.get(key) {
                        Some(child_schema) => {
                            unknown_fields(child_schema, child, &format!("{path}/{key}"), found)
                        }
                        None => found.push(format!("{path}/{key}: unknown field")),
                    }
                }
            } else if schema["additionalProperties"].is_object() {
                for (key, child) in map {
                    let at = format!("{path}/{key}");
                    unknown_fields(&schema["additionalProperties"], child, &at, found);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unknown_fields(&schema["items"], item, &format!("{path}/{i}"), found);
            }
        }
        _ => {}
    }
}

fn yaml_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            found.push(path);
        }
    }
}

#[test]
fn example_manifests_are_valid_under_the_crd_schemas() {
    let validators = validators();
    let mut files = Vec::new();
    yaml_files(&root().join("examples"), &mut files);
    files.sort();
    let mut checked = 0;
    for file in &files {
        for doc in documents(file) {
            if doc["apiVersion"] != spec::API_VERSION {
                continue;
            }
            let problems = errors(&validators, &doc);
            assert!(problems.is_empty(), "{}: {problems:#?}", file.display());
            checked += 1;
        }
    }
    assert!(
        checked >= 4,
        "only {checked} manifests checked in {files:?}"
    );
}

#[test]
fn an_invalid_manifest_is_refused_by_the_schema() {
    let validators = validators();
    // The invalid manifests, each with a word its refusal must contain
    // (shared with the end-to-end suite, which sends them to a real API
    // server).
    let cases: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/crds/invalid.json")).unwrap(),
    )
    .unwrap();
    assert!(cases.len() >= 6);
    for case in &cases {
        let doc = &case["manifest"];
        let expected = case["client"].as_str().unwrap();
        let found = errors(&validators, doc);
        assert!(
            found.iter().any(|e| e.contains(expected)),
            "{doc}: expected {expected:?} among {found:#?}"
        );
        // The command line refuses what the API server refuses.
        let yaml = serde_yaml::to_string(doc).unwrap();
        assert!(
            spec::parse_str(&yaml, Path::new("invalid.yaml")).is_err(),
            "the CLI accepts {doc}"
        );
    }
}

#[test]
fn the_cluster_quickstart_is_the_embedded_one_in_a_config_map() {
    // The two quick starts must not drift apart: the same profile and
    // route (the cluster one adds replicas), the same corpus but for where
    // its documents and index versions live, and the same documents.
    let by_kind = |file: &str| {
        let mut docs: Vec<Value> = documents(&root().join(file))
            .into_iter()
            .filter(|d| d["apiVersion"] == spec::API_VERSION)
            .collect();
        docs.sort_by_key(|d| d["kind"].as_str().unwrap_or_default().to_string());
        docs
    };
    let embedded = by_kind("examples/quickstart/trellis.yaml");
    let mut cluster = by_kind("examples/kubernetes/quickstart.yaml");
    assert_eq!(embedded.len(), 3);
    assert_eq!(cluster.len(), 3);
    for doc in &mut cluster {
        let kind = doc["kind"].as_str().unwrap_or_default().to_string();
        let spec = doc["spec"].as_object_mut().unwrap();
        match kind.as_str() {
            "RetrievalRoute" => drop(spec.remove("serving")),
            "Corpus" => {
                spec.insert("sources".into(), serde_json::json!([{"path": "documents"}]));
                spec["storage"].as_object_mut().unwrap().remove("claimName");
            }
            _ => {}
        }
    }
    for (a, b) in embedded.iter().zip(&cluster) {
        assert_eq!(a["spec"], b["spec"], "{}", a["kind"]);
    }
    let inline = documents(&root().join("examples/kubernetes/quickstart.yaml"))
        .into_iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("the cluster quickstart's documents");
    let inline = inline["data"].as_object().unwrap();
    let files = std::fs::read_dir(root().join("examples/quickstart/documents")).unwrap();
    let mut compared = 0;
    for file in files {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            inline.get(&name).and_then(Value::as_str),
            Some(text.as_str()),
            "{name}"
        );
        compared += 1;
    }
    assert_eq!(
        compared,
        inline.len(),
        "the ConfigMap holds other documents"
    );
}
