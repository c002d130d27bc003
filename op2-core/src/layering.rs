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
