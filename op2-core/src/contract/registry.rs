//! The registry of backends: each backend crate, first- or third-party, registers a
//! [`BackendFactory`] with [`register_backend!`](crate::register_backend); the runtime finds a
//! backend by name here, and reads every registered backend's declared settings from the
//! environment.

use crate::contract::backend::Backend;
use crate::contract::config::{Config, nonempty};
use crate::contract::settings::Setting;
use crate::model::error::{Op2Error, Result};
use std::sync::OnceLock;

/// A registered backend: how to make one, and which Cargo feature of `op2` brings it in.
pub struct BackendFactory {
    /// The name users select (`OP2_BACKEND=name`).
    pub name: &'static str,
    /// The `op2` Cargo feature that links it (empty for third-party backends).
    pub feature: &'static str,
    /// One line for listings.
    pub description: &'static str,
    /// Makes the backend; errors with [`Op2Error::BackendUnavailable`] when it cannot run here.
    pub create: fn(&Config) -> Result<Box<dyn Backend>>,
    /// The backend's own settings: the runtime reads their environment variables, takes them from
    /// `builder().setting(name, value)`, checks them, and passes them in [`Config::settings`].
    pub settings: &'static [Setting],
}

inventory::collect!(BackendFactory);

/// Registers a backend from its crate: `op2_core::register_backend!(BackendFactory { .. });`.
/// The crate that defines the backend never names `inventory` itself.
#[macro_export]
macro_rules! register_backend {
    ($factory:expr) => {
        $crate::__private::inventory::submit! { $factory }
    };
}

/// Backends this build knows of whether or not it links them, with the Cargo feature of the
/// `op2` facade that brings each in: the facade declares its first-party list here (it is the
/// one place that list is written), so that asking for one that is not compiled in says which
/// feature to turn on.
static KNOWN: OnceLock<&'static [(&'static str, &'static str)]> = OnceLock::new();

/// Declares the backends this build knows of, as `(name, feature)` (the facade does; the first
/// declaration stays).
pub fn declare_known_backends(list: &'static [(&'static str, &'static str)]) {
    let _ = KNOWN.set(list);
}

/// The backends declared with [`declare_known_backends`] (empty when none were).
pub fn known_backends() -> &'static [(&'static str, &'static str)] {
    KNOWN.get().copied().unwrap_or(&[])
}

/// Every backend registered in this binary, sorted by name.
pub fn registered_backends() -> Vec<&'static BackendFactory> {
    let mut all: Vec<_> = inventory::iter::<BackendFactory>.into_iter().collect();
    all.sort_by_key(|f| f.name);
    all.dedup_by_key(|f| f.name);
    all
}

/// Finds a registered backend by name, with the errors a user needs when it is missing.
pub fn find_backend(name: &str) -> Result<&'static BackendFactory> {
    let all = registered_backends();
    if let Some(f) = all.iter().find(|f| f.name == name) {
        return Ok(f);
    }
    if let Some((_, feature)) = known_backends().iter().find(|(n, _)| *n == name) {
        return Err(Op2Error::BackendNotEnabled {
            name: name.into(),
            feature: (*feature).into(),
        });
    }
    Err(Op2Error::UnknownBackend {
        name: name.into(),
        available: all.iter().map(|f| f.name.to_string()).collect(),
    })
}

/// Every setting the backends registered in this binary declare, each once (backends that share
/// settings, such as `cuda` and `cuda-emulator`, declare the same ones).
pub fn known_settings() -> Vec<&'static Setting> {
    let mut all: Vec<&'static Setting> = registered_backends()
        .into_iter()
        .flat_map(|f| f.settings.iter())
        .collect();
    all.sort_by_key(|s| s.name);
    all.dedup_by_key(|s| s.name);
    all
}

/// The declaration of setting `name`, or a configuration error listing the known ones.
pub fn find_setting(name: &str) -> Result<&'static Setting> {
    let known = known_settings();
    known
        .iter()
        .find(|s| s.name == name)
        .copied()
        .ok_or_else(|| Op2Error::Config {
            key: name.into(),
            value: String::new(),
            reason: format!(
                "no backend built in declares this setting; known: {}",
                known.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            ),
        })
}

// Reading the environment needs every registered backend's declared settings, so these two
// constructors live beside the registry rather than in `config.rs` (which the registry's
// factories take, and so must not depend on the registry).
impl Config {
    /// Defaults overridden by the `OP2_*` and `OMP_NUM_THREADS` environment variables, and by
    /// the variables of every registered backend's own settings.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// Like [`Config::from_env`], reading variables through `get` (for tests).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut c = Config::from_shared_vars(&get)?;
        for setting in known_settings() {
            if let Some(v) = nonempty(&get, setting.env) {
                setting.check(&v).map_err(|e| match e {
                    Op2Error::Config { reason, .. } => Op2Error::Config {
                        key: setting.env.into(),
                        value: v.clone(),
                        reason,
                    },
                    other => other,
                })?;
                c.settings.set(setting.name, &v);
            }
        }
        Ok(c)
    }
}
