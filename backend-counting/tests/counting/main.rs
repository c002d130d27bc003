//! The example third-party backend's tests in one binary: the conformance suite run through it,
//! and its own settings.

mod conformance;
mod settings;
