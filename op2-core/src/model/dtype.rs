//! Element types a Dat, Global or Const may hold, and the untyped, aligned host buffer behind them.

use std::fmt;

/// The element type of a Dat, Global or Const.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `double`
    F64,
    /// `float`
    F32,
    /// `int32_t`
    I32,
    /// `uint32_t`
    U32,
    /// `int64_t`
    I64,
    /// `uint64_t`
    U64,
    /// `float _Complex` (NumPy's `complex64`: two `float`s, real part first)
    C64,
    /// `double _Complex` (NumPy's `complex128`: two `double`s, real part first)
    C128,
}

impl DType {
    /// All element types, in declaration order.
    pub const ALL: [DType; 8] = [
        DType::F64,
        DType::F32,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::C64,
        DType::C128,
    ];

    /// The C99 type name the generated code uses.
    pub fn c_name(self) -> &'static str {
        match self {
            DType::F64 => "double",
            DType::F32 => "float",
            DType::I32 => "int32_t",
            DType::U32 => "uint32_t",
            DType::I64 => "int64_t",
            DType::U64 => "uint64_t",
            DType::C64 => "float _Complex",
            DType::C128 => "double _Complex",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::C128 => 16,
            DType::F64 | DType::I64 | DType::U64 | DType::C64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
        }
    }

    /// Whether this is a real floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F64 | DType::F32)
    }

    /// Whether this is a complex type: values without an order (no MIN or MAX reductions), which
    /// only the host backends' C compiles.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// The real type of one part of a complex type (the type itself for the others).
    pub fn real_part(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The element type a C type name denotes on LP64 targets, if it is one we know
    /// (`double`, `unsigned int`, `int64_t`, `long`, ...). Used to check kernel parameters.
    pub fn from_c_name(name: &str) -> Option<DType> {
        let words: Vec<&str> = name
            .split_whitespace()
            .filter(|w| {
                !matches!(
                    *w,
                    "const" | "volatile" | "restrict" | "__restrict" | "__restrict__" | "signed"
                )
            })
            .collect();
        let unsigned = words.contains(&"unsigned");
        // `complex` is <complex.h>'s spelling of `_Complex`, before or after the real type.
        let complex = words.iter().any(|w| matches!(*w, "complex" | "_Complex"));
        let core: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| !matches!(*w, "unsigned" | "complex" | "_Complex"))
            .collect();
        if complex {
            return match (unsigned, core.as_slice()) {
                (false, ["double"]) => Some(DType::C128),
                (false, ["float"]) => Some(DType::C64),
                _ => None,
            };
        }
        Some(match (unsigned, core.as_slice()) {
            (false, ["double"]) => DType::F64,
            (false, ["float"]) => DType::F32,
            (false, ["int"]) | (false, ["int32_t"]) => DType::I32,
            (true, []) | (true, ["int"]) | (false, ["uint32_t"]) => DType::U32,
            (false, ["long"])
            | (false, ["long", "int"])
            | (false, ["long", "long"])
            | (false, ["long", "long", "int"])
            | (false, ["int64_t"]) => DType::I64,
            (true, ["long"])
            | (true, ["long", "int"])
            | (true, ["long", "long"])
            | (true, ["long", "long", "int"])
            | (false, ["uint64_t"]) => DType::U64,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::C64 => "c64",
            DType::C128 => "c128",
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be stored in a Dat, Global or Const: the real types and
/// [`num_complex::Complex`] of `f32` or `f64`.
pub trait Scalar:
    bytemuck::Pod + PartialEq + fmt::Debug + Send + Sync + sealed::Sealed + 'static
{
    /// The matching [`DType`].
    const DTYPE: DType;
    /// The largest value (identity of MIN). Complex values have no order: theirs is the real
    /// part's largest value with a zero imaginary part, and MIN and MAX on them are refused.
    const MAX_VALUE: Self;
    /// The smallest value (identity of MAX); for complex types see [`Scalar::MAX_VALUE`].
    const MIN_VALUE: Self;
    /// Zero (identity of INC).
    const ZERO: Self;
}

macro_rules! scalar {
    ($t:ty, $d:ident, $min:expr, $max:expr) => {
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            const MAX_VALUE: Self = $max;
            const MIN_VALUE: Self = $min;
            const ZERO: Self = 0 as $t;
        }
    };
}
scalar!(f64, F64, f64::NEG_INFINITY, f64::INFINITY);
scalar!(f32, F32, f32::NEG_INFINITY, f32::INFINITY);
scalar!(i32, I32, i32::MIN, i32::MAX);
scalar!(u32, U32, u32::MIN, u32::MAX);
scalar!(i64, I64, i64::MIN, i64::MAX);
scalar!(u64, U64, u64::MIN, u64::MAX);

macro_rules! complex_scalar {
    ($t:ty, $d:ident) => {
        impl sealed::Sealed for num_complex::Complex<$t> {}
        impl Scalar for num_complex::Complex<$t> {
            const DTYPE: DType = DType::$d;
            const MAX_VALUE: Self = num_complex::Complex::new(<$t>::INFINITY, 0.0);
            const MIN_VALUE: Self = num_complex::Complex::new(<$t>::NEG_INFINITY, 0.0);
            const ZERO: Self = num_complex::Complex::new(0.0, 0.0);
        }
    };
}
complex_scalar!(f32, C64);
complex_scalar!(f64, C128);

/// Host storage for any [`DType`]: a `Vec` of the element type itself, so a program's own `Vec`
/// becomes a Dat's storage without a copy ([`HostBuffer::from_vec`]) and can be handed back the
/// same way ([`HostBuffer::into_vec`]).
#[derive(Debug, Clone)]
pub struct HostBuffer {
    storage: Storage,
    /// The element count while the storage is given back ([`HostBuffer::release`]).
    released: Option<usize>,
}

/// One typed `Vec` per [`DType`].
#[derive(Debug, Clone)]
enum Storage {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    C64(Vec<num_complex::Complex32>),
    C128(Vec<num_complex::Complex64>),
}

/// Runs `$body` with `$v` bound to the storage's typed `Vec` (by reference, as `$e` gives it).
macro_rules! with_storage {
    ($e:expr, $v:ident => $body:expr) => {
        match $e {
            Storage::F64($v) => $body,
            Storage::F32($v) => $body,
            Storage::I32($v) => $body,
            Storage::U32($v) => $body,
            Storage::I64($v) => $body,
            Storage::U64($v) => $body,
            Storage::C64($v) => $body,
            Storage::C128($v) => $body,
        }
    };
}

impl HostBuffer {
    /// A buffer holding a copy of `values`.
    pub fn from_slice<T: Scalar>(values: &[T]) -> Self {
        Self::from_vec(values.to_vec())
    }

    /// A buffer that takes `values` over: no copy, no allocation of its size (spare capacity is
    /// given back).
    pub fn from_vec<T: Scalar>(mut values: Vec<T>) -> Self {
        // Spare capacity (a Vec grown by pushing) would be held for the Dat's whole life; giving
        // it back moves nothing for large buffers (the allocator remaps them).
        values.shrink_to_fit();
        // `T` is one of the eight sealed scalars: exactly one downcast matches, and it moves the
        // `Vec`'s header only.
        let any: Box<dyn std::any::Any> = Box::new(values);
        let storage = match T::DTYPE {
            DType::F64 => Storage::F64(*any.downcast().expect("T is f64")),
            DType::F32 => Storage::F32(*any.downcast().expect("T is f32")),
            DType::I32 => Storage::I32(*any.downcast().expect("T is i32")),
            DType::U32 => Storage::U32(*any.downcast().expect("T is u32")),
            DType::I64 => Storage::I64(*any.downcast().expect("T is i64")),
            DType::U64 => Storage::U64(*any.downcast().expect("T is u64")),
            DType::C64 => Storage::C64(*any.downcast().expect("T is Complex32")),
            DType::C128 => Storage::C128(*any.downcast().expect("T is Complex64")),
        };
        HostBuffer {
            storage,
            released: None,
        }
    }

    /// A zero-filled buffer of `len` elements, allocated once (zeroed pages from the system, not
    /// written element by element).
    pub fn zeroed(dtype: DType, len: usize) -> Self {
        let storage = match dtype {
            DType::F64 => Storage::F64(vec![0.0; len]),
            DType::F32 => Storage::F32(vec![0.0; len]),
            DType::I32 => Storage::I32(vec![0; len]),
            DType::U32 => Storage::U32(vec![0; len]),
            DType::I64 => Storage::I64(vec![0; len]),
            DType::U64 => Storage::U64(vec![0; len]),
            DType::C64 => Storage::C64(vec![num_complex::Complex32::new(0.0, 0.0); len]),
            DType::C128 => Storage::C128(vec![num_complex::Complex64::new(0.0, 0.0); len]),
        };
        HostBuffer {
            storage,
            released: None,
        }
    }

    /// Gives the storage back, keeping the dtype and the element count: the buffer then holds no
    /// bytes until [`HostBuffer::restore`]. For a host copy nobody needs while a device holds the
    /// only valid data.
    pub(crate) fn release(&mut self) {
        if self.released.is_none() {
            let len = self.len();
            *self = HostBuffer::zeroed(self.dtype(), 0);
            self.released = Some(len);
        }
    }

    /// A buffer of `len` elements of `dtype` whose storage is not allocated yet (a temporary
    /// Dat before its first loop runs).
    pub(crate) fn unallocated(dtype: DType, len: usize) -> Self {
        let mut b = HostBuffer::zeroed(dtype, 0);
        b.released = Some(len);
        b
    }

    /// The element count a released buffer had (its length otherwise): the length it has when
    /// allocated.
    pub fn released_len(&self) -> usize {
        self.released.unwrap_or_else(|| self.len())
    }

    /// Sets every element to zero.
    pub(crate) fn fill_zero(&mut self) {
        self.as_bytes_mut().fill(0);
    }

    /// Whether the storage was given back.
    pub fn is_released(&self) -> bool {
        self.released.is_some()
    }

    /// Allocates the storage again (zero-filled, the element count it had) after a
    /// [`HostBuffer::release`]; nothing otherwise.
    pub(crate) fn restore(&mut self) {
        if let Some(len) = self.released {
            *self = HostBuffer::zeroed(self.dtype(), len);
        }
    }

    /// The elements as a `Vec<T>`, without a copy; `T` must match the buffer's dtype.
    pub fn into_vec<T: Scalar>(self) -> Vec<T> {
        assert_eq!(T::DTYPE, self.dtype(), "HostBuffer taken as the wrong type");
        let any: Box<dyn std::any::Any> = with_storage!(self.storage, v => Box::new(v));
        *any.downcast().expect("T matches the dtype")
    }

    /// Number of elements held (0 while released).
    pub fn len(&self) -> usize {
        with_storage!(&self.storage, v => v.len())
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this buffer holds (its elements; a `Vec`'s spare capacity is counted too, as it is
    /// memory held).
    pub fn held_bytes(&self) -> usize {
        with_storage!(&self.storage, v => v.capacity()) * self.dtype().size()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self.storage {
            Storage::F64(_) => DType::F64,
            Storage::F32(_) => DType::F32,
            Storage::I32(_) => DType::I32,
            Storage::U32(_) => DType::U32,
            Storage::I64(_) => DType::I64,
            Storage::U64(_) => DType::U64,
            Storage::C64(_) => DType::C64,
            Storage::C128(_) => DType::C128,
        }
    }

    /// The elements, viewed as `T`; `T` must match the buffer's dtype.
    pub fn as_slice<T: Scalar>(&self) -> &[T] {
        assert_eq!(
            T::DTYPE,
            self.dtype(),
            "HostBuffer viewed as the wrong type"
        );
        bytemuck::cast_slice(self.as_bytes())
    }

    /// The elements, viewed mutably as `T`; `T` must match the buffer's dtype.
    pub fn as_mut_slice<T: Scalar>(&mut self) -> &mut [T] {
        assert_eq!(
            T::DTYPE,
            self.dtype(),
            "HostBuffer viewed as the wrong type"
        );
        bytemuck::cast_slice_mut(self.as_bytes_mut())
    }

    /// The raw bytes of the elements.
    pub fn as_bytes(&self) -> &[u8] {
        with_storage!(&self.storage, v => bytemuck::cast_slice(v.as_slice()))
    }

    /// The raw bytes of the elements, mutably.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        with_storage!(&mut self.storage, v => bytemuck::cast_slice_mut(v.as_mut_slice()))
    }

    /// Pointer to the first element, for generated code that only reads.
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        self.as_bytes().as_ptr().cast()
    }

    /// Pointer to the first element, for generated code.
    pub fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        self.as_bytes_mut().as_mut_ptr().cast()
    }
}

/// Values a declaration takes: a `Vec<T>` is taken over as it is (no copy); borrowed values
/// (`&[T]`, `&Vec<T>`, arrays) are copied once.
pub trait IntoValues<T: Scalar> {
    /// The values as a `Vec`, moved where they already are one.
    fn into_values(self) -> Vec<T>;
}

impl<T: Scalar> IntoValues<T> for Vec<T> {
    fn into_values(self) -> Vec<T> {
        self
    }
}

impl<T: Scalar> IntoValues<T> for Box<[T]> {
    fn into_values(self) -> Vec<T> {
        self.into_vec()
    }
}

impl<T: Scalar> IntoValues<T> for std::borrow::Cow<'_, [T]> {
    fn into_values(self) -> Vec<T> {
        self.into_owned()
    }
}

impl<T: Scalar, const N: usize> IntoValues<T> for [T; N] {
    fn into_values(self) -> Vec<T> {
        self.to_vec()
    }
}

/// Borrowed values, copied.
macro_rules! borrowed_values {
    ($($t:ty),*) => {$(
        impl<T: Scalar> IntoValues<T> for $t {
            fn into_values(self) -> Vec<T> {
                self.to_vec()
            }
        }
    )*};
}
borrowed_values!(&[T], &mut [T], &Vec<T>, &mut Vec<T>);

impl<T: Scalar, const N: usize> IntoValues<T> for &[T; N] {
    fn into_values(self) -> Vec<T> {
        self.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_c_name(d.c_name()), Some(d));
        }
        assert_eq!(
            DType::from_c_name("const unsigned long long"),
            Some(DType::U64)
        );
        assert_eq!(DType::from_c_name("unsigned"), Some(DType::U32));
        assert_eq!(DType::from_c_name("my_real_t"), None);
        for (name, d) in [
            ("complex double", DType::C128),
            ("double complex", DType::C128),
            ("const _Complex double", DType::C128),
            ("float _Complex", DType::C64),
        ] {
            assert_eq!(DType::from_c_name(name), Some(d), "{name}");
        }
        assert_eq!(DType::from_c_name("complex int"), None);
    }

    #[test]
    fn f32_buffer_of_odd_length() {
        let b = HostBuffer::from_slice(&[1.0f32, 2.0, 3.0]);
        assert_eq!(b.as_slice::<f32>(), &[1.0, 2.0, 3.0]);
        assert_eq!(b.as_bytes().len(), 12);
    }

    #[test]
    fn a_vec_is_taken_over_and_given_back_without_a_copy() {
        let v = vec![1i64, -2, 3];
        let at = v.as_ptr();
        let b = HostBuffer::from_vec(v);
        assert_eq!(b.as_slice::<i64>().as_ptr(), at);
        assert_eq!(b.held_bytes(), 24);
        let back: Vec<i64> = b.into_vec();
        assert_eq!(back.as_ptr(), at);
        assert_eq!(back, [1, -2, 3]);
    }

    #[test]
    fn a_released_buffer_holds_nothing_until_restored() {
        let mut b = HostBuffer::from_vec(vec![1.0f32; 1000]);
        b.release();
        assert!(b.is_released());
        assert_eq!((b.len(), b.held_bytes(), b.dtype()), (0, 0, DType::F32));
        b.restore();
        assert!(!b.is_released());
        assert_eq!(b.as_slice::<f32>(), vec![0.0f32; 1000]);
    }

    #[test]
    fn zeroed_buffers_of_every_dtype() {
        for d in DType::ALL {
            let b = HostBuffer::zeroed(d, 5);
            assert_eq!((b.dtype(), b.len()), (d, 5));
            assert_eq!(b.as_bytes(), vec![0u8; 5 * d.size()]);
        }
    }
}
