//! A binary that names only core items through the facade still finds the facade's backends.

#[test]
fn core_only_binary_finds_seq() {
    let names: Vec<&str> = op2::registered_backends().iter().map(|b| b.name).collect();
    assert!(names.contains(&"seq"), "backends seen: {names:?}");
}
