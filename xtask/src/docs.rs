//! Checks of the documentation that a test can make: every relative link in the README and the
//! guide under `docs/` leads to a file or folder that exists (run by `cargo test`).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The README and every Markdown file under `docs/`.
    fn documents(root: &Path) -> Vec<PathBuf> {
        let mut out = vec![root.join("README.md")];
        let mut dirs = vec![root.join("docs")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).expect("docs/ is readable") {
                let p = e.expect("a readable entry").path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "md") {
                    out.push(p);
                }
            }
        }
        out
    }

    /// The targets of `](target)` links outside code spans and blocks, with their line numbers.
    fn links(text: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut fenced = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            // Drop code spans: `a](b)` inside backticks is not a link.
            let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            let mut rest = plain.as_str();
            while let Some(i) = rest.find("](") {
                rest = &rest[i + 2..];
                let end = rest.find(')').unwrap_or(rest.len());
                out.push((n + 1, rest[..end].trim().to_string()));
                rest = &rest[end..];
            }
        }
        out
    }

    /// Whether `target` is an address outside the repository (not checked here).
    fn external(target: &str) -> bool {
        target.contains("://") || target.starts_with("mailto:")
    }

    #[test]
    fn relative_links_in_the_readme_and_docs_resolve() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut broken = Vec::new();
        let mut checked = 0;
        for doc in documents(&root) {
            let text = std::fs::read_to_string(&doc).expect("a readable document");
            for (line, target) in links(&text) {
                if external(&target) {
                    continue;
                }
                let path = target.split('#').next().unwrap_or("");
                if path.is_empty() {
                    continue; // an anchor in the same document
                }
                checked += 1;
                let dir = doc.parent().expect("a document has a folder");
                if !dir.join(path).exists() {
                    broken.push(format!("{}:{line}: {target}", doc.display()));
                }
            }
        }
        assert!(
            checked > 20,
            "found only {checked} links: the scan is broken"
        );
        assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    }

    #[test]
    fn the_scan_finds_links_and_skips_code() {
        let found = links("see [a](x.md) and `[b](y.md)`\n```\n[c](z.md)\n```\n[d](w.md#part)");
        assert_eq!(
            found,
            vec![(1, "x.md".to_string()), (5, "w.md#part".to_string())]
        );
    }
}
