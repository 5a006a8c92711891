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

/// A version without checksums (built before them, or with them removed
/// along with `"checksummed"`) is refused; an operator who opts in opens it
/// unchecked, and its structure is checked instead: numbers in
/// `skeleton.json` and `related.json` that point outside the store are
/// errors naming the file, not panics later in a query.
#[test]
fn a_version_without_checksums_refuses_numbers_outside_its_store() {
    let test = "tampering::a_version_without_checksums_refuses_numbers_outside_its_store";
    if !common::is_child(test) {
        common::run_in_child(test, &[(trellis::index::ALLOW_UNCHECKED, "1".as_ref())]);
        return;
    }
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

/// An ingested version under `tmp`: the data directory and the version's
/// directory.
fn ingested(tmp: &Path) -> (PathBuf, PathBuf) {
    common::write_two_documents(tmp);
    let (report, _) = common::ingest_manifests(MANIFESTS, tmp);
    let data = tmp.join("data");
    let version_dir = data.join("indexes/c").join(&report.manifest.version);
    (data, version_dir)
}

/// The error opening the current version, which must not be a panic.
fn open_error(data: &Path) -> String {
    match std::panic::catch_unwind(|| IndexVersion::open(data, "c", None)) {
        Err(_) => panic!("opening panicked"),
        Ok(Ok(_)) => panic!("opened anyway"),
        Ok(Err(e)) => e.to_string(),
    }
}

/// `current` names a version directory of its own corpus and nothing
/// else: not another corpus' version (`../other/<version>`), not an
/// absolute path, not a link to another file, whose text never reaches
/// the error.
#[test]
fn current_names_only_a_version_of_its_own_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, version_dir) = ingested(tmp.path());
    let version = version_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let other = data.join("indexes/other");
    copy_tree(&data.join("indexes/c"), &other);
    let current = data.join("indexes/c/current");
    for text in [
        format!("../other/{version}"),
        other.join(&version).display().to_string(),
        "..".to_string(),
        ".build-x".to_string(),
    ] {
        std::fs::write(&current, format!("{text}\n")).unwrap();
        let error = open_error(&data);
        assert!(
            error.contains("does not hold a version name"),
            "{text}: {error}"
        );
    }
    let secret = tmp.path().join("secret.txt");
    std::fs::write(&secret, "root:x:0:0:the secret text\n").unwrap();
    std::fs::remove_file(&current).unwrap();
    std::os::unix::fs::symlink(&secret, &current).unwrap();
    let error = open_error(&data);
    assert!(error.contains("a symbolic link"), "{error}");
    assert!(!error.contains("secret text"), "{error}");
    // A version directory that is a link to another corpus' is refused
    // too, as is a version name given on the command line.
    std::fs::remove_file(&current).unwrap();
    std::fs::write(&current, format!("{version}\n")).unwrap();
    std::fs::remove_dir_all(&version_dir).unwrap();
    std::os::unix::fs::symlink(other.join(&version), &version_dir).unwrap();
    assert!(open_error(&data).contains("not a version directory"));
    let error = IndexVersion::open(&data, "c", Some("../other/x"))
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("not a version name"), "{error}");
}

/// The listing of checksums covers every file: a file whose entry was
/// removed, or a version whose listing was removed with `"checksummed"`
/// set false, is refused (the latter unless the operator opts in).
#[test]
fn a_file_left_out_of_the_checksums_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, version_dir) = ingested(tmp.path());
    let listing = version_dir.join("checksums.json");
    let pristine: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&listing).unwrap()).unwrap();
    let mut dropped = pristine.clone();
    dropped.remove("vectors.f32");
    std::fs::write(&listing, serde_json::to_vec(&dropped).unwrap()).unwrap();
    let error = open_error(&data);
    assert!(error.contains("vectors.f32: not listed"), "{error}");

    std::fs::remove_file(&listing).unwrap();
    let manifest_path = version_dir.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["checksummed"] = false.into();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let error = open_error(&data);
    assert!(error.contains(trellis::index::ALLOW_UNCHECKED), "{error}");
}

/// A FIFO, a link to `/dev/zero` or a huge sparse file in place of a
/// version's file is refused before it is read: opening never hangs.
#[test]
fn special_and_oversized_files_are_refused_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let (pristine, version_dir) = ingested(tmp.path());
    let relative = version_dir.strip_prefix(&pristine).unwrap().to_path_buf();
    for (what, make) in [
        (
            "a FIFO",
            (|p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap())
                as fn(&Path),
        ),
        ("a symbolic link", |p: &Path| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("bytes where", |p: &Path| {
            let file = std::fs::File::create(p).unwrap();
            file.set_len(1 << 40).unwrap();
        }),
    ] {
        for file in [
            "vectors.f32",
            "skeleton.json",
            "manifest.json",
            "bm25/meta.json",
        ] {
            let case = tempfile::tempdir().unwrap();
            let data = case.path().join("data");
            copy_tree(&pristine, &data);
            let path = data.join(&relative).join(file);
            std::fs::remove_file(&path).unwrap();
            make(&path);
            let started = std::time::Instant::now();
            let error = open_error(&data);
            assert!(
                error.contains(what) && error.contains(file),
                "{what} as {file}: {error}"
            );
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "{what} as {file}"
            );
        }
    }
}

/// The manifest's counts are checked against the skeleton, and a BM25
/// index emptied of its segments (which opens as an empty index) against
/// the indexed sentences. The files are rewritten and their checksums
/// with them, as a careless tool might: the version is consistent with
/// its checksums and still refused.
#[test]
fn counts_that_disagree_with_the_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (pristine, version_dir) = ingested(tmp.path());
    let relative = version_dir.strip_prefix(&pristine).unwrap().to_path_buf();
    let rewrite = |data: &Path, file: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let dir = data.join(&relative);
        let path = dir.join(file);
        let mut value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        edit(&mut value);
        std::fs::write(&path, value.to_string()).unwrap();
        std::fs::remove_file(dir.join("checksums.json")).unwrap();
        trellis::index::checksums::write(&dir).unwrap();
    };
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a dyn Fn(&mut serde_json::Value),
        &'a str,
    );
    let cases: [Case; 3] = [
        (
            "manifest.json",
            "sentences",
            &|m| m["counts"]["sentences"] = 1.into(),
            "1 sentences counted",
        ),
        (
            "manifest.json",
            "edges",
            &|m| m["counts"]["related_edges"] = 999.into(),
            "links where the manifest counts 999",
        ),
        (
            "bm25/meta.json",
            "segments",
            &|m| m["segments"] = serde_json::json!([]),
            "0 sentences indexed",
        ),
    ];
    for (file, what, edit, expected) in cases {
        let case = tempfile::tempdir().unwrap();
        let data = case.path().join("data");
        copy_tree(&pristine, &data);
        rewrite(&data, file, edit);
        let error = open_error(&data);
        assert!(error.contains(expected), "{what}: {error}");
    }
}
