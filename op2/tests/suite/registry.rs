//! The backend registry as a user sees it through the facade.

use op2::{Op2Error, Runtime};

#[test]
fn facade_lists_the_enabled_backends() {
    let names: Vec<&str> = op2::backends().iter().map(|b| b.name).collect();
    assert!(names.contains(&"seq"), "{names:?}");
    for b in op2::backends() {
        assert!(!b.description.is_empty());
    }
}

#[test]
fn core_builder_sees_backends_linked_by_the_facade() {
    // Only core items are named here: the facade must still have kept the backend crates linked.
    let rt = Runtime::builder().backend("seq").build().unwrap();
    assert_eq!(rt.backend_name(), "seq");
}

#[test]
fn default_backend_is_seq() {
    let rt = op2::builder().build().unwrap();
    assert_eq!(
        rt.config().backend,
        std::env::var("OP2_BACKEND").unwrap_or_else(|_| "seq".into())
    );
}

#[test]
fn unknown_backend_error_message_lists_choices() {
    let err = op2::builder().backend("nope").build().err().unwrap();
    assert!(matches!(err, Op2Error::UnknownBackend { .. }));
    assert!(err.to_string().contains("seq"), "{err}");
}

/// Items that moved between op2-core's layers (or to op2-device) are still found at the paths
/// programs and third-party backends used before.
#[test]
fn moved_items_keep_their_old_paths() {
    use op2::device::{DataState, DeviceData, DeviceMemory, Transitions};
    let _: Option<&op2::backend::BackendFactory> = op2::backend::find_backend("seq").ok();
    assert!(op2::settings::find_setting("no such setting").is_err());
    assert!(op2::kernel::is_c_identifier("res_calc"));
    assert!(!op2::kernel::is_c_identifier("2d"));
    let (transfers, after) = DataState::Host.before_loop(op2::LoopUse {
        reads: true,
        writes: false,
        overwrites_all: false,
    });
    assert!(transfers.to_device && after == DataState::Both);
    // A device backend's table over its memory, named at the old paths (compiled, not run).
    fn _a_table<M: DeviceMemory>(_: &DeviceData<M>) {}
    let _ = op2::carrier_bytes;
}
