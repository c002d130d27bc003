//! The workspace's module graph, file by file: every module of every crate and the modules of its
//! own crate it uses, read with `syn`. The test fails on any circle of modules that import each
//! other (directly or through others): a newcomer reads each crate bottom up.
//!
//! What counts as a use: any path to another module of the crate (`crate::a::X`, `super::X`,
//! `self::a`, a child module's name), in `use` items and in code. What does not: `pub use`
//! re-exports (they list, they do not depend), `mod` declarations, visibilities (`pub(super)`),
//! `#[cfg(test)]` items, and paths to the crate root (`lib.rs` re-exports; its own check is
//! op2-core's `layering.rs`). Inline modules count as part of their file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One crate target's modules: for each module path (`a::b`, "" the root), the modules it uses.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// A path seen in a module, with the inline-module path it was written in.
struct Seen {
    file_module: String,
    at: Vec<String>,
    segments: Vec<String>,
}

/// Walks one file: its `mod x;` children (loaded recursively), inline modules, and paths.
struct FileVisitor<'a> {
    file_module: String,
    at: Vec<String>,
    children_dir: PathBuf,
    modules: &'a mut BTreeMap<String, String>,
    seen: &'a mut Vec<Seen>,
    pending: Vec<(Vec<String>, PathBuf, PathBuf)>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl FileVisitor<'_> {
    fn note(&mut self, segments: Vec<String>) {
        if !segments.is_empty() {
            self.seen.push(Seen {
                file_module: self.file_module.clone(),
                at: self.at.clone(),
                segments,
            });
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut s = prefix.clone();
                if n.ident != "self" {
                    s.push(n.ident.to_string());
                }
                self.note(s);
            }
            syn::UseTree::Rename(r) => {
                let mut s = prefix.clone();
                s.push(r.ident.to_string());
                self.note(s);
            }
            syn::UseTree::Glob(_) => self.note(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for FileVisitor<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.to_string();
        let mut path = self.at.clone();
        path.push(name.clone());
        match &m.content {
            Some((_, items)) => {
                // (A file module of the same name under another `cfg` stays the module.)
                self.modules
                    .entry(path.join("::"))
                    .or_insert_with(|| self.file_module.clone());
                // Inline: part of this file's module, but `super::` inside means this module.
                self.at.push(name);
                for i in items {
                    self.visit_item(i);
                }
                self.at.pop();
            }
            None => {
                let dir = self.children_dir.clone();
                let file = [
                    dir.join(format!("{name}.rs")),
                    dir.join(&name).join("mod.rs"),
                ]
                .into_iter()
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("module `{name}` of {}", dir.display()));
                self.modules.insert(path.join("::"), path.join("::"));
                self.pending.push((path, file, dir.join(&name)));
            }
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A re-export lists what a module offers; it is not a dependency of the module.
        if matches!(u.vis, syn::Visibility::Inherited) {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(super)` names who may see an item, not something the item uses.
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            self.note(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside macro calls (`format!("{}", crate::x::y())`, `matches!(.., a::B)`): read
        // the tokens as expressions where they parse.
        let parsed = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        );
        if let Ok(exprs) = parsed {
            for e in &exprs {
                self.visit_expr(e);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// Loads the module tree of the crate target whose root file is `root`; returns the graph.
fn graph_of(root: &Path) -> Graph {
    // Module path -> the file module it belongs to (itself for a file, its file for inline).
    let mut modules = BTreeMap::from([(String::new(), String::new())]);
    let mut seen = Vec::new();
    let root_dir = root.parent().expect("a file in a directory").to_path_buf();
    // A `src/bin/x.rs` target's `mod y;` is `src/bin/x/y.rs`; a root's is beside it.
    let children_dir = match root.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "main" | "mod") => root_dir,
        Some(stem) => root_dir.join(stem),
        None => root_dir,
    };
    let mut queue = vec![(Vec::<String>::new(), root.to_path_buf(), children_dir)];
    while let Some((path, file, dir)) = queue.pop() {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut v = FileVisitor {
            file_module: path.join("::"),
            at: path.clone(),
            children_dir: dir,
            modules: &mut modules,
            seen: &mut seen,
            pending: Vec::new(),
        };
        v.visit_file(&ast);
        queue.extend(v.pending);
    }
    let mut graph: Graph = modules
        .values()
        .map(|f| (f.clone(), BTreeSet::new()))
        .collect();
    for s in seen {
        let mut base: Vec<String> = match s.segments[0].as_str() {
            "crate" => Vec::new(),
            "self" | "super" => s.at.clone(),
            first => {
                // A child module named without a prefix (`execute::X` after `mod execute;`).
                let mut child = s.at.clone();
                child.push(first.to_string());
                if !modules.contains_key(&child.join("::")) {
                    continue;
                }
                s.at.clone()
            }
        };
        let mut rest = s.segments.iter().skip(usize::from(matches!(
            s.segments[0].as_str(),
            "crate" | "self"
        )));
        let mut rest_vec = Vec::new();
        for seg in rest.by_ref() {
            if seg == "super" && rest_vec.is_empty() {
                base.pop();
            } else {
                rest_vec.push(seg.clone());
            }
        }
        base.extend(rest_vec);
        // The longest prefix that is a module.
        let target = (0..=base.len())
            .rev()
            .map(|n| base[..n].join("::"))
            .find(|m| modules.contains_key(m))
            .map(|m| modules[&m].clone())
            .unwrap_or_default();
        if !target.is_empty() && target != s.file_module {
            graph
                .get_mut(&s.file_module)
                .unwrap_or_else(|| {
                    panic!("unknown module `{}` in {}", s.file_module, root.display())
                })
                .insert(target);
        }
    }
    graph.remove("");
    graph
}

/// The circles of `graph`: its strongly connected components of more than one module (Tarjan's
/// algorithm), each sorted.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                connect(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            connect(&mut s, v);
        }
    }
    s.out
}

/// Every crate target of the workspace: (label, root file).
fn targets(workspace: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(workspace)
        .expect("the workspace directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.join("Cargo.toml").exists() && p.join("src").is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        for root in ["lib.rs", "main.rs"] {
            let f = dir.join("src").join(root);
            if f.exists() {
                out.push((name.clone(), f));
            }
        }
        if let Ok(bins) = std::fs::read_dir(dir.join("src/bin")) {
            let mut bins: Vec<PathBuf> = bins.map(|e| e.expect("an entry").path()).collect();
            bins.sort();
            for b in bins
                .into_iter()
                .filter(|b| b.extension().is_some_and(|e| e == "rs"))
            {
                let stem = b
                    .file_stem()
                    .expect("a name")
                    .to_string_lossy()
                    .into_owned();
                out.push((format!("{name}/bin/{stem}"), b));
            }
        }
    }
    out
}

/// Every circle in the workspace, as `target: a, b, c`.
fn workspace_circles(workspace: &Path) -> BTreeSet<String> {
    targets(workspace)
        .into_iter()
        .flat_map(|(label, root)| {
            circles(&graph_of(&root))
                .into_iter()
                .map(move |c| format!("{label}: {}", c.join(", ")))
        })
        .collect()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

#[test]
fn no_module_circles() {
    let found = workspace_circles(&workspace());
    assert!(
        found.is_empty(),
        "modules that import each other in a circle (move what both need below both): {found:#?}"
    );
}

/// The check on a crate written for it: a circle through a child's name, `super::` and
/// `crate::` paths, inside a macro call; re-exports and test modules do not count.
#[test]
fn a_circle_made_on_purpose_is_found() {
    let dir = std::env::temp_dir().join(format!("op2-layering-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "mod a; mod b; mod c; pub use a::A; pub use c::C;",
    )
    .unwrap();
    std::fs::write(
        src.join("a.rs"),
        "pub struct A; fn f() { let _ = crate::b::inner::g(); }",
    )
    .unwrap();
    std::fs::write(src.join("b/mod.rs"), "pub mod inner;").unwrap();
    std::fs::write(
        src.join("b/inner.rs"),
        "pub fn g() { assert!(matches!(super::super::a::A, crate::a::A)); } pub(super) fn h() {}",
    )
    .unwrap();
    // `c` re-exports `a` and tests it: neither is a dependency.
    std::fs::write(
        src.join("c.rs"),
        "pub use crate::a::A as C;\n#[cfg(test)] mod tests { use crate::b::inner::g; }",
    )
    .unwrap();
    let graph = graph_of(&src.join("lib.rs"));
    let found = circles(&graph);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found, vec![vec!["a".to_string(), "b::inner".to_string()]]);
    assert!(graph["c"].is_empty(), "{graph:?}");
    // `pub(super)` is who may see `h`, not a use of `b`.
    assert!(!graph["b::inner"].contains("b"), "{graph:?}");
}

/// Prints one target's module graph, for a reader planning a change:
/// `OP2_LAYERING_TARGET=op2-core OP2_LAYERING_UNDER=runtime cargo test -p xtask -- --ignored
/// --nocapture print_graph` (every module `under` the prefix given, with the modules it uses).
#[test]
#[ignore = "prints a graph; run by hand"]
fn print_graph() {
    let target = std::env::var("OP2_LAYERING_TARGET").unwrap_or_else(|_| "op2-core".into());
    let under = std::env::var("OP2_LAYERING_UNDER").unwrap_or_default();
    for (label, root) in targets(&workspace()) {
        if label != target {
            continue;
        }
        for (module, uses) in graph_of(&root) {
            if module.starts_with(&under) {
                let uses: Vec<_> = uses.into_iter().collect();
                println!("{module} -> {}", uses.join(", "));
            }
        }
    }
}
