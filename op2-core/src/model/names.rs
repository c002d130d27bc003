//! The names users may give kernels and Consts. Generated code keeps every identifier of its own
//! under the prefix [`RESERVED_PREFIX`] and reaches the user's kernel and Consts through `op2_`
//! symbols, so a user's name can be anything C accepts except that prefix, C's keywords and the
//! identifiers C reserves for its implementation.

use crate::model::error::{Op2Error, Result};

/// Whether `s` is a C identifier.
pub fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The prefix of every identifier generated code introduces; no user name may start with it (in
/// any letter case).
pub const RESERVED_PREFIX: &str = "op2_";

/// C99 and C11 keywords, the preprocessor's `defined`, and the type and constant names of
/// `<stdint.h>`, `<stddef.h>` and `<stdbool.h>` that kernels use (a Const of such a name would hide
/// the type inside the kernel).
const RESERVED_WORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "defined",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "intptr_t",
    "uintptr_t",
    "size_t",
    "ptrdiff_t",
    "bool",
    "true",
    "false",
    "NULL",
];

/// Why `name` is reserved, if it is.
fn reserved_because(name: &str) -> Option<String> {
    if name
        .get(..RESERVED_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(RESERVED_PREFIX))
    {
        return Some(format!(
            "the prefix `{RESERVED_PREFIX}` (in any case) belongs to generated code"
        ));
    }
    if RESERVED_WORDS.contains(&name) {
        return Some("it is a C keyword or a standard type or constant name".into());
    }
    let b = name.as_bytes();
    if b.len() >= 2 && b[0] == b'_' && (b[1] == b'_' || b[1].is_ascii_uppercase()) {
        return Some("C reserves names starting with `__` or `_` and a capital letter".into());
    }
    None
}

/// Checks the name of a kernel or Const (`what`): a C identifier that is not reserved.
pub fn check_user_name(what: &'static str, name: &str) -> Result<()> {
    if !is_c_identifier(name) {
        return Err(Op2Error::InvalidIdentifier {
            what,
            name: name.into(),
        });
    }
    match reserved_because(name) {
        Some(reason) => Err(Op2Error::ReservedIdentifier {
            what,
            name: name.into(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Checks the identifiers of a kernel's source: none may use the generated code's prefix (a
/// helper function or macro of that name could replace part of the generated stub).
pub fn check_source_identifiers<'a>(
    kernel: &str,
    identifiers: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    for id in identifiers {
        if id
            .get(..RESERVED_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(RESERVED_PREFIX))
        {
            return Err(Op2Error::ReservedIdentifier {
                what: "kernel source identifier",
                name: id.into(),
                reason: format!(
                    "kernel `{kernel}` uses it, but the prefix `{RESERVED_PREFIX}` belongs to generated code"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass_and_reserved_ones_do_not() {
        for ok in [
            "gam", "y0", "free", "min", "start", "n", "kernel", "new", "_x", "op2",
        ] {
            assert!(check_user_name("const", ok).is_ok(), "{ok}");
        }
        for bad in [
            "op2_x",
            "OP2_ROUND_UP",
            "Op2_y",
            "int",
            "double",
            "__x",
            "_Bool",
            "size_t",
        ] {
            assert!(
                matches!(
                    check_user_name("const", bad),
                    Err(Op2Error::ReservedIdentifier { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            check_user_name("kernel", "1x"),
            Err(Op2Error::InvalidIdentifier { .. })
        ));
        assert!(check_source_identifiers("k", ["x", "op2x"]).is_ok());
        assert!(check_source_identifiers("k", ["x", "op2_y"]).is_err());
    }
}
