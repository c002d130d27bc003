//! The CUDA backend's own settings, declared for the runtime (names, variables, defaults, meaning)
//! and read back from a runtime's configuration.

use crate::nvrtc::parse_arch;
use crate::{DEFAULT_STRATEGY, Strategy};
use op2_codegen::DeviceOptions;
use op2_core::{Config, Op2Error, Result, Setting, SettingKind};
use std::path::PathBuf;

/// The settings `cuda` and `cuda-emulator` declare.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "cuda_device",
        env: "OP2_CUDA_DEVICE",
        kind: SettingKind::Index,
        default: "0",
        doc: "CUDA device ordinal",
    },
    Setting {
        name: "cuda_strategy",
        env: "OP2_CUDA_STRATEGY",
        kind: SettingKind::OneOf(&["colour", "color", "atomics", "atomic", "staged-atomics"]),
        default: "atomics",
        doc: "how indirect increments stay race-free: plan colours with shared-memory staging, atomicAdd, or staging with atomicAdd into shared and then global memory",
    },
    Setting {
        name: "cuda_arch",
        env: "OP2_CUDA_ARCH",
        kind: SettingKind::Text,
        default: "the device's",
        doc: "the architecture NVRTC compiles for (compute_90, sm_80, 9.0, ...)",
    },
    Setting {
        name: "nvrtc",
        env: "OP2_NVRTC",
        kind: SettingKind::Path,
        default: "the loader's path, then the CUDA toolkit",
        doc: "the NVRTC library, or the directory holding it",
    },
    Setting {
        name: "cuda_stage_rows",
        env: "OP2_CUDA_STAGE_ROWS",
        kind: SettingKind::Flag,
        default: "1",
        doc: "copy small direct rows through shared memory in coalesced sweeps (0: each thread reads its own row)",
    },
    Setting {
        name: "cuda_sync",
        env: "OP2_CUDA_SYNC",
        kind: SettingKind::Flag,
        default: "0",
        doc: "wait for every loop to finish (per-loop device times)",
    },
];

/// The CUDA backend's settings as a runtime's configuration gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaSettings {
    /// Device ordinal.
    pub device: usize,
    /// Strategy for indirect increments.
    pub strategy: Strategy,
    /// With [`Strategy::Colour`]: increments added atomically into the staged copy and from it
    /// to global memory, every block in one launch (`staged-atomics`).
    pub block_atomics: bool,
    /// Compute capability NVRTC compiles for (e.g. 90), when set.
    pub arch: Option<i32>,
    /// Where NVRTC is, when set.
    pub nvrtc: Option<PathBuf>,
    /// Wait for each loop.
    pub sync: bool,
    /// Stage small direct rows through shared memory ([`op2_codegen::DeviceOptions::stage_direct_rows`]).
    pub stage_rows: bool,
}

impl CudaSettings {
    /// Reads (and checks) the settings from `config`.
    pub fn from_config(config: &Config) -> Result<Self> {
        let s = &config.settings;
        // `staged-atomics` plans and stages as `colour` does, with atomics instead of colours.
        let (strategy, block_atomics) = match s.get("cuda_strategy").map(str::to_ascii_lowercase) {
            None => (DEFAULT_STRATEGY, false),
            Some(v) if v == "colour" || v == "color" => (Strategy::Colour, false),
            Some(v) if v == "atomics" || v == "atomic" => (Strategy::Atomics, false),
            Some(v) if v == "staged-atomics" => (Strategy::Colour, true),
            Some(v) => {
                return Err(Op2Error::Config {
                    key: "cuda_strategy".into(),
                    value: v,
                    reason: "expected `colour`, `atomics` or `staged-atomics`".into(),
                });
            }
        };
        let arch = match s.get("cuda_arch") {
            None => None,
            Some(a) => Some(parse_arch(a).ok_or_else(|| Op2Error::Config {
                key: "cuda_arch".into(),
                value: a.into(),
                reason: "expected an architecture such as compute_90, sm_80 or 9.0".into(),
            })?),
        };
        Ok(CudaSettings {
            device: s.number("cuda_device")?.unwrap_or(0),
            strategy,
            block_atomics,
            arch,
            nvrtc: s.path("nvrtc"),
            sync: s.flag("cuda_sync")?.unwrap_or(false),
            stage_rows: s.flag("cuda_stage_rows")?.unwrap_or(true),
        })
    }

    /// How this backend emits its units: tree reductions, staged direct rows unless turned off,
    /// and atomics as the strategy says.
    pub fn device_options(&self) -> DeviceOptions {
        DeviceOptions {
            tree_reductions: true,
            stage_direct_rows: self.stage_rows,
            block_atomics: self.block_atomics,
            // Strategies that add in no fixed order combine reductions that way too; `colour`
            // keeps its sums in one order with a final kernel.
            atomic_reductions: self.strategy == Strategy::Atomics || self.block_atomics,
            ..DeviceOptions::default()
        }
    }
}
