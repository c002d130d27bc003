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
        } else if word_byte(c) || c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            // Identifiers and numbers; bytes past ASCII (UTF-8 identifiers) stay inside the
            // token, so that slicing at token bounds never splits a character.
            while i < b.len() && (word_byte(b[i]) || b[i] == b'.') {
                i += 1;
            }
        } else if matches!(
            (c, b.get(i + 1)),
            (b'-', Some(b'>'))
                | (b'+', Some(b'+'))
                | (b'-', Some(b'-'))
                | (b'&', Some(b'&'))
                | (b'|', Some(b'|'))
        ) {
            i += 2;
        } else {
            i += 1;
        }
        out.push(Token { start, end: i });
    }
    out
}

/// Bytes of identifiers and numbers (past ASCII: UTF-8 identifiers, as GCC takes them).
fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || !c.is_ascii()
}

fn is_identifier(text: &str) -> bool {
    text.as_bytes()
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || !c.is_ascii())
}

/// Words that may stand before an identifier without declaring it.
fn is_statement_word(t: &str) -> bool {
    matches!(t, "return" | "case" | "sizeof" | "goto" | "else" | "do")
}

/// Words a flagged parameter's declaration may consist of besides its name, its one `*` or
/// `[...]`: scalar types and qualifiers. Anything else (a typedef, a struct, parentheses, an
/// attribute) leaves the kernel alone: the stride is counted in elements of a scalar type.
fn is_parameter_word(t: &str) -> bool {
    is_type_word(t) || matches!(t, "restrict" | "__restrict" | "__restrict__" | "*")
}

/// A parameter's name from its tokens (its last identifier at the top level); for a flagged
/// parameter, `None` unless it is a scalar type with exactly one `*` or one `[...]` after the
/// name.
fn parameter_name<'a>(toks: &[&'a str], flagged: bool) -> Option<&'a str> {
    let bracket = toks.iter().position(|t| *t == "[");
    let head = &toks[..bracket.unwrap_or(toks.len())];
    let name = *head.last()?;
    if !flagged {
        return head.iter().rev().find(|t| is_identifier(t)).copied();
    }
    if !is_identifier(name) || is_type_word(name) {
        return None;
    }
    let stars = head.iter().filter(|t| **t == "*").count();
    let words_ok = head[..head.len() - 1].iter().all(|t| is_parameter_word(t));
    let one_level = match bracket {
        None => stars == 1,
        Some(b) => stars == 0 && toks.last() == Some(&"]") && !toks[b + 1..].contains(&"["),
    };
    (words_ok && one_level).then_some(name)
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
    // Parameters: split at top-level commas; each one's name is its last identifier at the
    // top level. A flagged one must be a scalar type with one `*` or one `[...]`.
    let mut params: Vec<String> = Vec::new();
    let mut start = open + 1;
    let mut depth = 0i32;
    for k in open + 1..=close {
        let t = text(k);
        if k < close && matches!(t, "(" | "[") {
            depth += 1;
        } else if k < close && matches!(t, ")" | "]") {
            depth -= 1;
        }
        if (t == "," && depth == 0) || k == close {
            let flagged = strided.get(params.len()).copied().unwrap_or(false);
            let toks_of: Vec<&str> = (start..k).map(text).collect();
            let name = parameter_name(&toks_of, flagged)?;
            params.push(name.to_string());
            start = k + 1;
        }
    }
    if params.len() != strided.len() {
        return None;
    }
    let targets: Vec<&str> = params
        .iter()
        .zip(strided)
        .filter(|(_, s)| **s)
        .map(|(p, _)| p.as_str())
        .collect();
    // A macro may spell a use the rewrite cannot see, and the copy comes after the whole
    // source (an `#undef` at its end would leave the copy without the macro): any
    // preprocessor line but `#include` leaves the kernel alone.
    let preprocessed = src.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#') && !l[1..].trim_start().starts_with("include")
    });
    if preprocessed {
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
        // `T q` (`T` a word that is not a statement's) declares; so does `double *q`. (`a *q`
        // with `a` a typedef cannot be told from a product: taken as one.)
        let before = text(k - 1);
        if is_type_word(before) || (is_identifier(before) && !is_statement_word(before)) {
            return true;
        }
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
        is_type_word(text(j)) || (is_identifier(text(j)) && is_identifier(text(j + 1)))
    };
    let mut k = body + 1;
    while k < body_end {
        let t = text(k);
        let member = matches!(text(k - 1), "." | "->");
        if targets.contains(&t) && !member {
            // A local of the same name (in an inner block) would be rewritten too.
            if declares(k) {
                return None;
            }
            if text(k + 1) == "[" {
                // `&p[i]` (or `&(p[i])`) hands on a pointer into the row, which its user
                // would step through without the stride.
                let mut j = k - 1;
                while text(j) == "(" {
                    j -= 1;
                }
                if text(j) == "&" && !operand_end(j - 1) {
                    return None;
                }
                let end = closing(src, &toks, k + 1)?;
                if end >= body_end {
                    return None;
                }
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
            // `*p`, not followed by anything that would make it another expression (`*p++`
            // steps the pointer).
            let deref = text(k - 1) == "*"
                && !operand_end(k - 2)
                && !matches!(text(k + 1), "++" | "--" | "[" | "(" | "." | "->");
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
        // Stepping the pointer, the address of a parenthesised row, a local of a typedef'd
        // type, parameters that are not a scalar with one level, macros anywhere, `#undef`.
        for (src, flags) in [
            (
                "void k(const double *q, double *o) { double a = *q++; o[0] = a; }",
                &[true, false][..],
            ),
            ("void k(double *q) { g(&(q[1])); }", &[true]),
            (
                "void k(double *q) { q[0] = 1; { real q[2] = {1, 2}; h(q[1]); } }",
                &[true],
            ),
            ("void k(const double (*q)[2]) { g(q[0][1]); }", &[true]),
            ("void k(const vec2 *q) { g(q[1]); }", &[true]),
            ("void k(double **q) { g(q[1][0]); }", &[true]),
            ("void k(double q[2][2]) { g(q[1][0]); }", &[true]),
            (
                "#define LOAD(i) \\\n q[i]\nvoid k(const double *q, double *o) { o[0] = LOAD(1); }",
                &[true, false],
            ),
            (
                "#define SQ(x) ((x) * (x))\nvoid k(double *q) { q[0] = SQ(q[1]); }\n#undef SQ",
                &[true],
            ),
        ] {
            assert!(strided_kernel(src, "k", "k2", flags, 8).is_none(), "{src}");
        }
        // What the rewrite does take: `&&`, casts of rows, qualifiers, array parameters, a
        // UTF-8 name elsewhere.
        let ok = "#include <math.h>\nvoid k(const double *restrict q, double r[4], int n) {\n\
                  double \u{3bb} = 2; if (n > 0 && q[0] > 0) r[1] += (float)q[1] * \u{3bb}; }";
        let out = strided_kernel(ok, "k", "k2", &[true, true, false], 8).unwrap();
        assert!(
            out.contains(
                "if (n > 0 && q[(0) * 8] > 0) r[(1) * 8] += (float)q[(1) * 8] * \u{3bb}; }"
            ),
            "{out}"
        );
        // Bytes past ASCII anywhere never split a character (no panic).
        let _ = strided_kernel(
            "void k(double *q) { \u{e9}q[0] = 1; \u{1F600} }",
            "k",
            "k2",
            &[true],
            8,
        );
        // An unflagged parameter may be used any way at all.
        let free = "void k(double *q, double *p) { f(p); q[0] = 1; }";
        assert!(strided_kernel(free, "k", "k2", &[true, false], 8).is_some());
    }
}
