//! Locality orders on random meshes are permutations that keep the mesh the same mesh; on a
//! scrambled chain reverse Cuthill-McKee finds the chain again; bad input is a typed error.

use op2_renumber::{MapRef, RenumberError, locality_order, permute_rows, renumber_map};
use proptest::prelude::*;

fn is_permutation(p: &[u32]) -> bool {
    let mut seen = vec![false; p.len()];
    p.iter().all(|&v| {
        let fresh = (v as usize) < seen.len() && !seen[v as usize];
        if fresh {
            seen[v as usize] = true;
        }
        fresh
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn orders_are_permutations_and_relabel_consistently(
        nodes in 1usize..60,
        edges in proptest::collection::vec((0u32..1000, 0u32..1000), 0..120),
        cells in proptest::collection::vec((0u32..1000, 0u32..1000, 0u32..1000), 0..50),
        first in 0usize..3,
    ) {
        let edge: Vec<i32> = edges.iter().flat_map(|&(a, b)| [(a as usize % nodes) as i32, (b as usize % nodes) as i32]).collect();
        let cell: Vec<i32> = cells.iter().flat_map(|&(a, b, c)| [a, b, c].map(|v| (v as usize % nodes) as i32)).collect();
        let sizes = [nodes, edges.len(), cells.len()];
        let maps = [
            MapRef { from: 1, to: 0, arity: 2, values: &edge },
            MapRef { from: 2, to: 0, arity: 3, values: &cell },
        ];
        let order = locality_order(&sizes, &maps, first).unwrap();
        for (s, o) in order.iter().enumerate() {
            prop_assert_eq!(o.len(), sizes[s]);
            prop_assert!(is_permutation(o), "set {}: {:?}", s, o);
        }
        // New row order[1][e] holds old row e's targets under their new numbers.
        let new_edge = renumber_map(&edge, 2, &order[1], &order[0]).unwrap();
        for (e, row) in edge.chunks(2).enumerate() {
            let p = order[1][e] as usize;
            prop_assert_eq!(
                &new_edge[2 * p..2 * p + 2],
                &[order[0][row[0] as usize] as i32, order[0][row[1] as usize] as i32][..]
            );
        }
        let x: Vec<f64> = (0..nodes).map(|i| i as f64).collect();
        let moved = permute_rows(&x, 1, &order[0]).unwrap();
        for (old, &p) in order[0].iter().enumerate() {
            prop_assert_eq!(moved[p as usize], x[old]);
        }
    }
}

#[test]
fn a_scrambled_chain_comes_back_as_a_chain() {
    // Nodes 0..n in a chain, numbered by a fixed scramble, edges listed in scrambled order.
    let n = 200usize;
    let scramble = |i: usize| ((i * 7919) % n) as i32;
    let mut edge = Vec::new();
    for i in 0..n - 1 {
        let j = (i * 37) % (n - 1);
        edge.extend([scramble(j), scramble(j + 1)]);
    }
    let maps = [MapRef {
        from: 1,
        to: 0,
        arity: 2,
        values: &edge,
    }];
    let spread = |e: &[i32]| {
        e.chunks(2)
            .map(|p| (p[0] - p[1]).unsigned_abs())
            .max()
            .unwrap()
    };
    assert!(spread(&edge) > 50);
    let order = locality_order(&[n, n - 1], &maps, 0).unwrap();
    let renumbered = renumber_map(&edge, 2, &order[1], &order[0]).unwrap();
    assert_eq!(spread(&renumbered), 1, "{renumbered:?}");
    // Edges follow their nodes: consecutive edges share a node.
    for pair in renumbered.chunks(2).collect::<Vec<_>>().windows(2) {
        assert!(pair[0].iter().any(|v| pair[1].contains(v)), "{pair:?}");
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let values = [0, 1, 1, 2];
    let map = |from, to, arity, values| MapRef {
        from,
        to,
        arity,
        values,
    };
    assert!(matches!(
        locality_order(&[3], &[map(1, 0, 2, &values)], 0),
        Err(RenumberError::NoSuchSet { .. })
    ));
    assert!(matches!(
        locality_order(&[3, 3], &[map(1, 0, 2, &values)], 0),
        Err(RenumberError::Length { .. })
    ));
    assert!(matches!(
        locality_order(&[2, 2], &[map(1, 0, 2, &values)], 0),
        Err(RenumberError::OutOfRange { value: 2, .. })
    ));
    assert!(matches!(
        locality_order(&[3, 2], &[map(1, 0, 2, &values)], 5),
        Err(RenumberError::NoFirstSet { .. })
    ));
    assert!(matches!(
        permute_rows(&[1.0, 2.0, 3.0], 2, &[0, 1]),
        Err(RenumberError::Rows { .. })
    ));
    assert!(matches!(
        permute_rows(&[1.0, 2.0], 1, &[1, 1]),
        Err(RenumberError::NotAPermutation { .. })
    ));
    assert!(matches!(
        permute_rows(&[1.0, 2.0], 1, &[0, 2]),
        Err(RenumberError::NotAPermutation { .. })
    ));
    assert!(matches!(
        renumber_map(&[0, 5], 1, &[0, 1], &[1, 0]),
        Err(RenumberError::OutOfRange { value: 5, .. })
    ));
    assert!(matches!(
        renumber_map(&[0, -1], 1, &[0, 1], &[1, 0]),
        Err(RenumberError::OutOfRange { value: -1, .. })
    ));
    // Empty sets are fine.
    assert_eq!(
        locality_order(&[0, 0], &[map(1, 0, 2, &[])], 1).unwrap(),
        vec![Vec::<u32>::new(), vec![]]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn rows_permuted_in_place_land_where_the_positions_say(
        keys in proptest::collection::vec(any::<u32>(), 0..200),
        dim in 1usize..4,
    ) {
        // A random permutation: each row's position is its key's rank.
        let mut by_key: Vec<usize> = (0..keys.len()).collect();
        by_key.sort_by_key(|&i| (keys[i], i));
        let mut position = vec![0u32; keys.len()];
        for (rank, &i) in by_key.iter().enumerate() {
            position[i] = rank as u32;
        }
        let values: Vec<u64> = (0..keys.len() * dim).map(|v| v as u64 * 7 + 1).collect();
        // Expected, computed independently: new row p is old row e where position[e] == p.
        let mut expected = vec![0u64; values.len()];
        for (e, &p) in position.iter().enumerate() {
            for j in 0..dim {
                expected[p as usize * dim + j] = values[e * dim + j];
            }
        }
        let mut moved = values.clone();
        op2_renumber::permute_rows_in_place(&mut moved, dim, &position).unwrap();
        prop_assert_eq!(&moved, &expected);
        prop_assert_eq!(permute_rows(&values, dim, &position).unwrap(), expected);
    }
}

#[test]
fn a_map_renumbered_in_place_is_unchanged_by_an_error() {
    let mut values = vec![0, 1, 1, 2];
    let before = values.clone();
    let e = op2_renumber::renumber_map_in_place(&mut values, 2, &[1, 0], &[2, 0]);
    assert!(
        matches!(e, Err(RenumberError::OutOfRange { value: 2, .. })),
        "{e:?}"
    );
    assert_eq!(values, before);
    let e = op2_renumber::renumber_map_in_place(&mut values, 2, &[0, 0], &[2, 0, 1]);
    assert!(
        matches!(e, Err(RenumberError::NotAPermutation { .. })),
        "{e:?}"
    );
    assert_eq!(values, before);
    op2_renumber::renumber_map_in_place(&mut values, 2, &[1, 0], &[2, 0, 1]).unwrap();
    assert_eq!(values, [0, 1, 2, 0]);
}
