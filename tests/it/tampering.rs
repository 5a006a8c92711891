//! Damaged index versions: every file of a published version, damaged
//! one at a time in five ways (deleted, emptied, cut in half, one bit
//! flipped, garbage appended), must make opening the version fail with an
//! error naming the file: never a panic, never an exit, never a version
//! that opens and serves wrong data.

use std::path::{Path, PathBuf};

use crate::common;

use trellis::index::IndexVersion;

use crate::common::TWO_DOCUMENT_MANIFESTS as MANIFESTS;

#[derive(Clone, Copy, Debug)]
enum Damage {
    Delete,
    Empty,
    Half,
    FlipBit,
    AppendGarbage,
}

const DAMAGES: [Damage; 5] = [
    Damage::Delete,
    Damage::Empty,
    Damage::Half,
    Damage::FlipBit,
    Damage::AppendGarbage,
];

/// Damages `path`; false when the damage would change nothing (emptying,
/// halving or flipping a bit of an empty file).
fn damage(path: &Path, how: Damage) -> bool {
    let bytes = std::fs::read(path).unwrap();
    if bytes.is_empty() && matches!(how, Damage::Empty | Damage::Half | Damage::FlipBit) {
        return false;
    }
    match how {
        Damage::Delete => std::fs::remove_file(path).unwrap(),
        Damage::Empty => std::fs::write(path, b"").unwrap(),
        Damage::Half => std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap(),
        Damage::FlipBit => {
            let mut bytes = bytes;
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x01;
            std::fs::write(path, bytes).unwrap();
        }
        Damage::AppendGarbage => {
            let mut bytes = bytes;
            bytes.extend_from_slice(&[0xA5; 37]);
            std::fs::write(path, bytes).unwrap();
        }
    }
    true
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The files of the version under `data`, relative to the version
/// directory; tantivy's empty lock files hold nothing to damage.
fn version_files(version_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(version_dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(version_dir).unwrap().to_path_buf())
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".tantivy-")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_single_file_damage_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::write_two_documents(dir);
    let (report, _) = common::ingest_manifests(MANIFESTS, dir);
    let pristine = dir.join("data");
    let version = report.manifest.version.clone();
    let version_dir = |data: &Path| data.join("indexes/c").join(&version);
    let files = version_files(&version_dir(&pristine));
    assert!(files.len() >= 15, "{files:?}");
    IndexVersion::open(&pristine, "c", None).expect("the pristine version opens");

    let mut panics = Vec::new();
    let mut opened = Vec::new();
    let mut unnamed = Vec::new();
    let mut cases = 0;
    for file in &files {
        for how in DAMAGES {
            let case = tempfile::tempdir().unwrap();
            let data = case.path().join("data");
            copy_tree(&pristine, &data);
            if !damage(&version_dir(&data).join(file), how) {
                continue;
            }
            cases += 1;
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            let outcome = std::panic::catch_unwind(|| IndexVersion::open(&data, "c", None));
            match outcome {
                Err(_) => panics.push(format!("{} {how:?}", file.display())),
                Ok(Ok(_)) => opened.push(format!("{} {how:?}", file.display())),
                Ok(Err(e)) => {
                    let message = e.to_string();
                    if !message.contains(&name) {
                        unnamed.push(format!("{} {how:?}: {message}", file.display()));
                    }
                }
            }
        }
    }
    eprintln!("{cases} damaged versions tried over {} files", files.len());
    assert!(cases >= 30);
    assert!(panics.is_empty(), "panicked: {panics:#?}");
    assert!(opened.is_empty(), "opened anyway: {opened:#?}");
    assert!(
        unnamed.is_empty(),
        "errors not naming the file: {unnamed:#?}"
    );
}

/// A version built before checksums opens unchecked, so its structure is
/// checked instead: numbers in `skeleton.json` and `related.json` that
/// point outside the store are errors naming the file, not panics later
/// in a query.
#[test]
fn a_version_without_checksums_refuses_numbers_outside_its_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::write_two_documents(dir);
    let (report, _) = common::ingest_manifests(MANIFESTS, dir);
    let pristine = dir.join("data");
    let version_dir = pristine.join("indexes/c").join(&report.manifest.version);
    // Make it look like a version from before checksums.
    std::fs::remove_file(version_dir.join("checksums.json")).unwrap();
    let manifest_path = version_dir.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["checksummed"] = false.into();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    IndexVersion::open(&pristine, "c", None).expect("an unchecked version opens");

    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit); 6] = [
        ("skeleton.json", |s| {
            s["paragraphs"][0]["sentences"][1] = 1_000_000.into()
        }),
        ("skeleton.json", |s| {
            s["documents"][0]["sentences"] = serde_json::json!([3, 1])
        }),
        ("skeleton.json", |s| {
            s["sentences"][0]["section"] = 1_000_000.into()
        }),
        ("skeleton.json", |s| {
            s["sentences"][0]["paragraph"] = 1.into()
        }),
        ("skeleton.json", |s| {
            s["sections"][1]["parent"] = 1_000_000.into()
        }),
        (
            "related.json",
            |r| *r = serde_json::json!([{ "from": 0, "to": 1_000_000, "similarity": 0.9 }]),
        ),
    ];
    for (i, (file, edit)) in cases.iter().enumerate() {
        let case = tempfile::tempdir().unwrap();
        let data = case.path().join("data");
        copy_tree(&pristine, &data);
        let path = data
            .join("indexes/c")
            .join(&report.manifest.version)
            .join(file);
        let mut value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        edit(&mut value);
        std::fs::write(&path, value.to_string()).unwrap();
        let outcome = std::panic::catch_unwind(|| IndexVersion::open(&data, "c", None));
        let Ok(result) = outcome else {
            panic!("case {i} ({file}) panicked");
        };
        let err = match result {
            Ok(_) => panic!("case {i} ({file}) opened anyway"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(file), "case {i}: {err}");
    }
}
