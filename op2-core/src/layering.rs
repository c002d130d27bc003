//! Checks that op2-core's layers import one way (model, then contract, then runtime) and that no
//! two modules import each other, even through others: a newcomer reads the crate bottom up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom up, by directory under `src/`.
const LAYERS: [&str; 3] = ["model", "contract", "runtime"];

/// Every module of the crate (a file or a directory under a layer's directory, or the runtime as
/// one module) with its layer and the source of its files.
fn modules() -> BTreeMap<String, (usize, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for (layer, dir) in LAYERS.iter().enumerate() {
        for entry in std::fs::read_dir(src.join(dir)).expect("the layer's directory exists") {
            let path = entry.expect("a readable entry").path();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            // The runtime's files are one module to the others; a layer's `mod.rs` only lists.
            let name = if *dir == "runtime" {
                "runtime".to_string()
            } else if stem == "mod" {
                continue;
            } else {
                stem
            };
            let e = out.entry(name).or_insert((layer, String::new()));
            e.1.push_str(&source_of(&path));
        }
    }
    out
}

/// The text of a source file, or of every file under a module's directory.
fn source_of(path: &Path) -> String {
    if !path.is_dir() {
        return std::fs::read_to_string(path).expect("a readable source file");
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .expect("a readable directory")
        .map(|e| e.expect("a readable entry").path())
        .collect();
    entries.sort();
    entries.iter().map(|p| source_of(p)).collect()
}

/// The crate modules a source imports (`crate::x`, `crate::layer::x`, `crate::{x, y::z}`),
/// outside comments. A path through the crate root's re-exports (`crate::Dat`) would hide its
/// module from the check, so it is an error.
fn imports(source: &str, known: &BTreeMap<String, (usize, String)>) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    // `super::super` climbs out of a layer without naming a module; the runtime's files use
    // `super::` only to reach their own siblings.
    assert!(
        !code.contains("super::super"),
        "import through the crate's path instead of `super::super`"
    );
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before == Some('$') {
            continue; // a macro's `$crate::`, which names the crate from other crates
        }
        let group = if rest.starts_with('{') {
            // The group up to its matching brace; only the first segment of each top-level item
            // names a module (`crate::{a::{B, C}, d}` imports `a` and `d`).
            let mut depth = 0;
            let mut items = String::new();
            for c in rest.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    _ if depth == 1 => items.push(c),
                    _ => {}
                }
            }
            items
        } else {
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect()
        };
        for item in group.split(',') {
            let mut path = item.trim().split("::").filter(|s| !s.is_empty());
            let mut first = path.next().unwrap_or("").trim().to_string();
            if LAYERS.contains(&first.as_str()) && first != "runtime" {
                first = path.next().unwrap_or("").trim().to_string();
            } else if first != "runtime" && known.contains_key(&first) {
                // `crate::carrier` is the root's alias of `crate::model::carrier`: the layer
                // path says where a module sits.
                panic!(
                    "`crate::{}` goes through the root's alias: import it by its layer's path \
                     (crate::{}::{first})",
                    item.trim(),
                    LAYERS[known[&first].0]
                );
            }
            assert!(
                known.contains_key(&first),
                "`crate::{}` does not name a module: import through the module's path",
                item.trim()
            );
            found.insert(first);
        }
    }
    found
}

#[test]
fn layers_import_downward_and_modules_form_no_cycle() {
    let mods = modules();
    assert!(mods.len() > 15, "found the modules: {:?}", mods.keys());
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (name, (layer, text)) in &mods {
        let deps = imports(text, &mods);
        for d in &deps {
            let dl = mods[d].0;
            assert!(
                dl <= *layer,
                "`{name}` ({}) imports `{d}` ({}): layers import only downward",
                LAYERS[*layer],
                LAYERS[dl]
            );
        }
        graph.insert(name, deps.into_iter().filter(|d| d != name).collect());
    }
    // Depth-first search for a cycle, naming it.
    fn visit<'a>(
        n: &'a str,
        graph: &'a BTreeMap<&'a str, BTreeSet<String>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(n) {
            return;
        }
        if let Some(i) = stack.iter().position(|s| *s == n) {
            panic!("modules import each other in a circle: {:?}", &stack[i..]);
        }
        stack.push(n);
        for d in &graph[n] {
            visit(d, graph, stack, done);
        }
        stack.pop();
        done.insert(n);
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
#[should_panic(expected = "does not name a module")]
fn a_path_through_the_root_is_refused() {
    imports("use crate::Dat;", &modules());
}

#[test]
#[should_panic(expected = "import it by its layer's path (crate::model::carrier)")]
fn a_root_alias_is_refused() {
    imports("use crate::carrier::Dat;", &modules());
}

#[test]
fn the_check_sees_imports_in_every_form() {
    let mods = modules();
    let found = imports(
        "use crate::model::carrier::Dat;\nuse crate::{model::map::{Map, self}, model::set};\n\
         // use crate::runtime;\n\
         fn f() { crate::contract::backend::x(); $crate::__private::y(); }",
        &mods,
    );
    let want: BTreeSet<String> = ["carrier", "map", "set", "backend"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, want);
}

/// The runtime's own layers, bottom up, by module (a file under `src/runtime`, or a
/// subsystem's directory). `mod` is the `Runtime` front itself.
const RUNTIME_LAYERS: [(&str, &[&str]); 5] = [
    (
        "core",
        &[
            "engine", "record", "stats", "steps", "sync", "timing", "validate",
        ],
    ),
    (
        "subsystem",
        &[
            "checkpoint",
            "extrusion",
            "fusion",
            "memory",
            "temporaries",
            "tiling",
        ],
    ),
    ("hub", &["shared"]),
    ("execution", &["execute", "graph_view"]),
    (
        "front",
        &[
            "mod",
            "algebra",
            "builder",
            "extruded",
            "halo_refresh",
            "memory_report",
            "mixed",
            "par_loop",
            "per_entry",
            "subset",
            "temporary_dats",
        ],
    ),
];

/// The runtime layer of module `m`, if it is one.
fn runtime_layer(m: &str) -> Option<usize> {
    RUNTIME_LAYERS
        .iter()
        .position(|(_, mods)| mods.contains(&m))
}

/// The runtime modules `source` (a file of runtime module `own`) imports: `crate::runtime::x`
/// anywhere, and `super::x` in a file directly under `src/runtime` (in a subsystem's child,
/// `super` is the subsystem itself). An item of the runtime's root (`crate::runtime::Runtime`)
/// is the front's.
fn runtime_imports(source: &str, top_level: bool) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let prefixes: &[&str] = if top_level {
        &["crate::runtime::", "super::"]
    } else {
        &["crate::runtime::"]
    };
    for prefix in prefixes {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // part of a longer path
            }
            let items: Vec<String> = if rest.starts_with('{') {
                let end = rest.find('}').unwrap_or(rest.len());
                // Only the first segment of each item names a module; nested groups are
                // rare here and start with a module name anyway.
                rest[1..end].split(',').map(|s| s.to_string()).collect()
            } else {
                vec![
                    rest.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect(),
                ]
            };
            for item in items {
                let first = item.trim().split("::").next().unwrap_or("").trim();
                if first.is_empty() || first == "self" {
                    continue;
                }
                let m = if runtime_layer(first).is_some() {
                    first
                } else {
                    "mod"
                };
                found.insert(m.to_string());
            }
        }
    }
    found
}

/// Every runtime module with the text of each of its files and whether the file sits directly
/// under `src/runtime`.
fn runtime_modules() -> BTreeMap<String, Vec<(bool, String)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let mut out: BTreeMap<String, Vec<(bool, String)>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("src/runtime exists") {
        let path = entry.expect("a readable entry").path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let files: Vec<(bool, String)> = if path.is_dir() {
            let mut inner: Vec<_> = std::fs::read_dir(&path)
                .expect("a readable directory")
                .map(|e| e.expect("a readable entry").path())
                .collect();
            inner.sort();
            inner
                .iter()
                .map(|p| {
                    // A subsystem's `mod.rs` is its module: `super` there is the runtime.
                    let is_mod = p.file_stem().is_some_and(|s| s == "mod");
                    (is_mod, std::fs::read_to_string(p).expect("readable"))
                })
                .collect()
        } else {
            vec![(true, std::fs::read_to_string(&path).expect("readable"))]
        };
        out.entry(stem).or_default().extend(files);
    }
    out
}

/// No hub: the runtime's modules import only their own layer or those below it, and a
/// subsystem imports no other subsystem (each owns its state and works with the core's engine
/// alone), so only the hub and what sits above it see every subsystem.
fn check_runtime_layers(mods: &BTreeMap<String, Vec<(bool, String)>>) {
    for name in mods.keys() {
        assert!(
            runtime_layer(name).is_some(),
            "runtime module `{name}` has no layer: add it to RUNTIME_LAYERS"
        );
    }
    for (name, files) in mods {
        let layer = runtime_layer(name).unwrap();
        for (top_level, text) in files {
            for d in runtime_imports(text, *top_level) {
                if d == *name {
                    continue;
                }
                let dl = runtime_layer(&d).unwrap();
                assert!(
                    dl < layer || (dl == layer && RUNTIME_LAYERS[layer].0 != "subsystem"),
                    "runtime module `{name}` ({}) imports `{d}` ({}): the runtime's layers \
                     import only downward, and subsystems only the core",
                    RUNTIME_LAYERS[layer].0,
                    RUNTIME_LAYERS[dl].0
                );
            }
        }
    }
}

#[test]
fn runtime_layers_import_downward_and_subsystems_see_only_the_core() {
    let mods = runtime_modules();
    assert!(
        mods.len() > 20,
        "found the runtime's modules: {:?}",
        mods.keys()
    );
    check_runtime_layers(&mods);
}

#[test]
fn the_runtime_check_sees_its_imports() {
    let found = runtime_imports(
        "use super::{engine::Engine, shared::State};\nuse crate::runtime::Runtime;\n\
         fn f() { crate::runtime::steps::x(); y::super::z(); }\n// use super::execute;",
        true,
    );
    let want: BTreeSet<String> = ["engine", "shared", "mod", "steps"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, want);
}

#[test]
#[should_panic(expected = "runtime module `fusion` (subsystem) imports `shared` (hub)")]
fn a_subsystem_seeing_the_hub_is_refused() {
    let mut mods = runtime_modules();
    mods.get_mut("fusion")
        .unwrap()
        .push((false, "use crate::runtime::shared::RuntimeShared;".into()));
    check_runtime_layers(&mods);
}

#[test]
#[should_panic(expected = "runtime module `tiling` (subsystem) imports `fusion` (subsystem)")]
fn a_subsystem_seeing_another_is_refused() {
    let mut mods = runtime_modules();
    mods.get_mut("tiling")
        .unwrap()
        .push((true, "use super::fusion::Fusions;".into()));
    check_runtime_layers(&mods);
}
