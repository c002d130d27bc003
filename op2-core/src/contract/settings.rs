//! Settings a backend declares for itself (name, environment variable, kind of value, default,
//! meaning) in its [`crate::BackendFactory`], and their values in a runtime's configuration. The
//! runtime reads every registered backend's variables from the environment, takes overrides from
//! `builder().setting(name, value)`, checks both against the declaration, and hands them to the
//! backend in its [`crate::Config`]; first- and third-party backends alike.

use crate::model::error::{Op2Error, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// `1`/`0` (also `true`/`false`, `yes`/`no`, `on`/`off`).
    Flag,
    /// A whole number above zero.
    Positive,
    /// A whole number from zero (a device ordinal, say).
    Index,
    /// One of these words (compared without regard to case).
    OneOf(&'static [&'static str]),
    /// A file or directory.
    Path,
    /// Any text.
    Text,
}

/// A setting a backend declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The name `builder().setting(name, value)` takes, e.g. `cuda_strategy`.
    pub name: &'static str,
    /// The environment variable, e.g. `OP2_CUDA_STRATEGY`.
    pub env: &'static str,
    /// What values it takes.
    pub kind: SettingKind,
    /// The value when it is not set, as a user would write it (for listings; the backend applies
    /// it).
    pub default: &'static str,
    /// One line on what it does.
    pub doc: &'static str,
}

impl Setting {
    /// Checks a value against the setting's kind.
    pub fn check(&self, value: &str) -> Result<()> {
        let bad = |reason: String| Op2Error::Config {
            key: self.name.into(),
            value: value.into(),
            reason,
        };
        match self.kind {
            SettingKind::Flag => parse_flag(value)
                .map(drop)
                .ok_or_else(|| bad("expected 0 or 1".into())),
            SettingKind::Positive => match value.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(()),
                _ => Err(bad("expected a positive integer".into())),
            },
            SettingKind::Index => value
                .trim()
                .parse::<usize>()
                .map(drop)
                .map_err(|_| bad("expected a number (0, 1, ...)".into())),
            SettingKind::OneOf(words) => {
                if words.iter().any(|w| w.eq_ignore_ascii_case(value.trim())) {
                    Ok(())
                } else {
                    Err(bad(format!("expected one of {}", words.join(", "))))
                }
            }
            SettingKind::Path | SettingKind::Text => Ok(()),
        }
    }
}

/// Reads a flag the way [`SettingKind::Flag`] accepts it.
pub fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The values of backend settings given by the environment or the builder, by setting name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingValues(BTreeMap<String, String>);

impl SettingValues {
    /// Sets a value (unchecked; [`crate::RuntimeBuilder`] checks it against the declaration).
    pub fn set(&mut self, name: &str, value: &str) {
        self.0.insert(name.into(), value.trim().into());
    }

    /// The value as given, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Every value given, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A flag's value, if given (an error when it does not read as one).
    pub fn flag(&self, name: &str) -> Result<Option<bool>> {
        self.typed(name, parse_flag, "expected 0 or 1")
    }

    /// A whole number's value, if given.
    pub fn number(&self, name: &str) -> Result<Option<usize>> {
        self.typed(name, |v| v.trim().parse().ok(), "expected a number")
    }

    /// A path's value, if given.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }

    fn typed<T>(
        &self,
        name: &str,
        parse: impl Fn(&str) -> Option<T>,
        expected: &str,
    ) -> Result<Option<T>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => parse(v).map(Some).ok_or_else(|| Op2Error::Config {
                key: name.into(),
                value: v.into(),
                reason: expected.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_check_their_values() {
        let s = |kind| Setting {
            name: "x",
            env: "OP2_X",
            kind,
            default: "",
            doc: "",
        };
        assert!(s(SettingKind::Flag).check("yes").is_ok());
        assert!(s(SettingKind::Flag).check("2").is_err());
        assert!(s(SettingKind::Positive).check("0").is_err());
        assert!(s(SettingKind::Index).check("0").is_ok());
        assert!(s(SettingKind::OneOf(&["a", "b"])).check(" B ").is_ok());
        assert!(s(SettingKind::OneOf(&["a", "b"])).check("c").is_err());
        let mut v = SettingValues::default();
        v.set("n", " 3 ");
        v.set("f", "off");
        assert_eq!(v.number("n").unwrap(), Some(3));
        assert_eq!(v.flag("f").unwrap(), Some(false));
        assert!(v.flag("n").is_err());
        assert_eq!(v.number("missing").unwrap(), None);
    }
}
