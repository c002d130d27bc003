//! The contract a backend implements and the runtime relies on: the `Backend`, `PreparedLoop`
//! and `Codegen` traits, what plans are built from, the configuration and backend settings, and
//! the registry through which backend crates plug in. It builds on the model and never imports
//! the runtime (a unit test checks it).

pub mod backend;
pub mod config;
pub mod plan;
pub mod registry;
pub mod rows;
pub mod settings;
