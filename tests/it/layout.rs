//! The crate's layout follows the data flow: no top-level module imports
//! one that imports it back, so each step of the flow can be read, and
//! moved, on its own. Test code is left out (a module's tests may build
//! an index to test on), as are doc comments (their links do not import).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/` and, for each, the top-level modules
/// its non-test code names through `crate::`, with a file that does.
fn imports() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name == "main" || name == "lib" {
            continue;
        }
        let mut named = BTreeMap::new();
        for file in rust_files(&path) {
            for module in crate_paths(&std::fs::read_to_string(&file).unwrap()) {
                if module != name {
                    named.entry(module).or_insert_with(|| file.clone());
                }
            }
        }
        modules.insert(name, named);
    }
    modules
}

fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        let is_test = path.file_name().is_some_and(|n| n == "tests.rs");
        return match path.extension().is_some_and(|e| e == "rs") && !is_test {
            true => vec![path.to_path_buf()],
            false => Vec::new(),
        };
    }
    // A module's unit tests split into files (`tests/mod.rs` and its
    // modules) are test code as `tests.rs` is.
    if path.file_name().is_some_and(|n| n == "tests") {
        return Vec::new();
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap()
        .flat_map(|e| rust_files(&e.unwrap().path()))
        .collect();
    files.sort();
    files
}

/// The first segment of every `crate::` path in `text` before its inline
/// test module, comments skipped; `crate::{a::X, b}` names `a` and `b`.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let code = line.trim_start();
        // An inline test module; the rest of the file is tests.
        if code.starts_with("#[cfg(test)]")
            && lines.peek().is_some_and(|next| {
                let next = next.trim();
                next.starts_with("mod ") && next.ends_with('{')
            })
        {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = code.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            match rest.strip_prefix('{') {
                // A group: each of its top-level items.
                Some(group) => {
                    let mut depth = 0;
                    let mut item = String::new();
                    for c in group.chars() {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => break,
                            '}' => depth -= 1,
                            ',' if depth == 0 => {
                                found.extend(first_segment(&item));
                                item.clear();
                                continue;
                            }
                            _ => {}
                        }
                        item.push(c);
                    }
                    found.extend(first_segment(&item));
                }
                None => found.extend(first_segment(rest)),
            }
        }
    }
    found
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_lowercase())).then_some(name)
}

#[test]
fn no_top_level_module_imports_one_that_imports_it_back() {
    let imports = imports();
    assert!(imports.len() > 10, "read {} modules", imports.len());
    // Depth-first search for a back edge; the path to it is the cycle.
    fn visit(
        module: &str,
        imports: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut cycle = path[start..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if !done.insert(module.to_string()) {
            return None;
        }
        path.push(module.to_string());
        for next in imports.get(module).into_iter().flat_map(|n| n.keys()) {
            if let Some(cycle) = visit(next, imports, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in imports.keys() {
        if let Some(cycle) = visit(module, &imports, &mut Vec::new(), &mut done) {
            let edges: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let file = &imports[&pair[0]][&pair[1]];
                    format!("{} → {} ({})", pair[0], pair[1], file.display())
                })
                .collect();
            panic!("an import cycle: {}", edges.join(", "));
        }
    }
}

#[test]
fn imports_are_read_from_paths_and_groups_but_not_comments() {
    let text = "use crate::index::IndexVersion;\n\
                use crate::{embed::{self, Embedder}, spec};\n\
                // crate::operator is named in a comment\n\
                let x = crate::graph::sync(); // crate::serve\n\
                #[cfg(test)]\nmod tests {\n use crate::ingest;\n}\n";
    let found: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(found, ["embed", "graph", "index", "spec"]);
}

/// The steps of the data flow in `../shared/DESIGN.md`'s order, each a
/// layer: the ground every step stands on first (the specs, byte scans,
/// locations), then bytes → trees → skeleton → chunks and metadata → the
/// index → the graph stores → ingest and retrieval → answers → what serves
/// and measures them. A module imports only from layers before its own.
const LAYERS: &[&[&str]] = &[
    &["byteset", "locations", "memory", "spec", "vector"],
    &["embed", "parse", "segment"],
    &["skeleton", "source"],
    &["chunk", "enrich"],
    &["pipeline"],
    &["index"],
    &["graph"],
    &["ingest", "retrieve"],
    &["generate"],
    &["eval", "operator", "serve"],
    &["cli"],
];

#[test]
fn data_moves_forward_through_the_layers() {
    let imports = imports();
    let layer = |module: &str| LAYERS.iter().position(|layer| layer.contains(&module));
    let mut wrong = Vec::new();
    for (module, named) in &imports {
        let Some(own) = layer(module) else {
            wrong.push(format!("{module} is in no layer: place it in LAYERS"));
            continue;
        };
        // Names that are no module of `src/` (a function at the crate's
        // root) are not steps.
        for (target, file) in named.iter().filter(|(t, _)| imports.contains_key(*t)) {
            if layer(target).is_none_or(|theirs| theirs >= own) {
                wrong.push(format!(
                    "{module} imports {target}, a step at or after its own ({})",
                    file.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
