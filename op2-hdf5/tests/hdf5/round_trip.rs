//! Property tests: any values of every element type, any dim and row count, written and read
//! back bit for bit, whole and in slices (the rows a rank reads).

use op2_core::Scalar;
use op2_hdf5::H5File;
use proptest::prelude::*;

/// Writes `values` as a dat of `dim`, reads it whole and rows `a..b`; generic over the element
/// type with no HDF5 bound, as user code would be.
fn round_trip<T: Scalar>(values: &[T], dim: usize, a: usize, b: usize) -> (Vec<T>, Vec<T>) {
    let dir = tempfile::tempdir().unwrap();
    let f = H5File::create(dir.path().join("p.h5")).unwrap();
    f.write_dat_values("d", dim, values).unwrap();
    let rows = values.len() / dim;
    let whole = f.values::<T>("d", rows, dim).unwrap();
    let (a, b) = (a.min(rows), b.min(rows));
    let (a, b) = (a.min(b), a.max(b));
    let part = f.rows::<T>("d", a..b, dim).unwrap();
    assert_eq!(
        bytemuck_bytes(&part),
        bytemuck_bytes(&values[a * dim..b * dim])
    );
    (whole, part)
}

fn bytemuck_bytes<T: Scalar>(v: &[T]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| bytemuck::bytes_of(x).to_vec())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn doubles_round_trip_bit_for_bit(
        rows in 0usize..40, dim in 1usize..5, seed in any::<u64>(), a in 0usize..40, b in 0usize..40,
    ) {
        // Any bits, NaNs and infinities included.
        let values: Vec<f64> = (0..rows * dim)
            .map(|i| f64::from_bits(seed.rotate_left(i as u32 % 64) ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        let (whole, _) = round_trip(&values, dim, a, b);
        prop_assert_eq!(bytemuck_bytes(&whole), bytemuck_bytes(&values));
    }

    #[test]
    fn every_integer_type_round_trips(values in proptest::collection::vec(any::<i64>(), 0..60), dim in 1usize..4) {
        let n = values.len() / dim * dim;
        let v = &values[..n];
        prop_assert_eq!(round_trip(v, dim, 0, 3).0, v.to_vec());
        let u: Vec<u64> = v.iter().map(|&x| x as u64).collect();
        prop_assert_eq!(round_trip(&u, dim, 1, 2).0, u.clone());
        let i: Vec<i32> = v.iter().map(|&x| x as i32).collect();
        prop_assert_eq!(round_trip(&i, dim, 2, 0).0, i.clone());
        let w: Vec<u32> = v.iter().map(|&x| x as u32).collect();
        prop_assert_eq!(round_trip(&w, dim, 0, 9).0, w.clone());
        let s: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        prop_assert_eq!(bytemuck_bytes(&round_trip(&s, dim, 0, 1).0), bytemuck_bytes(&s));
    }

    #[test]
    fn complex_values_round_trip_bit_for_bit(
        values in proptest::collection::vec((any::<f64>(), any::<f64>()), 0..60), dim in 1usize..4,
    ) {
        use op2_core::num_complex::{Complex32, Complex64};
        let n = values.len() / dim * dim;
        let wide: Vec<Complex64> = values[..n].iter().map(|&(r, i)| Complex64::new(r, i)).collect();
        prop_assert_eq!(bytemuck_bytes(&round_trip(&wide, dim, 1, 3).0), bytemuck_bytes(&wide));
        let narrow: Vec<Complex32> =
            values[..n].iter().map(|&(r, i)| Complex32::new(r as f32, i as f32)).collect();
        prop_assert_eq!(bytemuck_bytes(&round_trip(&narrow, dim, 0, 2).0), bytemuck_bytes(&narrow));
    }
}
