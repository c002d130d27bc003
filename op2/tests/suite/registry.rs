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
