//! The kernel rewritten for SIMD lanes stored component-major (OP2's vectorised CPU scheme): a
//! batch keeps component `k` of lane `l` of an arg gathered through a map at `g[k][l]`, so the
//! lanes' values of one component are contiguous and load as one vector. The kernel indexes its
//! parameter as one element's row (`q[k]`), so a copy of it indexes `q[(k) * W]` instead and is
//! handed `&g[0][l]`. The rewrite is textual and careful: only uses of the parameter as `p[...]`
//! or `*p` are rewritten, and any other use (passing the pointer on, pointer arithmetic, a
//! parameter with two array bounds) leaves the kernel alone, and the batch lane-major.

/// One token of C source: its byte span.
#[derive(Debug, Clone, Copy)]
struct Token {
    start: usize,
    end: usize,
}

/// Tokens of C source, comments, preprocessor lines, strings and character literals skipped
/// (strings and characters are returned as one token each, so their contents never match).
fn tokens(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if line_start && c == b'#' {
            // A preprocessor line (with its continuations).
            while i < b.len() && !(b[i] == b'\n' && b[i - 1] != b'\\') {
                i += 1;
            }
            continue;
        }
        line_start = false;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i = (i + 2).min(b.len());
            continue;
        }
        let start = i;
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else if c.is_ascii_alphanumeric()
            || c == b'_'
            || c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)
        {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
        } else if c == b'-' && b.get(i + 1) == Some(&b'>') {
            i += 2;
        } else {
            i += 1;
        }
        out.push(Token { start, end: i });
    }
    out
}

fn is_identifier(text: &str) -> bool {
    text.as_bytes()
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
}

/// Whether a word starts or names a type (C's, `<stdint.h>`'s and the usual qualifiers).
fn is_type_word(t: &str) -> bool {
    matches!(
        t,
        "double"
            | "float"
            | "int"
            | "long"
            | "short"
            | "char"
            | "unsigned"
            | "signed"
            | "const"
            | "static"
            | "register"
            | "volatile"
            | "struct"
            | "size_t"
            | "int8_t"
            | "int16_t"
            | "int32_t"
            | "int64_t"
            | "uint8_t"
            | "uint16_t"
            | "uint32_t"
            | "uint64_t"
            | "bool"
            | "_Bool"
    )
}

/// The index of the token closing the bracket opened at `open` (`(`, `[` or `{`).
fn closing(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    let text = |t: &Token| &src[t.start..t.end];
    let (o, c) = match text(&toks[open]) {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        "{" => ("{", "}"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        let s = text(t);
        if s == o {
            depth += 1;
        } else if s == c {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The definition of kernel `name` in `src` rewritten as function `new_name` (from its name on:
/// the caller writes what comes before, the kernel returning `void`) whose parameters
/// flagged in `strided` index their rows with stride `width`; `None` when a flagged parameter
/// is used in a way the rewrite does not cover.
pub(crate) fn strided_kernel(
    src: &str,
    name: &str,
    new_name: &str,
    strided: &[bool],
    width: usize,
) -> Option<String> {
    let toks = tokens(src);
    let text = |k: usize| &src[toks[k].start..toks[k].end];
    // The definition: `name (` ... `)` `{`.
    let (open, close, body) = (0..toks.len()).find_map(|k| {
        if text(k) != name || k + 1 >= toks.len() || text(k + 1) != "(" {
            return None;
        }
        let close = closing(src, &toks, k + 1)?;
        (close + 1 < toks.len() && text(close + 1) == "{").then_some((k + 1, close, close + 1))
    })?;
    let body_end = closing(src, &toks, body)?;
    // Parameters: split at top-level commas; each one's name is its last identifier.
    let mut params: Vec<(String, usize)> = Vec::new(); // (name, array declarators)
    let mut depth = 0;
    let (mut last_ident, mut brackets) = (None::<usize>, 0usize);
    for k in open + 1..=close {
        let t = text(k);
        match t {
            "(" | "[" => {
                if t == "[" && depth == 0 {
                    brackets += 1;
                }
                depth += 1;
            }
            ")" | "]" if k != close => depth -= 1,
            _ => {}
        }
        if (t == "," && depth == 0) || k == close {
            if let Some(id) = last_ident {
                params.push((text(id).to_string(), brackets));
            }
            last_ident = None;
            brackets = 0;
        } else if depth == 0 && is_identifier(t) {
            last_ident = Some(k);
        }
    }
    if params.len() != strided.len() {
        return None;
    }
    for ((_, brackets), &s) in params.iter().zip(strided) {
        if s && *brackets > 1 {
            return None;
        }
    }
    let targets: Vec<&str> = params
        .iter()
        .zip(strided)
        .filter(|(_, s)| **s)
        .map(|(p, _)| p.0.as_str())
        .collect();
    // A macro may spell a use the rewrite cannot see: any preprocessor line naming a target
    // leaves the kernel alone.
    let in_macro = src.lines().any(|l| {
        l.trim_start().starts_with('#')
            && tokens(&l.trim_start()[1..])
                .iter()
                .any(|t| targets.contains(&&l.trim_start()[1..][t.start..t.end]))
    });
    if in_macro {
        return None;
    }
    // Edits: (byte range replaced, replacement).
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let operand_end = |k: usize| {
        let t = text(k);
        is_identifier(t) || t.as_bytes()[0].is_ascii_digit() || t == ")" || t == "]"
    };
    // Whether the identifier at `k` is being declared: after a type word (or its `*`s), or after
    // a comma in a statement that starts with one.
    let declares = |k: usize| {
        let mut j = k - 1;
        while text(j) == "*" {
            j -= 1;
        }
        if is_type_word(text(j)) {
            return true;
        }
        if text(k - 1) != "," {
            return false;
        }
        let mut j = k - 1;
        while j > body && !matches!(text(j - 1), ";" | "{" | "}") {
            j -= 1;
        }
        is_type_word(text(j))
    };
    let mut k = body + 1;
    while k < body_end {
        let t = text(k);
        let member = k > 0 && matches!(text(k - 1), "." | "->");
        if targets.contains(&t) && !member {
            // A local of the same name (in an inner block) would be rewritten too.
            if declares(k) {
                return None;
            }
            if text(k + 1) == "[" {
                // `&p[i]` hands on a pointer into the row, which its user would step through
                // without the stride.
                if text(k - 1) == "&" && !operand_end(k - 2) {
                    return None;
                }
                let end = closing(src, &toks, k + 1)?;
                let inner = &src[toks[k + 1].end..toks[end].start];
                edits.push((
                    toks[k].start,
                    toks[end].end,
                    format!("{t}[({inner}) * {width}]"),
                ));
                // Uses inside the subscript are rewritten on their own, after it.
                k += 2;
                continue;
            }
            let deref = text(k - 1) == "*" && !operand_end(k - 2);
            if !deref {
                return None;
            }
            edits.push((toks[k - 1].start, toks[k].end, format!("{t}[0]")));
        }
        k += 1;
    }
    // Nested edits (a target inside another's subscript): apply innermost first by rebuilding
    // each subscript's text; simplest is to refuse them.
    edits.sort_by_key(|e| e.0);
    if edits.windows(2).any(|w| w[1].0 < w[0].1) {
        return None;
    }
    let mut out = String::from(new_name);
    out.push_str(&src[toks[open].start..toks[body].start]);
    let mut at = toks[body].start;
    for (s, e, r) in &edits {
        out.push_str(&src[at..*s]);
        out.push_str(r);
        at = *e;
    }
    out.push_str(&src[at..toks[body_end].end]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_dereferences_of_flagged_parameters_take_the_stride() {
        let src = "/* c */ static double sq(double a) { return a * a; }\n\
                   void k(const double *q, double *r, const double *d) {\n\
                   double s = q[0] * *d; // q[1]\n\
                   r[1] += sq(q[1]) * 2 * *q;\n *r -= (*q);\n}";
        let out = strided_kernel(src, "k", "k_lanes", &[true, true, false], 8).unwrap();
        assert!(
            out.starts_with("k_lanes(const double *q, double *r, const double *d) {"),
            "{out}"
        );
        assert!(out.contains("double s = q[(0) * 8] * *d;"), "{out}");
        assert!(
            out.contains("r[(1) * 8] += sq(q[(1) * 8]) * 2 * q[0];"),
            "{out}"
        );
        assert!(out.contains("r[0] -= (q[0]);"), "{out}");
        assert!(!out.contains("sq(double a)"));
    }

    #[test]
    fn other_uses_leave_the_kernel_alone() {
        let pass_on = "void k(double *q) { f(q); }";
        assert!(strided_kernel(pass_on, "k", "k2", &[true], 8).is_none());
        let arith = "void k(double *q) { double *p = q + 1; }";
        assert!(strided_kernel(arith, "k", "k2", &[true], 8).is_none());
        let two_d = "void k(double q[2][2]) { q[0][1] = 1; }";
        assert!(strided_kernel(two_d, "k", "k2", &[true], 8).is_none());
        let nested = "void k(double *q, int *i) { q[i[0]] = 1; }";
        assert!(strided_kernel(nested, "k", "k2", &[true, true], 8).is_none());
        let address = "void k(double *q) { g(&q[1]); }";
        assert!(strided_kernel(address, "k", "k2", &[true], 8).is_none());
        let shadow = "void k(double *q) { q[0] = 1; { double x, q[2]; q[1] = 0; } }";
        assert!(strided_kernel(shadow, "k", "k2", &[true], 8).is_none());
        let shadow2 = "void k(double *q) { for (int i = 0; i < 2; i++) { double *q = 0; } }";
        assert!(strided_kernel(shadow2, "k", "k2", &[true], 8).is_none());
        let macro_use = "void k(double *q) {\n#define Q(i) q[i]\n Q(0) = 1; }";
        assert!(strided_kernel(macro_use, "k", "k2", &[true], 8).is_none());
        // A product is not a dereference.
        let product = "void k(double *q, double *r) { r[0] = 2 * *q * q[1]; }";
        let out = strided_kernel(product, "k", "k2", &[true, true], 4).unwrap();
        assert!(out.contains("r[(0) * 4] = 2 * q[0] * q[(1) * 4];"), "{out}");
        // An unflagged parameter may be used any way at all.
        let free = "void k(double *q, double *p) { f(p); q[0] = 1; }";
        assert!(strided_kernel(free, "k", "k2", &[true, false], 8).is_some());
    }
}
