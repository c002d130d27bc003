//! Bad input, all in one place: every misuse of the facade gives its own typed error (never a
//! panic, a hang or silent damage). `errors` covers declarations and loop args; `misuse` the
//! mistakes a new user makes (names, kernel parameters, access modes, compile errors, settings,
//! data in use). Regressions found by probing live in `hardening`.

mod errors;
mod misuse;
